//! Times one patch-and-transform run, natively, on the shared benchmark request.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use plait_patch_and_transform::{PatchAndTransform, bench_input};
use plait_sdk::Function;

fn compose(c: &mut Criterion) {
    let mut group = c.benchmark_group("native");
    for resources in [1, 10, 100] {
        let request = bench_input::request(resources);
        group.bench_with_input(
            BenchmarkId::from_parameter(resources),
            &request,
            |b, request| {
                b.iter_batched(
                    || request.clone(),
                    PatchAndTransform::run,
                    criterion::BatchSize::SmallInput,
                );
            },
        );
    }
    group.finish();
}

criterion_group!(benches, compose);
criterion_main!(benches);
