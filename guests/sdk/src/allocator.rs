//! The memory allocator [`export_function!`](crate::export_function) installs
//! in a guest.
//!
//! plait instantiates a function afresh for every call and throws the
//! instance away afterwards, so a guest's allocator never lives long enough
//! for fragmentation to build up, and never needs to hand memory back. This
//! one keeps a free list per power-of-two size class: allocating pops a list
//! or bumps a pointer, freeing pushes, and growing within a class is free.
//! It does a few instructions where a general-purpose allocator (wasi-libc's
//! dlmalloc) splits, coalesces and searches bins, which made allocation a
//! sixth of a patch-and-transform call.
//!
//! Freed blocks are reused, so a call needs at most about twice the memory it
//! holds at its peak (the rounding to a power of two), never the total it
//! allocated over its life.
//!
//! The first memory it hands out is a 2 MiB arena in the module's own
//! zero-initialised data, part of the initial linear memory, so a typical
//! call never grows memory: each `memory.grow` costs the host an `mprotect`
//! now and another when the slot is reset for the next instance, which was a
//! tenth of a 10-resource patch-and-transform call. Pages of the arena a
//! call does not touch cost nothing; the ones it does are reset like any
//! other.

// An allocator is raw memory management by nature; every block says why it
// is sound.
#![allow(unsafe_code)]

use std::alloc::Layout;

/// Blocks are at least this large: a free block holds the free list's link.
const MIN_CLASS: u32 = 3;
/// The largest class, 2 GiB, bounds what a 32-bit memory can hold.
const MAX_CLASS: u32 = 31;
const CLASSES: usize = (MAX_CLASS - MIN_CLASS + 1) as usize;
/// Blocks are aligned to their size up to a page; larger blocks only to a
/// page, so a big block never wastes a big gap.
const MAX_NATURAL_ALIGN: usize = 4096;

/// Where fresh memory comes from.
pub(crate) trait Heap {
    /// Adds at least `bytes` of zeroed memory; returns where it starts and
    /// how long it is, or `None` when no more can be had.
    fn grow(&mut self, bytes: usize) -> Option<(usize, usize)>;
}

/// The size class of a layout: blocks of class `k` are `2^k` bytes.
fn class_of(layout: Layout) -> Option<u32> {
    let size = layout.size().max(layout.align()).max(1 << MIN_CLASS);
    let class = size.checked_next_power_of_two()?.trailing_zeros();
    (class <= MAX_CLASS).then_some(class)
}

/// The allocator's state over one heap.
pub(crate) struct SizeClasses<H> {
    /// The first free block of each class, or 0; each free block starts with
    /// the address of the next.
    free: [usize; CLASSES],
    /// The untouched span fresh blocks are cut from.
    next: usize,
    end: usize,
    heap: H,
}

impl<H: Heap> SizeClasses<H> {
    pub(crate) const fn new(heap: H) -> Self {
        SizeClasses {
            free: [0; CLASSES],
            next: 0,
            end: 0,
            heap,
        }
    }

    /// # Safety
    /// The heap hands out memory nothing else uses.
    pub(crate) unsafe fn alloc(&mut self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return std::ptr::null_mut();
        };
        let size = 1usize << class;
        let align = size.min(MAX_NATURAL_ALIGN).max(layout.align());
        if layout.align() <= MAX_NATURAL_ALIGN {
            let head = self.free[(class - MIN_CLASS) as usize];
            if head != 0 {
                // SAFETY: a free block starts with the link `push` wrote.
                self.free[(class - MIN_CLASS) as usize] = unsafe { *(head as *const usize) };
                return head as *mut u8;
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.cut(size, align) }
    }

    /// # Safety
    /// `ptr` came from `alloc` with `layout` and is not used afterwards.
    pub(crate) unsafe fn dealloc(&mut self, ptr: *mut u8, layout: Layout) {
        if let Some(class) = class_of(layout) {
            // SAFETY: forwarded from the caller.
            unsafe { self.push(ptr as usize, class) };
        }
    }

    /// # Safety
    /// As `GlobalAlloc::realloc`.
    pub(crate) unsafe fn realloc(
        &mut self,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
    ) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return std::ptr::null_mut();
        };
        if class_of(new_layout) == class_of(layout) {
            return ptr;
        }
        // SAFETY: forwarded from the caller; the two blocks are distinct.
        unsafe {
            let moved = self.alloc(new_layout);
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            moved
        }
    }

    /// A fresh block of `size` bytes at a multiple of `align`.
    unsafe fn cut(&mut self, size: usize, align: usize) -> *mut u8 {
        let fits = |next: usize, end: usize| {
            let start = next.checked_next_multiple_of(align)?;
            (start.checked_add(size)? <= end).then_some(start)
        };
        if fits(self.next, self.end).is_none() {
            // Exactly what is missing: a runtime may trap a grow past the
            // call's memory limit instead of failing it, so growing ahead
            // could stop a call that would have fitted.
            let wanted = size + align;
            let Some((start, len)) = self.heap.grow(wanted) else {
                return std::ptr::null_mut();
            };
            if start != self.end {
                // The new span does not continue the old one (the arena ran
                // out, or someone else grew the memory in between): the old
                // span is kept as free blocks and the new one starts afresh.
                // SAFETY: the span is ours and unused.
                unsafe { self.recycle(self.next, self.end) };
                self.next = start;
            }
            self.end = start + len;
        }
        let Some(start) = fits(self.next, self.end) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the span skipped for alignment is ours and unused.
        unsafe { self.recycle(self.next, start) };
        self.next = start + size;
        start as *mut u8
    }

    /// Files the unused span `from..to` as free blocks, largest first, each
    /// aligned to its size.
    unsafe fn recycle(&mut self, mut from: usize, to: usize) {
        from = from.next_multiple_of(1 << MIN_CLASS);
        while from < to {
            let mut class = from.trailing_zeros().min(MAX_CLASS);
            while class > MIN_CLASS && from + (1 << class) > to {
                class -= 1;
            }
            if from + (1 << class) > to {
                break;
            }
            // SAFETY: forwarded from the caller.
            unsafe { self.push(from, class) };
            from += 1 << class;
        }
    }

    unsafe fn push(&mut self, block: usize, class: u32) {
        let list = &mut self.free[(class - MIN_CLASS) as usize];
        // SAFETY: the block is at least a pointer wide and ours.
        unsafe { *(block as *mut usize) = *list };
        *list = block;
    }
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use std::alloc::{GlobalAlloc, Layout};
    use std::cell::UnsafeCell;

    use super::{Heap, SizeClasses};

    const PAGE: usize = 65536;
    const ARENA_BYTES: usize = 2 << 20;

    /// Page-aligned so the arena's blocks get their natural alignment.
    #[repr(C, align(4096))]
    struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

    // SAFETY: one thread (see `CallAllocator`); only `LinearMemory` takes
    // its address, once.
    #[cfg(not(target_feature = "atomics"))]
    unsafe impl Sync for Arena {}

    static ARENA: Arena = Arena(UnsafeCell::new([0; ARENA_BYTES]));

    /// The arena, then linear memory 0 grown page by page.
    pub struct LinearMemory {
        arena_used: bool,
    }

    impl Heap for LinearMemory {
        fn grow(&mut self, bytes: usize) -> Option<(usize, usize)> {
            if !self.arena_used && bytes <= ARENA_BYTES {
                self.arena_used = true;
                return Some((ARENA.0.get() as usize, ARENA_BYTES));
            }
            let pages = bytes.div_ceil(PAGE);
            let previous = core::arch::wasm32::memory_grow(0, pages);
            (previous != usize::MAX).then(|| (previous * PAGE, pages * PAGE))
        }
    }

    /// The guest's global allocator; see the module documentation.
    pub struct CallAllocator(UnsafeCell<SizeClasses<LinearMemory>>);

    impl CallAllocator {
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            CallAllocator(UnsafeCell::new(SizeClasses::new(LinearMemory {
                arena_used: false,
            })))
        }
    }

    // SAFETY: components built for wasm32-wasip2 run one thread; with the
    // atomics feature (threads) this type is not built at all.
    #[cfg(not(target_feature = "atomics"))]
    unsafe impl Sync for CallAllocator {}

    // SAFETY: one thread, and no allocation re-enters the allocator, so the
    // state is never borrowed twice.
    unsafe impl GlobalAlloc for CallAllocator {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { (*self.0.get()).alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { (*self.0.get()).dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            unsafe { (*self.0.get()).realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use wasm::CallAllocator;

#[cfg(test)]
mod tests {
    use super::*;

    const REGION: usize = 256 << 20;
    const PAGE: usize = 65536;

    /// A region of host memory handed out page by page, like linear memory.
    struct TestHeap {
        base: *mut u8,
        used: usize,
        /// Grows taken by "someone else" before the next one.
        foreign_pages_before_grow: usize,
    }

    impl TestHeap {
        fn new() -> Self {
            let layout = Layout::from_size_align(REGION, PAGE).unwrap();
            // SAFETY: the layout is non-zero.
            let base = unsafe { std::alloc::alloc_zeroed(layout) };
            assert!(!base.is_null());
            TestHeap {
                base,
                used: 0,
                foreign_pages_before_grow: 0,
            }
        }
    }

    impl Drop for TestHeap {
        fn drop(&mut self) {
            let layout = Layout::from_size_align(REGION, PAGE).unwrap();
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.base, layout) };
        }
    }

    impl Heap for TestHeap {
        fn grow(&mut self, bytes: usize) -> Option<(usize, usize)> {
            self.used += self.foreign_pages_before_grow * PAGE;
            let len = bytes.div_ceil(PAGE) * PAGE;
            if self.used + len > REGION {
                return None;
            }
            let start = self.base as usize + self.used;
            self.used += len;
            Some((start, len))
        }
    }

    /// A tiny deterministic generator, so failures reproduce.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, below: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % below
        }
    }

    struct Live {
        ptr: usize,
        layout: Layout,
        fill: u8,
    }

    fn check_disjoint_and_intact(live: &[Live]) {
        let mut spans: Vec<(usize, usize)> = live
            .iter()
            .map(|l| (l.ptr, l.ptr + l.layout.size()))
            .collect();
        spans.sort();
        for pair in spans.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "blocks overlap: {pair:?}");
        }
        for l in live {
            // SAFETY: a live block of this size.
            let bytes = unsafe { std::slice::from_raw_parts(l.ptr as *const u8, l.layout.size()) };
            assert!(
                bytes.iter().all(|b| *b == l.fill),
                "a live block was overwritten"
            );
        }
    }

    #[test]
    fn size_classes_round_up_to_a_power_of_two_at_least_a_pointer_wide() {
        let cases = [
            (0, 1, 3),
            (1, 1, 3),
            (8, 8, 3),
            (9, 1, 4),
            (24, 8, 5),
            (100, 128, 7),
            (4096, 8, 12),
            (4097, 8, 13),
            (1 << 31, 1, 31),
        ];
        for (size, align, class) in cases {
            let layout = Layout::from_size_align(size, align).unwrap();
            assert_eq!(class_of(layout), Some(class), "size {size} align {align}");
        }
        let too_big = Layout::from_size_align((1 << 31) + 1, 1).unwrap();
        assert_eq!(class_of(too_big), None);
    }

    #[test]
    fn random_workloads_keep_blocks_aligned_disjoint_and_intact() {
        for (seed, foreign) in [(1, 0), (2, 0), (3, 1), (4, 3)] {
            let mut rng = Lcg(seed);
            let mut heap = TestHeap::new();
            heap.foreign_pages_before_grow = foreign;
            let mut classes = SizeClasses::new(heap);
            let mut live: Vec<Live> = Vec::new();
            for step in 0..20_000 {
                match rng.next(10) {
                    0..=4 => {
                        let size = match rng.next(20) {
                            0 => rng.next(50_000),
                            _ => rng.next(300),
                        };
                        let align_bits = if rng.next(50) == 0 { 14 } else { 5 };
                        let align = 1 << rng.next(align_bits);
                        let layout = Layout::from_size_align(size, align).unwrap();
                        // SAFETY: the test heap is ours alone.
                        let ptr = unsafe { classes.alloc(layout) };
                        assert!(!ptr.is_null(), "seed {seed} step {step}: out of memory");
                        assert_eq!(ptr as usize % align, 0, "misaligned for {layout:?}");
                        let fill = (step % 251) as u8;
                        // SAFETY: a fresh block of this size.
                        unsafe { std::ptr::write_bytes(ptr, fill, size) };
                        live.push(Live {
                            ptr: ptr as usize,
                            layout,
                            fill,
                        });
                    }
                    5..=7 if !live.is_empty() => {
                        let l = live.swap_remove(rng.next(live.len()));
                        // SAFETY: allocated above with this layout.
                        unsafe { classes.dealloc(l.ptr as *mut u8, l.layout) };
                    }
                    _ if !live.is_empty() => {
                        let i = rng.next(live.len());
                        let new_size = rng.next(2 * live[i].layout.size() + 64);
                        let l = &mut live[i];
                        // SAFETY: allocated above with this layout.
                        let ptr = unsafe { classes.realloc(l.ptr as *mut u8, l.layout, new_size) };
                        assert!(!ptr.is_null());
                        assert_eq!(ptr as usize % l.layout.align(), 0);
                        // SAFETY: the kept prefix is intact; the rest is ours.
                        let kept = unsafe {
                            std::slice::from_raw_parts(ptr, l.layout.size().min(new_size))
                        };
                        assert!(kept.iter().all(|b| *b == l.fill), "realloc lost data");
                        unsafe { std::ptr::write_bytes(ptr, l.fill, new_size) };
                        l.ptr = ptr as usize;
                        l.layout = Layout::from_size_align(new_size, l.layout.align()).unwrap();
                    }
                    _ => {}
                }
                if step % 1000 == 0 {
                    check_disjoint_and_intact(&live);
                }
            }
            check_disjoint_and_intact(&live);
        }
    }

    #[test]
    fn freed_blocks_are_reused_so_memory_tracks_the_peak_not_the_total() {
        let mut classes = SizeClasses::new(TestHeap::new());
        // 100 MiB allocated in total, never more than 1 MiB live.
        for _ in 0..100 {
            let blocks: Vec<(*mut u8, Layout)> = (0..1024)
                .map(|i| {
                    let layout = Layout::from_size_align(512 + i % 512, 8).unwrap();
                    // SAFETY: the test heap is ours alone.
                    (unsafe { classes.alloc(layout) }, layout)
                })
                .collect();
            for (ptr, layout) in blocks {
                assert!(!ptr.is_null());
                // SAFETY: allocated above with this layout.
                unsafe { classes.dealloc(ptr, layout) };
            }
        }
        assert!(
            classes.heap.used <= 2 << 20,
            "{} bytes grown for 1 MiB live",
            classes.heap.used
        );
    }

    #[test]
    fn growing_within_a_class_keeps_the_block() {
        let mut classes = SizeClasses::new(TestHeap::new());
        let layout = Layout::from_size_align(40, 8).unwrap();
        // SAFETY: the test heap is ours alone.
        unsafe {
            let ptr = classes.alloc(layout);
            assert_eq!(classes.realloc(ptr, layout, 64), ptr);
            let moved = classes.realloc(ptr, Layout::from_size_align(64, 8).unwrap(), 65);
            assert_ne!(moved, ptr);
        }
    }

    #[test]
    fn an_exhausted_heap_fails_the_allocation_instead_of_overlapping() {
        let mut classes = SizeClasses::new(TestHeap::new());
        let big = Layout::from_size_align(REGION / 2 + 1, 8).unwrap();
        // SAFETY: the test heap is ours alone.
        unsafe {
            assert!(
                classes.alloc(big).is_null(),
                "a class twice the region cannot fit"
            );
            let half = Layout::from_size_align(REGION / 4, 8).unwrap();
            assert!(!classes.alloc(half).is_null());
        }
    }
}
