//! How a `Device` opened by `auto` chooses where an N-D array is blurred: the host's cores or
//! the OpenCL device, from times measured once per `Device` on probe arrays of up to 64 MB.
//!
//! An array blurred from host memory costs the device its transfers both ways (through the
//! context's pinned slots, `opencl::staged`, where the host extends the array for edge modes
//! other than clamp as it fills them), of the extended array's samples; the kernels
//! themselves are a small part. The host's cost is its engine's time. Neither is a line
//! through the origin: each call has a fixed cost on both sides (the device's commands and
//! waits are a fraction of a millisecond, as long as a small array's whole blur on the
//! host), and the host's cores share a mid-sized plane less well than a small or a large one
//! (on the H200 host's 16 cores, 1024² took 0.54 ns a sample and axis against 0.18 at 4096²
//! and at 128³). So planes and volumes each have probes of several sizes, and an array's two
//! times are read off the lines between the probes nearest its size.

use crate::backend;
use crate::cpu::axis::{self, AxisFilter};
use crate::filter::{EdgeMode, LineFilter, Method};
use crate::gpu::volume;
use std::time::Instant;

/// A probe's times, in seconds: an array of `samples` samples filtered along every axis.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    samples: f64,
    host: f64,
    device: f64,
}

/// The probes of one rank, by size.
#[derive(Clone, Debug, PartialEq)]
struct Curve {
    /// The probes' axes, all filtered.
    axes: usize,
    points: Vec<Point>,
}

/// Times measured on this machine: planes (arrays of up to two axes longer than one sample)
/// and volumes (three or more).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArrayFigures {
    planes: Curve,
    volumes: Curve,
}

/// The plane probes: 256², 1024² and 2048² f32 samples. Three sizes, because the host's
/// time per sample falls from 1024² on while the device's fixed cost dominates below.
const PLANE_PROBES: [[usize; 2]; 3] = [[256, 256], [1024, 1024], [2048, 2048]];

/// The volume probes: 128³ and 64 × 512 × 512. The device's time is not quite a line: a
/// small volume leaves much of a GPU idle in its z pass, and with a 32 × 128 × 128 probe the
/// line passed under a 128³ volume's time on an H200 (1.7 ms against the host's 1.2), which
/// `auto` then sent to the GPU.
const VOLUME_PROBES: [[usize; 3]; 2] = [[128, 128, 128], [64, 512, 512]];

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

/// Measures the figures on `device` (None where the device fails a probe).
pub(crate) fn measure(device: &backend::Device) -> Option<ArrayFigures> {
    let curve = |shapes: &[&[usize]]| -> Option<Curve> {
        let points = shapes
            .iter()
            .map(|shape| probe(device, shape))
            .collect::<Option<_>>()?;
        Some(Curve {
            axes: shapes[0].len(),
            points,
        })
    };
    Some(ArrayFigures {
        planes: curve(&PLANE_PROBES.each_ref().map(|s| &s[..]))?,
        volumes: curve(&VOLUME_PROBES.each_ref().map(|s| &s[..]))?,
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

fn probe_data(len: usize) -> Vec<f32> {
    (0..len).map(|i| (i % 251) as f32 / 251.0).collect()
}

/// The host's and the device's best times for an array of `shape` along all its axes.
fn probe(device: &backend::Device, shape: &[usize]) -> Option<Point> {
    let samples: usize = shape.iter().product();
    let mut data = probe_data(samples);
    let clamp: Vec<Option<AxisFilter>> = shape
        .iter()
        .map(|_| Some(filter(EdgeMode::Clamp)))
        .collect();
    let lines: Vec<Option<LineFilter>> = clamp
        .iter()
        .map(|a| a.as_ref().map(|a| a.filter.clone()))
        .collect();
    // The host's own trips through the array (the last two axes plane by plane where it
    // takes them so), as `nd::Filter` makes them.
    let all: Vec<usize> = (0..shape.len()).collect();
    let steps = axis::steps::steps(&all, shape, 4, rayon::current_num_threads());
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
    let device = best_of_three(|| on_device(&mut data))?;
    Some(Point {
        samples: samples as f64,
        host,
        device,
    })
}

impl Curve {
    /// A time at `samples` off the line through the two probes around it (the two nearest
    /// where it lies past them). A line never falls with size (noise can tilt it), and a
    /// time is never below zero.
    fn at(&self, samples: f64, time: impl Fn(&Point) -> f64) -> f64 {
        let p = &self.points;
        let i = p[1..p.len() - 1]
            .iter()
            .take_while(|q| q.samples < samples)
            .count();
        let (a, b) = (&p[i], &p[i + 1]);
        let slope = ((time(b) - time(a)) / (b.samples - a.samples)).max(0.0);
        (time(a) + slope * (samples - a.samples)).max(0.0)
    }
}

impl ArrayFigures {
    /// Figures by which the host's cores always win, for tests of what `auto` does besides
    /// weighing.
    #[cfg(test)]
    pub(crate) fn host_always() -> ArrayFigures {
        let curve = |axes| Curve {
            axes,
            points: vec![
                Point {
                    samples: 1.0,
                    host: 0.0,
                    device: 1.0,
                },
                Point {
                    samples: 2.0,
                    host: 0.0,
                    device: 2.0,
                },
            ],
        };
        ArrayFigures {
            planes: curve(2),
            volumes: curve(3),
        }
    }

    /// Whether the device is predicted faster for an array of `shape` filtered along `axes`
    /// of its axes, extended to `extended` samples for the device (as many as it has where
    /// nothing is extended). The host's time is the probe's for as many samples, in the
    /// share of the probe's axes that are filtered; the device's is mostly transfers, the
    /// same whichever axes are.
    pub(crate) fn device_wins(&self, shape: &[usize], axes: usize, extended: usize) -> bool {
        let long = shape.iter().filter(|&&n| n > 1).count();
        let curve = if long >= 3 {
            &self.volumes
        } else {
            &self.planes
        };
        let samples = shape.iter().product::<usize>() as f64;
        let host = curve.at(samples, |p| p.host) * axes as f64 / curve.axes as f64;
        let device = curve.at(extended as f64, |p| p.device);
        device < host
    }
}

#[cfg(test)]
mod tests {
    use super::{ArrayFigures, Curve, Point};

    fn curve(axes: usize, points: &[(usize, f64, f64)]) -> Curve {
        Curve {
            axes,
            points: points
                .iter()
                .map(|&(samples, host, device)| Point {
                    samples: samples as f64,
                    host: host * 1e-3,
                    device: device * 1e-3,
                })
                .collect(),
        }
    }

    /// The H200 host's times in ms (`benches/gpu_arrays.py --auto`, σ 3, its 16 cores
    /// against the GPU from numpy): 256², 1024² and 4096²; 128³ and 512³.
    fn h200() -> ArrayFigures {
        ArrayFigures {
            planes: curve(
                2,
                &[
                    (256 * 256, 0.27, 0.32),
                    (1024 * 1024, 1.14, 0.92),
                    (4096 * 4096, 5.92, 4.52),
                ],
            ),
            volumes: curve(
                3,
                &[(128 * 128 * 128, 1.05, 1.30), (512 * 512 * 512, 55.3, 26.8)],
            ),
        }
    }

    #[test]
    fn each_array_goes_where_the_probes_around_its_size_say_it_is_faster() {
        let figures = h200();
        for (shape, device) in [
            (&[64usize, 64][..], false),
            (&[256, 256], false),
            (&[1024, 1024], true),
            (&[2048, 2048], true),
            (&[4096, 4096], true),
            (&[16384, 16384], true),
            (&[1, 256, 256], false),
            (&[1, 1024, 1024], true),
            (&[64, 64, 64], false),
            (&[128, 128, 128], false),
            (&[512, 512, 512], true),
            (&[2, 512, 512, 512], true),
        ] {
            let n: usize = shape.iter().product();
            let long = shape.iter().filter(|&&s| s > 1).count();
            assert_eq!(figures.device_wins(shape, long, n), device, "{shape:?}");
        }
        // A blur along one axis of a large plane is cheaper on the host than its transfers.
        assert!(!figures.device_wins(&[4096, 4096], 1, 4096 * 4096));
        // An extension the device carries both ways can tip an array back to the host.
        assert!(!figures.device_wins(&[1024, 1024], 2, 1600 * 1600));
    }

    #[test]
    fn a_curve_reads_between_its_probes_and_along_the_nearest_two_past_them() {
        let c = curve(2, &[(100, 1.0, 2.0), (200, 3.0, 2.0), (400, 4.0, 1.0)]);
        let host = |n: f64| c.at(n, |p| p.host) * 1e3;
        let device = |n: f64| c.at(n, |p| p.device) * 1e3;
        assert!((host(150.0) - 2.0).abs() < 1e-9);
        assert!((host(300.0) - 3.5).abs() < 1e-9);
        assert!((host(800.0) - 6.0).abs() < 1e-9);
        // Below the first probe: the first two's line, never under zero.
        assert!((host(50.0) - 0.0).abs() < 1e-9);
        assert!((host(75.0) - 0.5).abs() < 1e-9);
        // A line that falls (noise) is read as flat.
        assert!((device(300.0) - 2.0).abs() < 1e-9);
        assert!((device(1000.0) - 2.0).abs() < 1e-9);
    }

    /// The probes of both ranks run on the test device (PoCL in CI): a point of each, its
    /// samples counted and both sides timed.
    #[test]
    fn probes_of_planes_and_volumes_time_both_sides() {
        use crate::backend::{Device, Target};
        use crate::gpu::opencl::device::for_tests;
        use crate::gpu::plan::PipelineChoice;
        let device = Device::open(Target::new(for_tests(), PipelineChoice::Auto)).expect("device");
        for shape in [&[48usize, 80][..], &[6, 20, 36]] {
            let point = super::probe(&device, shape).expect("both sides ran");
            assert_eq!(point.samples, shape.iter().product::<usize>() as f64);
            assert!(point.host > 0.0 && point.device > 0.0, "{point:?}");
        }
    }

    #[test]
    fn figures_for_tests_keep_every_array_on_the_host() {
        let figures = ArrayFigures::host_always();
        for shape in [&[8usize, 8][..], &[4096, 4096], &[512, 512, 512]] {
            let n = shape.iter().product();
            assert!(!figures.device_wins(shape, shape.len(), n), "{shape:?}");
        }
    }
}
