//! How a `Device` opened by `auto` chooses where an N-D array is blurred: the host's cores or
//! the OpenCL device, from figures measured once per `Device` on a probe array of 64 MB.
//!
//! An array blurred from host memory costs the device its transfers both ways (pageable
//! memory, as numpy and `Vec` hold it) and, for edge modes other than clamp, the host's
//! extension of the array and the crop of the result; the kernels themselves are a small
//! part. The host's cost is its engine's time per sample and axis. Both grow linearly with
//! the array, so one probe of each gives the line where the device starts to win, on this
//! machine: a GPU on a host of many cores rarely wins for one array from host memory, and
//! one beside a few cores often does.

use super::nd;
use crate::backend;
use crate::cpu::axis::{self, AxisFilter};
use crate::filter::{EdgeMode, LineFilter, Method};
use crate::gpu::volume;
use std::time::Instant;

/// Seconds per unit of work, measured on this machine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayFigures {
    /// The host's engine, per sample and filtered axis.
    host_per_sample_axis: f64,
    /// The device from host memory (both transfers and three axes' kernels), per sample.
    device_per_sample: f64,
    /// Extending an array on the host and cropping the result back, per extended sample.
    extend_per_sample: f64,
}

/// The probe: 64 × 512 × 512 f32 samples, filtered along all three axes.
const PROBE: [usize; 3] = [64, 512, 512];

/// The best of three runs of `f`, in seconds.
fn best_of_three(mut f: impl FnMut() -> bool) -> Option<f64> {
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        if !f() {
            return None;
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    Some(best)
}

/// Measures the figures on `device` (None where the device fails the probe).
pub(crate) fn measure(device: &backend::Device) -> Option<ArrayFigures> {
    let len: usize = PROBE.iter().product();
    let mut data: Vec<f32> = (0..len).map(|i| (i % 251) as f32 / 251.0).collect();
    let filter = |edge| AxisFilter {
        filter: LineFilter::new(Method::Recursive, 3.0),
        edge,
        cvals: vec![0.0],
    };
    let clamp: Vec<Option<AxisFilter>> = (0..3).map(|_| Some(filter(EdgeMode::Clamp))).collect();
    let lines: Vec<Option<LineFilter>> = clamp
        .iter()
        .map(|a| a.as_ref().map(|a| a.filter.clone()))
        .collect();
    let host = best_of_three(|| {
        for (k, a) in clamp.iter().enumerate() {
            axis::filter_axis_in_place(&mut data, &PROBE, k, a.as_ref().expect("every axis"));
        }
        true
    })?;
    // The first device run builds the kernels; the timed ones find them built.
    let on_device = |data: &mut Vec<f32>| {
        volume::blur(&device.ctx, data, &PROBE, &lines, device.pipeline).is_ok()
    };
    if !on_device(&mut data) {
        return None;
    }
    let dev = best_of_three(|| on_device(&mut data))?;
    let reflect: Vec<Option<AxisFilter>> =
        (0..3).map(|_| Some(filter(EdgeMode::Reflect))).collect();
    let pads = [8usize; 3];
    let mut extended = 0;
    let extend = best_of_three(|| {
        let (work, shape) = nd::extend(&data, &PROBE, &reflect, &pads);
        extended = work.len();
        nd::crop_into(&work, &shape, &pads, &mut data);
        true
    })?;
    Some(ArrayFigures {
        host_per_sample_axis: host / (len as f64 * 3.0),
        device_per_sample: dev / len as f64,
        extend_per_sample: extend / extended.max(1) as f64,
    })
}

impl ArrayFigures {
    /// Whether the device is predicted faster for `samples` samples filtered along `axes`
    /// axes, extended to `extended` samples for the device (as many where nothing is
    /// extended).
    pub(crate) fn device_wins(&self, samples: usize, axes: usize, extended: usize) -> bool {
        let host = samples as f64 * axes as f64 * self.host_per_sample_axis;
        let mut device = extended as f64 * self.device_per_sample;
        if extended > samples {
            device += extended as f64 * self.extend_per_sample;
        }
        device < host
    }
}
