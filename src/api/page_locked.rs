//! Arrays in page-locked host memory of an opened OpenCL device: `Device::page_locked` hands
//! them out, and `Device::blur_nd` and `Device::blur_nd_into` send them to the device and take
//! the result back by the copy engines alone, with no staging copy on the host's cores
//! (`gpu::opencl::lanes`, `gpu::volume::direct`).

use super::error::Error;
use crate::backend;
use crate::cpu::axis::footprint::Spoiled;
use crate::cpu::axis::{AxisFilter, Element};
use crate::gpu::opencl::lanes;
use crate::gpu::volume::{self, Direct as Arrays};
use std::ops::{Deref, DerefMut};

/// f32 samples, zeros at first, in page-locked host memory of an opened OpenCL device
/// ([`Device::page_locked`](crate::Device::page_locked)). An f32 array held here, blurred on
/// that device with mode clamp (scipy's 'nearest') along every axis it filters, goes up and
/// comes back by the device's copy engines alone: on the H200 host that moved 54 GB/s each
/// way, where an array in ordinary memory is copied through staging memory on the host's
/// cores first (about 50 GB/s on 16 of them). Other arrays, modes and devices take the staged
/// route. Dropping it gives the memory back to the driver.
///
/// ```no_run
/// use gblur::{nd::Filter, Device};
///
/// let device = Device::open("gpu")?;
/// let (shape, len) = ([4096, 4096], 4096 * 4096);
/// let mut image = device.page_locked(len)?;
/// let mut blurred = device.page_locked(len)?;
/// image[len / 2 + 2048] = 1.0;
/// let filter = Filter::new(&[5.0, 5.0])?.mode(gblur::EdgeMode::Clamp);
/// device.blur_nd_into(&filter, &image, &mut blurred, &shape)?;
/// # Ok::<(), gblur::Error>(())
/// ```
pub struct PageLocked(lanes::PageLocked);

impl Deref for PageLocked {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        self.0.as_slice()
    }
}

impl DerefMut for PageLocked {
    fn deref_mut(&mut self) -> &mut [f32] {
        self.0.as_mut_slice()
    }
}

impl std::fmt::Debug for PageLocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageLocked({} samples)", self.len())
    }
}

impl PageLocked {
    pub(super) fn new(memory: lanes::PageLocked) -> Self {
        PageLocked(memory)
    }
}

/// What became of an array offered to the copy engines alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direct {
    /// Blurred.
    Done,
    /// Not theirs (ordinary memory, another mode or sample type): nothing written.
    NotTaken,
    /// Its input holds a NaN or an infinity, which the staged route treats as the host does:
    /// an output is left undefined, an array blurred in place as it was.
    NonFinite,
}

/// `input` filtered into `output` by the copy engines alone, where both lie in `device`'s
/// page-locked memory (`direct`).
pub(super) fn blur_direct_into<S: Element, D: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    (input, output): (&[S], &mut [D]),
    shape: &[usize],
) -> Result<Direct, Error> {
    let ctx = &device.ctx;
    let src = S::as_f32(input).filter(|s| ctx.is_page_locked(s));
    let dst = D::as_f32_mut(output).filter(|d| ctx.is_page_locked(d));
    match (src, dst) {
        (Some(src), Some(dst)) => direct(device, axes, Arrays::Into(src, dst), shape),
        _ => Ok(Direct::NotTaken),
    }
}

/// `blur_direct_into` in place.
pub(super) fn blur_direct_in_place<T: Element>(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    data: &mut [T],
    shape: &[usize],
) -> Result<Direct, Error> {
    let ctx = &device.ctx;
    match T::as_f32_mut(data).filter(|d| ctx.is_page_locked(d)) {
        Some(data) => direct(device, axes, Arrays::InPlace(data), shape),
        None => Ok(Direct::NotTaken),
    }
}

/// `arrays` filtered by the copy engines alone where every filtered axis is clamped (nothing
/// to extend), only the samples themselves can spoil outputs and the device holds the array
/// whole (the staged route takes larger ones in slabs).
fn direct(
    device: &backend::Device,
    axes: &[Option<AxisFilter>],
    arrays: Arrays,
    shape: &[usize],
) -> Result<Direct, Error> {
    let held = volume::holds_whole(&device.ctx, shape.iter().product());
    if !held || !AxisFilter::nothing_to_extend(axes) || !Spoiled::from_samples_alone::<f32>(axes) {
        return Ok(Direct::NotTaken);
    }
    let lines = AxisFilter::lines(axes);
    match volume::blur_direct(&device.ctx, arrays, shape, &lines, device.pipeline) {
        Ok(Some(_)) => Ok(Direct::Done),
        Ok(None) => Ok(Direct::NonFinite),
        Err(e) => Err(Error::Device(e.to_string())),
    }
}
