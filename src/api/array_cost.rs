//! How a `Device` opened by `auto` chooses where an N-D array is blurred: the host's cores or
//! the OpenCL device, from figures measured once per `Device` on a probe array of 64 MB.
//!
//! An array blurred from host memory costs the device its transfers both ways (through the
//! context's pinned slots, `opencl::staged`, where the host extends the array for edge modes
//! other than clamp as it fills them), of the extended array's samples; the kernels
//! themselves are a small part. The host's cost is its engine's time per sample and axis. Both grow linearly with
//! the array from a fixed cost per call (the device's commands and waits are a fraction of
//! a millisecond, as long as a small array's whole blur on the host), so a small and a large
//! probe of each give two lines, and where they cross the device starts to win, on this
//! machine.

use crate::backend;
use crate::cpu::axis::{self, AxisFilter};
use crate::filter::{EdgeMode, LineFilter, Method};
use crate::gpu::volume;
use std::time::Instant;

/// Seconds per unit of work, measured on this machine.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ArrayFigures {
    /// The host's engine: per call, and per sample and filtered axis.
    host_fixed: f64,
    host_per_sample_axis: f64,
    /// The device from host memory (both transfers and three axes' kernels): per call, and
    /// per sample.
    device_fixed: f64,
    device_per_sample: f64,
}

/// The probes: 64 × 512 × 512 and 128³ f32 samples, filtered along all three axes. The
/// device's time is not quite a line: a small volume leaves much of a GPU idle in its z pass,
/// and with a 32 × 128 × 128 probe the line passed under a 128³ volume's time on an H200 (1.7
/// ms against the host's 1.2), which `auto` then sent to the GPU.
const PROBE: [usize; 3] = [64, 512, 512];
const SMALL_PROBE: [usize; 3] = [128, 128, 128];

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
    let (host_small, device_small) = probe(device, &SMALL_PROBE)?;
    let (host_large, device_large) = probe(device, &PROBE)?;
    let (small, large) = (
        SMALL_PROBE.iter().product::<usize>() as f64,
        PROBE.iter().product::<usize>() as f64,
    );
    // Two points of each line; noise can tilt a line below zero, never a time.
    let line = |a: f64, b: f64| {
        let slope = ((b - a) / (large - small)).max(0.0);
        ((a - slope * small).max(0.0), slope)
    };
    let (host_fixed, host_per_sample) = line(host_small, host_large);
    let (device_fixed, device_per_sample) = line(device_small, device_large);
    Some(ArrayFigures {
        host_fixed,
        host_per_sample_axis: host_per_sample / 3.0,
        device_fixed,
        device_per_sample,
    })
}

fn filter(edge: EdgeMode) -> AxisFilter {
    AxisFilter {
        filter: LineFilter::new(Method::Recursive, 3.0),
        edge,
        cvals: vec![0.0],
        footprint: None,
    }
}

fn probe_data(shape: &[usize]) -> Vec<f32> {
    let len: usize = shape.iter().product();
    (0..len).map(|i| (i % 251) as f32 / 251.0).collect()
}

/// The host's and the device's best times for an array of `shape` along all its axes.
fn probe(device: &backend::Device, shape: &[usize]) -> Option<(f64, f64)> {
    let mut data = probe_data(shape);
    let clamp: Vec<Option<AxisFilter>> = (0..3).map(|_| Some(filter(EdgeMode::Clamp))).collect();
    let lines: Vec<Option<LineFilter>> = clamp
        .iter()
        .map(|a| a.as_ref().map(|a| a.filter.clone()))
        .collect();
    // The host's own trips through the array (the last two axes plane by plane where it
    // takes them so), as `nd::Filter` makes them.
    let steps = axis::steps::steps(&[0, 1, 2], shape, 4, rayon::current_num_threads());
    let host = best_of_three(|| {
        for step in &steps {
            step.in_place(&mut data, shape, &clamp);
        }
        true
    })?;
    // The first device run builds the kernels; the timed ones find them built.
    let on_device = |data: &mut Vec<f32>| {
        volume::blur(&device.ctx, data, shape, &lines, device.pipeline).is_ok()
    };
    if !on_device(&mut data) {
        return None;
    }
    let dev = best_of_three(|| on_device(&mut data))?;
    Some((host, dev))
}

impl ArrayFigures {
    /// Figures by which the host's cores always win, for tests of what `auto` does besides
    /// weighing.
    #[cfg(test)]
    pub(crate) const HOST_ALWAYS: ArrayFigures = ArrayFigures {
        host_fixed: 0.0,
        host_per_sample_axis: 0.0,
        device_fixed: 1.0,
        device_per_sample: 1.0,
    };

    /// Whether the device is predicted faster for `samples` samples filtered along `axes`
    /// axes, extended to `extended` samples for the device (as many where nothing is
    /// extended).
    pub(crate) fn device_wins(&self, samples: usize, axes: usize, extended: usize) -> bool {
        let host = self.host_fixed + samples as f64 * axes as f64 * self.host_per_sample_axis;
        let device = self.device_fixed + extended as f64 * self.device_per_sample;
        device < host
    }
}

#[cfg(test)]
mod tests {
    use super::ArrayFigures;

    /// Lines through the H200 host's times (`benches/gpu_arrays.py --auto`): the device 1.7 ms
    /// a call and 0.31 ns a sample (128³ and 512³), the host's 16 cores 0.3 ms a call and
    /// 0.25 ns a sample and axis (256² and 4096²).
    const H200: ArrayFigures = ArrayFigures {
        host_fixed: 3e-4,
        host_per_sample_axis: 2.5e-10,
        device_fixed: 1.7e-3,
        device_per_sample: 3.1e-10,
    };

    #[test]
    fn small_arrays_stay_on_the_host_and_large_ones_go_to_the_device() {
        for (shape, device) in [
            (&[256usize, 256][..], false),
            (&[1024, 1024], false),
            (&[128, 128, 128], false),
            (&[4096, 4096], true),
            (&[512, 512, 512], true),
        ] {
            let n: usize = shape.iter().product();
            assert_eq!(H200.device_wins(n, shape.len(), n), device, "{shape:?}");
        }
        // A blur along one axis of a large array is cheaper on the host than its transfers.
        assert!(!H200.device_wins(4096 * 4096, 1, 4096 * 4096));
    }
}
