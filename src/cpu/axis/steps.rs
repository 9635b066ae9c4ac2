//! The trips a blur of several axes makes through an array: one axis at a time, except the
//! last two of a stack of planes that fit in a core's cache, which go plane by plane in one
//! trip (`planes`).

use super::planes::{self, filter_planes, filter_planes_through};
use super::{filter_axis, filter_axis_in_place, AxisFilter, Element};

/// One trip through the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// One axis.
    Axis(usize),
    /// The array's last two axes (`d − 2`, then `d − 1`), plane by plane.
    Planes(usize, usize),
}

/// The steps that filter `active` axes (in increasing order) of an array of `shape`, held
/// between the steps in samples of `sample_bytes`, on `threads` threads.
pub(crate) fn steps(
    active: &[usize],
    shape: &[usize],
    sample_bytes: usize,
    threads: usize,
) -> Vec<Step> {
    let mut steps: Vec<Step> = active.iter().map(|&a| Step::Axis(a)).collect();
    let d = shape.len();
    let last_two = active.len() >= 2 && active[active.len() - 2..] == [d - 2, d - 1];
    if last_two && planes::by_planes(shape, sample_bytes, threads) {
        steps.truncate(steps.len() - 2);
        steps.push(Step::Planes(d - 2, d - 1));
    }
    steps
}

/// Each axis's filter, None where the axis is left alone.
pub(crate) type Filters = [Option<AxisFilter>];

/// Axis `a`'s filter, where the steps name `a`.
fn of(filters: &Filters, a: usize) -> &AxisFilter {
    filters[a].as_ref().expect("the steps name the active axes")
}

impl Step {
    /// The step on `data` in place: a float array, or an integer one's single axis (an integer
    /// array between axes would be rounded each time).
    pub(crate) fn in_place<T: Element>(self, data: &mut [T], shape: &[usize], filters: &Filters) {
        match self {
            Step::Axis(a) => filter_axis_in_place(data, shape, a, of(filters, a)),
            Step::Planes(a, b) => {
                filter_planes::<T, T>(None, data, shape, of(filters, a), of(filters, b))
            }
        }
    }

    /// The step from `src` into `dst`; where it goes plane by plane into integers, through
    /// an f32 array of its own (the whole array's size), so that `dst` is rounded once.
    pub(crate) fn run<S: Element, D: Element>(
        self,
        src: &[S],
        dst: &mut [D],
        shape: &[usize],
        filters: &Filters,
    ) {
        match self {
            Step::Axis(a) => filter_axis(src, dst, shape, a, of(filters, a)),
            Step::Planes(a, b) if D::FLOAT => {
                filter_planes(Some(src), dst, shape, of(filters, a), of(filters, b))
            }
            Step::Planes(a, b) => {
                let mut work = vec![0f32; src.len()];
                filter_planes_through(
                    Some(src),
                    &mut work,
                    dst,
                    shape,
                    (of(filters, a), of(filters, b)),
                )
            }
        }
    }

    /// The step from `work` (which it may overwrite) into `dst`.
    pub(crate) fn out_of<D: Element>(
        self,
        work: &mut [f32],
        dst: &mut [D],
        shape: &[usize],
        filters: &Filters,
    ) {
        match self {
            Step::Axis(a) => filter_axis(work, dst, shape, a, of(filters, a)),
            Step::Planes(a, b) => filter_planes_through::<f32, D>(
                None,
                work,
                dst,
                shape,
                (of(filters, a), of(filters, b)),
            ),
        }
    }
}
