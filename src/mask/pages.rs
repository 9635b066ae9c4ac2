//! The large buffers the mask passes write whole (an RGBA copy, weighted planes), asked for in
//! transparent huge pages: on Linux with THP in `madvise` mode a new buffer otherwise takes one
//! page fault per 4 KiB written (16 384 for 64 MiB), and on a busy VM those faults cost more
//! than the copy itself. Where the kernel grants no huge pages the advice does nothing.

use rayon::prelude::*;

/// `n` default values in a new buffer asked for in huge pages, written in parallel.
pub fn filled<T: Copy + Default + Send + Sync>(n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    crate::memory::advise_huge_pages(v.as_mut_ptr().cast(), n * std::mem::size_of::<T>());
    v.spare_capacity_mut()
        .par_chunks_mut(1 << 16)
        .for_each(|c| c.iter_mut().for_each(|x| _ = x.write(T::default())));
    // SAFETY: every one of the first n values was written just above.
    unsafe { v.set_len(n) };
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn filled_buffers_hold_n_defaults() {
        for n in [0, 1, 5000, 3 << 20] {
            let v = super::filled::<f32>(n);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|x| *x == 0.0));
        }
    }
}
