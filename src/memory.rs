//! Memory the machine has, and what happens when it runs out. `--max-memory` asks for a
//! budget; more than the machine's memory and swap together cannot be had, so the budget is
//! never more than that (`budget_mib`), and the decoders refuse an image over it before
//! allocating. An allocation that fails all the same (a system short of memory) ends the
//! command with one line naming the input, its temporary files removed, instead of an abort
//! (`ReportingAllocator`, which the `gblur` binary installs).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// The machine's memory and swap, in MiB (`/proc/meminfo`); None where it cannot be read.
pub fn machine_mib() -> Option<u64> {
    static MACHINE: OnceLock<Option<u64>> = OnceLock::new();
    *MACHINE.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let kib = |key: &str| -> Option<u64> {
            let line = text.lines().find(|l| l.starts_with(key))?;
            line.split_whitespace().nth(1)?.parse().ok()
        };
        Some((kib("MemTotal:")? + kib("SwapTotal:").unwrap_or(0)) / 1024)
    })
}

/// The default `--max-memory`, in MiB.
pub const DEFAULT_BUDGET_MIB: u64 = 512;

/// The budget a job gets for `--max-memory requested`: no more than the machine has.
pub fn budget_mib(requested: u64) -> u64 {
    machine_mib().map_or(requested, |m| requested.min(m))
}

/// The least a budget keeps back beyond what is counted (`margin`).
const MARGIN_FLOOR: u64 = 3 << 20;

/// What a budget of `budget` bytes keeps back beyond what is counted: a twentieth, for what
/// the allocator holds on to between allocations, and at least 3 MiB, for the process's own
/// resident pages (code and libraries touched later), which differ by a MiB or two from one
/// run to the next.
pub fn margin(budget: u64) -> u64 {
    (budget / 20).max(MARGIN_FLOOR)
}

/// How much the process's resident memory at the same point of the same job differs from one
/// run to the next (which pages of the binary, its libraries and the threads' stacks were
/// touched): measured under a MiB on the 2-core machine.
const RESIDENT_DRIFT: u64 = 1 << 20;

/// The least budget, in MiB, that leaves `needed` bytes (the resident memory measured
/// among them) after its `margin`, in this run and the next: a job refused below it runs at
/// it.
pub fn least_budget_mib(needed: u64) -> u64 {
    let needed = needed + RESIDENT_DRIFT;
    // budget - max(budget / 20, floor) >= needed, so budget >= needed * 20 / 19 and
    // budget >= needed + floor.
    (needed * 20)
        .div_ceil(19)
        .max(needed + MARGIN_FLOOR)
        .div_ceil(1 << 20)
}

/// The process's resident memory in bytes (Linux: /proc/self/statm); 0 where it cannot be
/// read.
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(0) as u64
}

/// What `--max-memory max_memory_mib` leaves for new blocks beside the process as it stands
/// (`resident_bytes`) and the budget's `margin`, in bytes.
pub fn room_bytes(max_memory_mib: u64) -> u64 {
    let budget = max_memory_mib.saturating_mul(1 << 20);
    budget
        .saturating_sub(margin(budget))
        .saturating_sub(resident_bytes())
}

/// Makes the C library's allocator (glibc's malloc) give every block of 128 KiB or more its
/// own mapping, returned to the system when it is freed, for the rest of the process. By
/// default glibc raises that threshold after the first large block is freed, and later blocks
/// of a few MiB (a JPEG encoder's stripes, the strip engine's pieces) then stay resident in
/// per-thread arenas after they are freed: up to 6 MiB more than the blocks alive, by chance
/// of which thread freed what. A budget counted in resident memory needs what is freed to
/// leave. The gblur command calls this first thing; a program that uses the library keeps
/// its own allocator's settings.
pub fn return_freed_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a setting of the allocator; it is safe at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// How an error over the budget of `limit_mib` tells the user to go on.
pub fn limit_hint(limit_mib: u64) -> &'static str {
    match machine_mib() {
        Some(m) if limit_mib >= m => "the machine's memory and swap",
        _ => "raise it with --max-memory",
    }
}

/// What the command is working on, for the message should memory run out.
static SUBJECT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Names the input the command works on, for an out-of-memory message.
pub fn set_subject(path: &std::path::Path) {
    if let Ok(mut s) = SUBJECT.lock() {
        *s = Some(path.to_path_buf());
    }
}

/// The system allocator, but for what happens when it fails: one line on stderr (`gblur:
/// INPUT: out of memory: ...`), the temporary files being written removed, exit 1.
pub struct ReportingAllocator;

// SAFETY: every call goes to the system allocator with the same arguments; only its failure
// is handled differently, by ending the process without unwinding, and a large block is
// advised into huge pages, which changes how it is backed, not what it holds.
unsafe impl GlobalAlloc for ReportingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        advise_large(p, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            out_of_memory(layout.size());
        }
        advise_large(p, layout.size());
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            out_of_memory(new_size);
        }
        advise_large(p, new_size);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Blocks from this size up are asked for in huge pages (`advise_huge_pages`).
const HUGE_FROM: usize = 2 << 20;

/// Whether large blocks are asked for in huge pages: yes, except while the strip engine runs,
/// whose budget counts resident memory to the MiB (a huge page makes a block partly written
/// wholly resident) and whose buffers are small.
static HUGE_PAGES: AtomicBool = AtomicBool::new(true);

/// Turns the huge-page advice for large blocks on or off (`HUGE_PAGES`).
pub fn use_huge_pages(on: bool) {
    HUGE_PAGES.store(on, Ordering::Relaxed);
}

/// `advise_huge_pages` for a block the allocator hands out, where it is large: images, planes
/// and the blur's scratch are, and a decoder's or encoder's fresh buffer is written whole.
fn advise_large(ptr: *mut u8, len: usize) {
    if len >= HUGE_FROM && HUGE_PAGES.load(Ordering::Relaxed) {
        advise_huge_pages(ptr, len);
    }
}

/// Asks the kernel to back `ptr .. ptr + len` with transparent huge pages. On Linux with THP in
/// `madvise` mode (Debian's default) a large buffer otherwise takes one page fault per 4 KiB it
/// first writes, and a pass down an image's columns one TLB miss per row it steps: on a busy
/// 2-core VM the faults alone made a 16 MP blur's time vary by half. Advice the kernel refuses
/// leaves small pages; elsewhere it does nothing.
#[cfg(target_os = "linux")]
pub(crate) fn advise_huge_pages(ptr: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    let (start, end) = (
        (ptr as usize).next_multiple_of(PAGE),
        (ptr as usize + len) & !(PAGE - 1),
    );
    if end > start {
        // SAFETY: the range lies inside the caller's own allocation; MADV_HUGEPAGE changes how
        // its pages are backed, not their contents, and a refusal is harmless.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_huge_pages(_ptr: *mut u8, _len: usize) {}

/// `n` copies of `value` in a new buffer asked for in huge pages, for the library's own large
/// scratch (a program that uses the library keeps its own allocator). Written on every core:
/// the first touch of a large buffer's pages is most of its cost, and on one thread it is a
/// serial step before the passes (on 16 threads the blur's allocations and their first touch
/// took 2.0 ms of a 12.8 ms blur of 12 MP RGB8 when written on one thread).
pub(crate) fn huge_vec<T: Clone + Send + Sync>(n: usize, value: T) -> Vec<T> {
    use rayon::prelude::*;
    let mut v: Vec<T> = Vec::with_capacity(n);
    if HUGE_PAGES.load(Ordering::Relaxed) {
        advise_huge_pages(v.as_mut_ptr().cast(), n * std::mem::size_of::<T>());
    }
    let per_item = ((1 << 18) / std::mem::size_of::<T>().max(1)).max(1);
    v.spare_capacity_mut()
        .par_chunks_mut(per_item)
        .for_each(|part| {
            for slot in part {
                slot.write(value.clone());
            }
        });
    // SAFETY: the loop above wrote every one of the `n` elements.
    unsafe { v.set_len(n) };
    v
}

/// A scratch buffer kept from one call to the next, up to a size (`keep_scratch`).
pub(crate) struct Kept(Mutex<KeptSlot>);

/// The limit and the buffer kept, under one lock: a buffer handed back while the limit
/// changes is kept only where the new limit allows it.
struct KeptSlot {
    /// The most bytes kept; 0 keeps none.
    up_to: usize,
    /// The buffer the last call handed back, and its size in bytes.
    block: Option<(Box<dyn std::any::Any + Send>, usize)>,
}

impl Kept {
    pub(crate) const fn new() -> Self {
        Kept(Mutex::new(KeptSlot {
            up_to: 0,
            block: None,
        }))
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, KeptSlot> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps buffers of up to `max_bytes` from now on, and frees a kept one larger than that
    /// (0 frees it whatever its size).
    pub(crate) fn keep_up_to(&self, max_bytes: usize) {
        let mut slot = self.slot();
        slot.up_to = max_bytes;
        if slot
            .block
            .as_ref()
            .is_some_and(|(_, bytes)| *bytes > max_bytes)
        {
            slot.block = None;
        }
    }

    /// A buffer of at least `n` elements: the one kept where it is of this type and large
    /// enough (holding whatever the last call left: the caller writes before it reads), else
    /// `huge_vec(n, value)`.
    pub(crate) fn take<T: Clone + Send + Sync + 'static>(&self, n: usize, value: T) -> Vec<T> {
        let kept = {
            let mut slot = self.slot();
            match slot.block.take() {
                Some((block, bytes)) => match block.downcast::<Vec<T>>() {
                    Ok(v) if v.len() >= n => Some(*v),
                    Ok(v) => {
                        slot.block = Some((v, bytes));
                        None
                    }
                    Err(other) => {
                        slot.block = Some((other, bytes));
                        None
                    }
                },
                None => None,
            }
        };
        kept.unwrap_or_else(|| huge_vec(n, value))
    }

    /// Keeps `buffer` for the next `take` where it fits the limit and is larger than the one
    /// kept (or of another type); else frees it.
    pub(crate) fn give_back<T: Send + 'static>(&self, buffer: Vec<T>) {
        let bytes = std::mem::size_of_val(buffer.as_slice());
        let mut slot = self.slot();
        if bytes == 0 || bytes > slot.up_to {
            return;
        }
        let kept = slot
            .block
            .as_ref()
            .and_then(|(k, _)| k.downcast_ref::<Vec<T>>());
        if kept.is_none_or(|k| buffer.len() > k.len()) {
            slot.block = Some((Box::new(buffer), bytes));
        }
    }
}

/// The scratch `Gaussian::blur_interleaved(_into)` keep between calls (`keep_scratch`).
static SCRATCH: Kept = Kept::new();

thread_local! {
    /// Where this thread's blur takes its scratch from and hands it back to, while a call
    /// that keeps scratch runs on it (`keeping_in`); None: fresh scratch, freed after.
    static KEEPER: std::cell::Cell<Option<&'static Kept>> = const { std::cell::Cell::new(None) };
}

/// Keeps the scratch of `Gaussian::blur_interleaved(_into)` up to `max_bytes` between calls
/// (`gblur::keep_scratch`).
pub fn keep_scratch(max_bytes: usize) {
    SCRATCH.keep_up_to(max_bytes);
}

/// Runs `work` with this thread's blur taking its scratch from `kept` and handing it back
/// there (`scratch_vec`, `give_back_scratch`). The blur takes and hands back its scratch on
/// the thread that calls it, so a call scoped here keeps scratch and a job on a file, whose
/// memory budget counts resident memory, never does.
pub(crate) fn keeping_in<R>(kept: &'static Kept, work: impl FnOnce() -> R) -> R {
    struct Restore(Option<&'static Kept>);
    impl Drop for Restore {
        fn drop(&mut self) {
            KEEPER.set(self.0);
        }
    }
    let _restore = Restore(KEEPER.replace(Some(kept)));
    work()
}

/// `keeping_in` the scratch `keep_scratch` sets the size of.
pub fn keeping_scratch<R>(work: impl FnOnce() -> R) -> R {
    keeping_in(&SCRATCH, work)
}

/// A scratch buffer of at least `n` elements: the kept one where this thread's call keeps
/// scratch (`keeping_in`, `Kept::take`), else `huge_vec(n, value)`.
pub(crate) fn scratch_vec<T: Clone + Send + Sync + 'static>(n: usize, value: T) -> Vec<T> {
    match KEEPER.get() {
        Some(kept) => kept.take(n, value),
        None => huge_vec(n, value),
    }
}

/// Hands `buffer` back where this thread's call keeps scratch (`Kept::give_back`); else
/// frees it.
pub(crate) fn give_back_scratch<T: Send + 'static>(buffer: Vec<T>) {
    if let Some(kept) = KEEPER.get() {
        kept.give_back(buffer);
    }
}

/// Writes `value` over the first sample of every page of `dst` (which the caller overwrites
/// next), the pages dealt out over the threads by the 2 MiB a huge page covers. An output fresh
/// from its allocator (a new numpy array) has no pages yet: the blur writes each band of rows
/// with every thread at once, and the threads then wait in turn on the same fault, the kernel
/// zeroing a page for one of them. Mapped here first, they fault on every core at once; pages
/// already mapped cost a store each (on 16 Xeon threads, `blur_image` of 12 MP RGB8 into a
/// new array 11.9 against 13.0 ms, `gaussian_filter` of f32 8192² 36.3 against 44.8: see
/// docs/BENCHMARKS.md). Outputs under two huge pages, and one thread, gain nothing from it.
pub(crate) fn map_pages_in_parallel<T: Copy + Send + Sync>(dst: &mut [T], value: T) {
    use rayon::prelude::*;
    const PAGE: usize = 4096;
    if std::mem::size_of_val(dst) < 2 * HUGE_FROM || rayon::current_num_threads() == 1 {
        return;
    }
    let size = std::mem::size_of::<T>().max(1);
    let per_page = (PAGE / size).max(1);
    dst.par_chunks_mut((HUGE_FROM / size).max(1))
        .for_each(|part| {
            for at in (0..part.len()).step_by(per_page) {
                // SAFETY: `at` is inside `part`; volatile, so that the store is made although
                // the caller overwrites the sample.
                unsafe { std::ptr::write_volatile(part.as_mut_ptr().add(at), value) };
            }
        });
}

/// A message written into a fixed buffer: nothing may be allocated once memory ran out.
struct Line {
    buf: [u8; 1024],
    len: usize,
}

impl std::fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

fn out_of_memory(size: usize) -> ! {
    use std::fmt::Write as _;
    let mut line = Line {
        buf: [0; 1024],
        len: 0,
    };
    let _ = line.write_str("gblur: ");
    if let Ok(subject) = SUBJECT.try_lock() {
        if let Some(path) = subject.as_ref() {
            let _ = write!(line, "{}: ", path.display());
        }
    }
    let _ = write!(
        line,
        "out of memory: the system refused {} MiB (lower --max-memory, or free memory)",
        size.div_ceil(1 << 20)
    );
    // A newline in a file name stays inside the one line.
    for b in &mut line.buf[..line.len] {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    let _ = line.write_str("\n");
    crate::interrupt::remove_temp_files();
    // SAFETY: writing bytes we own to fd 2, then ending the process without running anything
    // that might allocate.
    unsafe {
        libc::write(2, line.buf.as_ptr().cast(), line.len);
        libc::_exit(1)
    }
}
