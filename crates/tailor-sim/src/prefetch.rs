//! A software prefetch: the one `unsafe` of the simulator, written by hand because it is a
//! single instruction (no crate needed for it).
//!
//! Why: at thousands of servers and clients, the state an event touches (its request's record,
//! the server, the coordinator) is no longer in the cache, and the run waits on memory more
//! than it computes. Asking for the next events' state while the current one runs hides part
//! of that wait (`Engine::prefetch_next`).

/// Cache line size of x86-64.
const LINE: usize = 64;

/// Hint the CPU to bring `r`'s first cache line into the cache.
#[inline(always)]
pub fn prefetch<T: ?Sized>(r: &T) {
    prefetch_line((r as *const T).cast());
}

/// Hint the CPU to bring every cache line `r` spans into the cache (a struct that spans several
/// and is read across them, or one that may straddle two).
#[inline(always)]
pub fn prefetch_all<T>(r: &T) {
    prefetch_head(r, size_of::<T>());
}

/// Hint the CPU to bring the first `bytes` of `r` into the cache (the hot part of a struct laid
/// out hot first).
#[inline(always)]
pub fn prefetch_head<T>(r: &T, bytes: usize) {
    let start = (r as *const T).cast::<u8>();
    let bytes = bytes.clamp(1, size_of::<T>().max(1));
    // from the line holding the first byte to the one holding the last
    let lines = ((start as usize % LINE) + bytes).div_ceil(LINE);
    for line in 0..lines {
        prefetch_line(start.wrapping_add(line * LINE));
    }
}

/// Hint the CPU to bring the line at each of `lines` into the cache (addresses a core reports
/// with `footprint`, never read through; nulls skipped).
#[inline(always)]
pub fn prefetch_lines(lines: &[*const u8]) {
    lines.iter().for_each(|&at| prefetch_addr(at));
}

/// Hint the CPU to bring the line at `at` into the cache, unless null.
#[inline(always)]
pub fn prefetch_addr(at: *const u8) {
    if !at.is_null() {
        prefetch_line(at);
    }
}

/// Hint the CPU to bring the line holding `at` into the cache (nothing elsewhere than x86-64).
#[inline(always)]
fn prefetch_line(at: *const u8) {
    // SAFETY: a prefetch is only a hint: it changes no program state and never faults, whatever
    // the address; SSE, its only requirement, is part of every x86-64 CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
