//! The memory allocator [`export_function!`](crate::export_function) installs
//! in a guest, for Rust and for C.
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
//! Memory is cut into 16 KiB chunks: the blocks of a class up to 8 KiB share
//! chunks that hold that class alone, and a larger block is a run of whole
//! chunks. A map of one byte per chunk keeps each chunk's class, so a block
//! can be freed by its address alone, as C's `free` does. That is what makes
//! it safe to be C's allocator too, and it has to be: the component's
//! `cabi_realloc` (Rust's standard library's, over the global allocator)
//! allocates what WASI calls return to wasi-libc, such as directory entry
//! names and the bytes a file read gets, and wasi-libc frees them with
//! `free`. The macro therefore also defines `malloc`, `free` and the rest of
//! wasi-libc's allocation functions, and wasi-libc's dlmalloc is not linked.
//!
//! Freed blocks are reused, so a call needs at most about twice the memory it
//! holds at its peak (the rounding to a power of two) plus a chunk per class
//! in use, never the total it allocated over its life.
//!
//! The first memory it hands out is a 2 MiB arena in the module's own
//! zero-initialised data, part of the initial linear memory, so a typical
//! call never grows memory: each `memory.grow` costs the host an `mprotect`
//! now and another when the slot is reset for the next instance, which was a
//! tenth of a 10-resource patch-and-transform call. Pages of the arena (and
//! of the chunk map) a call does not touch cost nothing; the ones it does
//! are reset like any other.

// An allocator is raw memory management by nature; every block says why it
// is sound.
#![allow(unsafe_code)]

use std::alloc::Layout;

/// Blocks are at least this large: a free block holds the free list's link.
const MIN_CLASS: u32 = 3;
/// The largest class, 2 GiB, bounds what a 32-bit memory can hold.
const MAX_CLASS: u32 = 31;
const CLASSES: usize = (MAX_CLASS - MIN_CLASS + 1) as usize;
/// Memory is handed out in chunks of 16 KiB, a quarter of a WebAssembly
/// page, so that growing memory always adds whole chunks.
const CHUNK_BITS: u32 = 14;
const CHUNK: usize = 1 << CHUNK_BITS;
/// The largest class whose blocks share a chunk; a larger block is a run of
/// whole chunks.
const MAX_SMALL_CLASS: u32 = CHUNK_BITS - 1;
const SMALL_CLASSES: usize = (MAX_SMALL_CLASS - MIN_CLASS + 1) as usize;
/// How many chunks a 32-bit address space holds: the chunk map's length.
const CHUNKS: usize = 1 << (32 - CHUNK_BITS);
/// What C's `malloc` promises to align to: wasi-libc's own malloc gives 16
/// (for SIMD), and C code may count on it.
const C_ALIGN: usize = 16;

/// Where fresh memory comes from.
pub(crate) trait Heap {
    /// Adds at least `bytes` of zeroed memory; returns where it starts and
    /// how long it is, both multiples of `CHUNK`, or `None` when no more can
    /// be had.
    fn grow(&mut self, bytes: usize) -> Option<(usize, usize)>;
}

/// The size class of a layout: blocks of class `k` are `2^k` bytes.
fn class_of(layout: Layout) -> Option<u32> {
    let size = layout.size().max(layout.align()).max(1 << MIN_CLASS);
    let class = size.checked_next_power_of_two()?.trailing_zeros();
    (class <= MAX_CLASS).then_some(class)
}

/// The layout C's allocation functions ask for `size` bytes with.
fn c_layout(size: usize, align: usize) -> Option<Layout> {
    Layout::from_size_align(size, align.max(C_ALIGN)).ok()
}

/// The entry of the chunk holding `address` in the chunk map. On wasm32
/// every address has its own; natively (in tests) addresses 4 GiB apart
/// share one, so a test heap stays within 4 GiB.
fn chunk_of(address: usize) -> usize {
    (address >> CHUNK_BITS) & (CHUNKS - 1)
}

/// The allocator's state over one heap.
pub(crate) struct SizeClasses<H> {
    /// The first free block of each class, or 0; each free block starts with
    /// the address of the next.
    free: [usize; CLASSES],
    /// For each small class, where its next untouched block starts in the
    /// chunk it is filling: a chunk boundary (0 at first) when it has none
    /// left.
    fresh: [usize; SMALL_CLASSES],
    /// The untouched chunks fresh chunks and runs are cut from.
    next: usize,
    end: usize,
    /// The class of the blocks in each chunk, or of the run starting there;
    /// 0 for a chunk that holds no block's start. This is what lets a block
    /// be freed by its address alone, as C's `free` does.
    chunk_class: [u8; CHUNKS],
    heap: H,
}

impl<H: Heap> SizeClasses<H> {
    pub(crate) const fn new(heap: H) -> Self {
        SizeClasses {
            free: [0; CLASSES],
            fresh: [0; SMALL_CLASSES],
            next: 0,
            end: 0,
            chunk_class: [0; CHUNKS],
            heap,
        }
    }

    /// # Safety
    /// The heap hands out memory nothing else uses.
    pub(crate) unsafe fn alloc(&mut self, layout: Layout) -> *mut u8 {
        let Some(class) = class_of(layout) else {
            return std::ptr::null_mut();
        };
        // Blocks are aligned to their size up to a chunk, so any block of
        // the class will do unless the layout asks for more.
        if layout.align() <= CHUNK {
            // SAFETY: forwarded from the caller.
            unsafe {
                if let Some(block) = self.pop(class) {
                    return block;
                }
                if class <= MAX_SMALL_CLASS {
                    return self.fresh_small(class);
                }
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.fresh_run(class, layout.align().max(CHUNK)) }
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

    /// The class of the block starting at `ptr`, if it came from here.
    fn class_at(&self, ptr: *mut u8) -> Option<u32> {
        let class = self.chunk_class[chunk_of(ptr as usize)];
        (class != 0).then_some(u32::from(class))
    }

    /// C's `malloc`, `aligned_alloc` and `calloc`: a block of `size` bytes
    /// aligned to `align` (a power of two), zeroed when asked.
    ///
    /// # Safety
    /// As `alloc`.
    pub(crate) unsafe fn c_alloc(&mut self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        let Some(layout) = c_layout(size, align) else {
            return std::ptr::null_mut();
        };
        // SAFETY: forwarded from the caller; a fresh block of `size` bytes.
        unsafe {
            let block = self.alloc(layout);
            if zeroed && !block.is_null() {
                std::ptr::write_bytes(block, 0, size);
            }
            block
        }
    }

    /// C's `free`: the block's class comes from its chunk. Pointers that
    /// did not come from here (null, or what a zero-length list points
    /// at) are left alone.
    ///
    /// # Safety
    /// `ptr` is not used afterwards.
    pub(crate) unsafe fn c_free(&mut self, ptr: *mut u8) {
        if let Some(class) = self.class_at(ptr) {
            // SAFETY: a block of this class, given up by the caller.
            unsafe { self.push(ptr as usize, class) };
        }
    }

    /// C's `realloc`.
    ///
    /// # Safety
    /// `ptr` is null or a live block, not used afterwards unless returned.
    pub(crate) unsafe fn c_realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            // SAFETY: forwarded from the caller.
            return unsafe { self.c_alloc(new_size, C_ALIGN, false) };
        }
        let Some(class) = self.class_at(ptr) else {
            return std::ptr::null_mut();
        };
        if c_layout(new_size, C_ALIGN).and_then(class_of) == Some(class) {
            return ptr;
        }
        // SAFETY: the old block is `2^class` bytes and distinct from the new.
        unsafe {
            let moved = self.c_alloc(new_size, C_ALIGN, false);
            if !moved.is_null() {
                std::ptr::copy_nonoverlapping(ptr, moved, (1usize << class).min(new_size));
                self.push(ptr as usize, class);
            }
            moved
        }
    }

    /// C's `malloc_usable_size`: the block's whole class.
    pub(crate) fn c_usable_size(&self, ptr: *mut u8) -> usize {
        self.class_at(ptr).map_or(0, |class| 1 << class)
    }

    unsafe fn pop(&mut self, class: u32) -> Option<*mut u8> {
        let list = &mut self.free[(class - MIN_CLASS) as usize];
        let head = *list;
        if head == 0 {
            return None;
        }
        // SAFETY: a free block starts with the link `push` wrote.
        *list = unsafe { *(head as *const usize) };
        Some(head as *mut u8)
    }

    /// An untouched block of a small class: the next one in the chunk the
    /// class is filling, or the first of a new chunk.
    unsafe fn fresh_small(&mut self, class: u32) -> *mut u8 {
        let size = 1usize << class;
        let index = (class - MIN_CLASS) as usize;
        let next = self.fresh[index];
        if !next.is_multiple_of(CHUNK) {
            self.fresh[index] = next + size;
            return next as *mut u8;
        }
        // SAFETY: forwarded from the caller.
        let chunk = unsafe {
            match self.pop(CHUNK_BITS) {
                Some(chunk) => chunk,
                None => self.cut(CHUNK, CHUNK),
            }
        };
        if !chunk.is_null() {
            self.chunk_class[chunk_of(chunk as usize)] = class as u8;
            self.fresh[index] = chunk as usize + size;
        }
        chunk
    }

    /// A block of a class of a chunk or more: a run of untouched chunks
    /// aligned to `align`.
    unsafe fn fresh_run(&mut self, class: u32, align: usize) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        let run = unsafe { self.cut(1 << class, align) };
        if !run.is_null() {
            self.chunk_class[chunk_of(run as usize)] = class as u8;
        }
        run
    }

    /// `size` bytes of untouched chunks at a multiple of `align`; both are
    /// powers of two of at least a chunk.
    unsafe fn cut(&mut self, size: usize, align: usize) -> *mut u8 {
        let fits = |next: usize, end: usize| {
            let start = next.checked_next_multiple_of(align)?;
            (start.checked_add(size)? <= end).then_some(start)
        };
        if fits(self.next, self.end).is_none() {
            // Exactly what is missing: a runtime may trap a grow past the
            // call's memory limit instead of failing it, so growing ahead
            // could stop a call that would have fitted.
            let Some(wanted) = size.checked_add(align - CHUNK) else {
                return std::ptr::null_mut();
            };
            let Some((start, len)) = self.heap.grow(wanted) else {
                return std::ptr::null_mut();
            };
            if start != self.end {
                // The new span does not continue the old one (the arena ran
                // out, or someone else grew the memory in between): the old
                // span is kept as free runs and the new one starts afresh.
                // SAFETY: the span is ours and unused.
                unsafe { self.recycle(self.next, self.end) };
                self.next = start;
            }
            self.end = start + len;
        }
        let Some(start) = fits(self.next, self.end) else {
            return std::ptr::null_mut();
        };
        // SAFETY: the chunks skipped for alignment are ours and unused.
        unsafe { self.recycle(self.next, start) };
        self.next = start + size;
        start as *mut u8
    }

    /// Files the unused chunks `from..to` as free runs, largest first.
    unsafe fn recycle(&mut self, mut from: usize, to: usize) {
        while from < to {
            let class = (to - from).ilog2().min(MAX_CLASS);
            self.chunk_class[chunk_of(from)] = class as u8;
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

    use super::{C_ALIGN, CHUNK, Heap, SizeClasses};

    const PAGE: usize = 65536;
    const ARENA_BYTES: usize = 2 << 20;
    /// wasi-libc's error numbers.
    const EINVAL: i32 = 28;
    const ENOMEM: i32 = 48;

    /// Chunk-aligned, so that it is whole chunks.
    #[repr(C, align(16384))]
    struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

    const _: () = assert!(std::mem::align_of::<Arena>() == CHUNK);

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

    /// The guest's allocator, for Rust and for C; see the module
    /// documentation.
    pub struct CallAllocator(UnsafeCell<SizeClasses<LinearMemory>>);

    impl CallAllocator {
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            CallAllocator(UnsafeCell::new(SizeClasses::new(LinearMemory {
                arena_used: false,
            })))
        }

        #[allow(clippy::mut_from_ref)]
        fn state(&self) -> &mut SizeClasses<LinearMemory> {
            // SAFETY: one thread, and no allocation re-enters the allocator
            // (it calls nothing that allocates), so the state is never
            // borrowed twice.
            unsafe { &mut *self.0.get() }
        }

        /// C's `malloc`.
        ///
        /// # Safety
        /// Called as C calls `malloc`.
        pub unsafe fn malloc(&self, size: usize) -> *mut u8 {
            // SAFETY: the heap is this allocator's alone.
            unsafe { self.state().c_alloc(size, C_ALIGN, false) }
        }

        /// C's `calloc`.
        ///
        /// # Safety
        /// Called as C calls `calloc`.
        pub unsafe fn calloc(&self, count: usize, size: usize) -> *mut u8 {
            let Some(bytes) = count.checked_mul(size) else {
                return std::ptr::null_mut();
            };
            // SAFETY: the heap is this allocator's alone.
            unsafe { self.state().c_alloc(bytes, C_ALIGN, true) }
        }

        /// C's `aligned_alloc`: null when `align` is not a power of two.
        ///
        /// # Safety
        /// Called as C calls `aligned_alloc`.
        pub unsafe fn aligned_alloc(&self, align: usize, size: usize) -> *mut u8 {
            if !align.is_power_of_two() {
                return std::ptr::null_mut();
            }
            // SAFETY: the heap is this allocator's alone.
            unsafe { self.state().c_alloc(size, align, false) }
        }

        /// C's `posix_memalign`.
        ///
        /// # Safety
        /// Called as C calls `posix_memalign`: `out` is writable.
        pub unsafe fn posix_memalign(&self, out: *mut *mut u8, align: usize, size: usize) -> i32 {
            if !align.is_power_of_two() || !align.is_multiple_of(size_of::<usize>()) {
                return EINVAL;
            }
            // SAFETY: the heap is this allocator's alone.
            let block = unsafe { self.state().c_alloc(size, align, false) };
            if block.is_null() {
                return ENOMEM;
            }
            // SAFETY: forwarded from the caller.
            unsafe { *out = block };
            0
        }

        /// C's `realloc`.
        ///
        /// # Safety
        /// Called as C calls `realloc`.
        pub unsafe fn realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
            // SAFETY: forwarded from the caller.
            unsafe { self.state().c_realloc(ptr, size) }
        }

        /// C's `free`.
        ///
        /// # Safety
        /// Called as C calls `free`.
        pub unsafe fn free(&self, ptr: *mut u8) {
            // SAFETY: forwarded from the caller.
            unsafe { self.state().c_free(ptr) }
        }

        /// C's `malloc_usable_size`.
        pub fn usable_size(&self, ptr: *mut u8) -> usize {
            self.state().c_usable_size(ptr)
        }
    }

    // SAFETY: components built for wasm32-wasip2 run one thread; with the
    // atomics feature (threads) this type is not built at all.
    #[cfg(not(target_feature = "atomics"))]
    unsafe impl Sync for CallAllocator {}

    // SAFETY: see `state`.
    unsafe impl GlobalAlloc for CallAllocator {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { self.state().alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            unsafe { self.state().dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            unsafe { self.state().realloc(ptr, layout, new_size) }
        }
    }
}

#[cfg(target_arch = "wasm32")]
pub use wasm::CallAllocator;

/// Installs `CallAllocator` as Rust's global allocator and as C's `malloc`
/// and friends; see [`export_function!`](crate::export_function), which
/// invokes it.
#[doc(hidden)]
#[macro_export]
macro_rules! __install_call_allocator {
    () => {
        #[global_allocator]
        static PLAIT_ALLOCATOR: $crate::allocator::CallAllocator =
            $crate::allocator::CallAllocator::new();

        // wasi-libc's own malloc is not linked when all of its symbols are
        // defined here; one left out would bring it back, and the link
        // would fail on the others, defined twice.
        #[unsafe(no_mangle)]
        unsafe extern "C" fn malloc(size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.malloc(size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn __libc_malloc(size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.malloc(size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.calloc(count, size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn __libc_calloc(count: usize, size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.calloc(count, size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.aligned_alloc(align, size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn posix_memalign(out: *mut *mut u8, align: usize, size: usize) -> i32 {
            unsafe { PLAIT_ALLOCATOR.posix_memalign(out, align, size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn realloc(ptr: *mut u8, size: usize) -> *mut u8 {
            unsafe { PLAIT_ALLOCATOR.realloc(ptr, size) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn free(ptr: *mut u8) {
            unsafe { PLAIT_ALLOCATOR.free(ptr) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn __libc_free(ptr: *mut u8) {
            unsafe { PLAIT_ALLOCATOR.free(ptr) }
        }
        #[unsafe(no_mangle)]
        unsafe extern "C" fn malloc_usable_size(ptr: *mut u8) -> usize {
            PLAIT_ALLOCATOR.usable_size(ptr)
        }
    };
}

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

    /// A block the test holds: `size` bytes filled with `fill`, freed the
    /// way it was allocated.
    struct Live {
        ptr: usize,
        size: usize,
        /// What Rust's allocator was given, or `None` for a block from C's.
        layout: Option<Layout>,
        fill: u8,
    }

    fn check_disjoint_and_intact<H: Heap>(classes: &SizeClasses<H>, live: &[Live]) {
        let mut spans: Vec<(usize, usize)> = live.iter().map(|l| (l.ptr, l.ptr + l.size)).collect();
        spans.sort();
        for pair in spans.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "blocks overlap: {pair:?}");
        }
        for l in live {
            // SAFETY: a live block of this size.
            let bytes = unsafe { std::slice::from_raw_parts(l.ptr as *const u8, l.size) };
            assert!(
                bytes.iter().all(|b| *b == l.fill),
                "a live block was overwritten"
            );
            // What lets C free any block by its address alone.
            let usable = classes.c_usable_size(l.ptr as *mut u8);
            assert!(
                usable >= l.size,
                "{usable} usable bytes in a block of {}",
                l.size
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
    fn random_workloads_of_rust_and_c_calls_keep_blocks_aligned_disjoint_and_intact() {
        for (seed, foreign) in [(1, 0), (2, 0), (3, 1), (4, 3)] {
            let mut rng = Lcg(seed);
            let mut heap = TestHeap::new();
            heap.foreign_pages_before_grow = foreign;
            let mut classes = SizeClasses::new(heap);
            let mut live: Vec<Live> = Vec::new();
            for step in 0..20_000 {
                let fill = (step % 251) as u8;
                match rng.next(10) {
                    0..=4 => {
                        let size = match rng.next(20) {
                            0 => rng.next(50_000),
                            _ => rng.next(300),
                        };
                        let align_bits = if rng.next(50) == 0 { 18 } else { 5 };
                        let align = 1 << rng.next(align_bits);
                        // Rust's allocator, or C's malloc, aligned_alloc or calloc.
                        let (ptr, layout, want_align) = match rng.next(6) {
                            0 => {
                                // SAFETY: the test heap is ours alone.
                                let ptr = unsafe { classes.c_alloc(size, align, false) };
                                (ptr, None, align.max(C_ALIGN))
                            }
                            1 => {
                                // SAFETY: as above.
                                let ptr = unsafe { classes.c_alloc(size, C_ALIGN, true) };
                                // SAFETY: a fresh block of this size.
                                let bytes = unsafe { std::slice::from_raw_parts(ptr, size) };
                                assert!(bytes.iter().all(|b| *b == 0), "calloc did not zero");
                                (ptr, None, C_ALIGN)
                            }
                            _ => {
                                let layout = Layout::from_size_align(size, align).unwrap();
                                // SAFETY: as above.
                                (unsafe { classes.alloc(layout) }, Some(layout), align)
                            }
                        };
                        assert!(!ptr.is_null(), "seed {seed} step {step}: out of memory");
                        assert_eq!(ptr as usize % want_align, 0, "misaligned: {size} bytes");
                        // SAFETY: a fresh block of this size.
                        unsafe { std::ptr::write_bytes(ptr, fill, size) };
                        live.push(Live {
                            ptr: ptr as usize,
                            size,
                            layout,
                            fill,
                        });
                    }
                    5..=7 if !live.is_empty() => {
                        let l = live.swap_remove(rng.next(live.len()));
                        // A block from Rust's allocator freed by C's `free`
                        // is what wasi-libc does with WASI's results.
                        match l.layout {
                            // SAFETY: allocated above with this layout.
                            Some(layout) if rng.next(2) == 0 => unsafe {
                                classes.dealloc(l.ptr as *mut u8, layout)
                            },
                            // SAFETY: allocated above.
                            _ => unsafe { classes.c_free(l.ptr as *mut u8) },
                        }
                    }
                    _ if !live.is_empty() => {
                        let i = rng.next(live.len());
                        let new_size = rng.next(2 * live[i].size + 64);
                        let l = &mut live[i];
                        let (ptr, layout) = match l.layout {
                            Some(layout) if rng.next(2) == 0 => {
                                // SAFETY: allocated above with this layout.
                                let ptr =
                                    unsafe { classes.realloc(l.ptr as *mut u8, layout, new_size) };
                                let layout =
                                    Layout::from_size_align(new_size, layout.align()).unwrap();
                                (ptr, Some(layout))
                            }
                            // SAFETY: allocated above.
                            _ => (
                                unsafe { classes.c_realloc(l.ptr as *mut u8, new_size) },
                                None,
                            ),
                        };
                        assert!(!ptr.is_null());
                        let want_align = layout.map_or(C_ALIGN, |layout| layout.align());
                        assert_eq!(ptr as usize % want_align, 0);
                        // SAFETY: the kept prefix is intact; the rest is ours.
                        let kept = unsafe { std::slice::from_raw_parts(ptr, l.size.min(new_size)) };
                        assert!(kept.iter().all(|b| *b == l.fill), "realloc lost data");
                        unsafe { std::ptr::write_bytes(ptr, l.fill, new_size) };
                        *l = Live {
                            ptr: ptr as usize,
                            size: new_size,
                            layout,
                            fill: l.fill,
                        };
                    }
                    _ => {}
                }
                if step % 1000 == 0 {
                    check_disjoint_and_intact(&classes, &live);
                }
            }
            check_disjoint_and_intact(&classes, &live);
        }
    }

    #[test]
    fn c_calls_leave_memory_that_did_not_come_from_the_allocator_alone() {
        let mut classes = SizeClasses::new(TestHeap::new());
        let layout = Layout::from_size_align(100, 8).unwrap();
        // SAFETY: the test heap is ours alone.
        let ours = unsafe { classes.alloc(layout) };
        // Memory of the region that was never handed out, what a
        // zero-length list points at, and null.
        let never_handed_out = (classes.heap.base as usize + REGION - CHUNK) as *mut u8;
        for foreign in [
            never_handed_out,
            std::ptr::dangling_mut(),
            std::ptr::null_mut(),
        ] {
            assert_eq!(classes.c_usable_size(foreign), 0, "{foreign:?}");
            // SAFETY: foreign memory is left alone, which is what is tested.
            unsafe { classes.c_free(foreign) };
            if !foreign.is_null() {
                // SAFETY: as above.
                assert!(unsafe { classes.c_realloc(foreign, 10) }.is_null());
            }
        }
        // SAFETY: the test heap is ours alone.
        let next = unsafe { classes.alloc(layout) };
        assert_ne!(next, ours, "a live block was handed out again");
        // SAFETY: the region is ours; nothing was written to it.
        let untouched = unsafe { std::slice::from_raw_parts(never_handed_out, CHUNK) };
        assert!(untouched.iter().all(|b| *b == 0));
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
        let big = Layout::from_size_align(REGION + 1, 8).unwrap();
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
