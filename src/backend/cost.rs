//! The cost model `--device auto` chooses by: the Rust path's time and a device's, predicted
//! from the image's size and figures measured once per machine (`calibrate`), so that the
//! faster path runs rather than whichever device happens to exist.
//!
//! Rust path: samples / (samples per second per thread × threads).
//! Device: the set-up still to pay (opening the context, and compiling the kernels or loading
//! them from the program cache) + the bytes moved up and down over the measured bandwidths +
//! samples over the measured kernel rate.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The Rust path's measured rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RustFigures {
    /// Samples (pixels × channels) blurred per second by one thread.
    pub samples_per_s_per_thread: f64,
}

/// One device's measured costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceFigures {
    /// Creating the context and its queue.
    pub open_ms: f64,
    /// Compiling the blur's kernels from source.
    pub compile_ms: f64,
    /// Loading the same kernels from the program cache.
    pub cached_build_ms: f64,
    /// Host to device, bytes per second.
    pub upload_bytes_per_s: f64,
    /// Device to host, bytes per second.
    pub download_bytes_per_s: f64,
    /// Samples per second through the blur's kernels.
    pub kernel_samples_per_s: f64,
}

/// The work one image asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Work {
    pub pixels: u64,
    pub channels: u32,
    /// Bytes per sample each way over the bus: 1 for 8-bit images (the blocked pipeline moves
    /// bytes), 4 for the rest (f32).
    pub bytes_per_sample: u32,
    /// Threads the Rust path runs on.
    pub threads: usize,
}

impl Work {
    fn samples(&self) -> f64 {
        self.pixels as f64 * self.channels as f64
    }
}

/// A device's predicted time, by part.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DeviceCost {
    pub setup_ms: f64,
    pub transfer_ms: f64,
    pub kernel_ms: f64,
}

impl DeviceCost {
    pub fn total_ms(&self) -> f64 {
        self.setup_ms + self.transfer_ms + self.kernel_ms
    }
}

/// Both predictions and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Prediction {
    pub rust_ms: f64,
    pub device: DeviceCost,
    /// Whether the program cache held this device's kernels, so the set-up counted loading
    /// them rather than compiling them.
    pub cache_warm: bool,
    pub device_wins: bool,
}

pub fn rust_ms(work: &Work, rust: &RustFigures) -> f64 {
    let rate = rust.samples_per_s_per_thread * work.threads.max(1) as f64;
    work.samples() / rate * 1e3
}

pub fn device_cost(work: &Work, dev: &DeviceFigures, cache_warm: bool) -> DeviceCost {
    let build = if cache_warm {
        dev.cached_build_ms
    } else {
        dev.compile_ms
    };
    let bytes = work.samples() * work.bytes_per_sample as f64;
    DeviceCost {
        setup_ms: dev.open_ms + build,
        transfer_ms: (bytes / dev.upload_bytes_per_s + bytes / dev.download_bytes_per_s) * 1e3,
        kernel_ms: work.samples() / dev.kernel_samples_per_s * 1e3,
    }
}

/// Predicts both paths; the device wins only when it is predicted faster (a tie stays on the
/// Rust path, which needs no driver).
pub fn predict(
    work: &Work,
    rust: &RustFigures,
    dev: &DeviceFigures,
    cache_warm: bool,
) -> Prediction {
    let rust_ms = rust_ms(work, rust);
    let device = device_cost(work, dev, cache_warm);
    Prediction {
        rust_ms,
        device,
        cache_warm,
        device_wins: device.total_ms() < rust_ms,
    }
}

/// `predict` for a device already open, its kernels built: only transfers and kernels count.
pub fn predict_opened(work: &Work, rust: &RustFigures, dev: &DeviceFigures) -> Prediction {
    let opened = DeviceFigures {
        open_ms: 0.0,
        cached_build_ms: 0.0,
        ..*dev
    };
    predict(work, rust, &opened, true)
}

impl fmt::Display for Prediction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.device;
        let build = if self.cache_warm {
            "kernels cached"
        } else {
            "kernels to compile"
        };
        write!(
            f,
            "predicted Rust path {:.0} ms, device {:.0} ms (set-up {:.0} ms, {build}; transfers {:.1} ms; kernels {:.1} ms)",
            self.rust_ms,
            d.total_ms(),
            d.setup_ms,
            d.transfer_ms,
            d.kernel_ms
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Figures of the order an H100 host measures: 16 threads at 25 M samples/s each, a
    /// 150 ms context, 300 ms of compiling or 15 ms from the cache, ~12 GB/s each way.
    fn h100() -> (RustFigures, DeviceFigures) {
        (
            RustFigures {
                samples_per_s_per_thread: 25e6,
            },
            DeviceFigures {
                open_ms: 150.0,
                compile_ms: 300.0,
                cached_build_ms: 15.0,
                upload_bytes_per_s: 12e9,
                download_bytes_per_s: 12e9,
                kernel_samples_per_s: 80e9,
            },
        )
    }

    pub(crate) fn rgb8(megapixels: f64) -> Work {
        Work {
            pixels: (megapixels * 1e6) as u64,
            channels: 3,
            bytes_per_sample: 1,
            threads: 16,
        }
    }

    #[test]
    fn parts_add_up() {
        let (rust, dev) = h100();
        let work = rgb8(16.0);
        // 48 M samples on 16 × 25 M/s: 120 ms.
        assert!((rust_ms(&work, &rust) - 120.0).abs() < 1e-9);
        let cold = device_cost(&work, &dev, false);
        assert_eq!(cold.setup_ms, 450.0);
        assert!((cold.transfer_ms - 8.0).abs() < 1e-9);
        assert!((cold.kernel_ms - 0.6).abs() < 1e-9);
        assert_eq!(device_cost(&work, &dev, true).setup_ms, 165.0);
    }

    #[test]
    fn small_images_stay_on_the_rust_path() {
        let (rust, dev) = h100();
        for warm in [false, true] {
            let p = predict(&rgb8(1.0), &rust, &dev, warm);
            assert!(!p.device_wins, "{p}");
        }
    }

    #[test]
    fn large_images_go_to_the_device_once_set_up_is_cheap() {
        let (rust, dev) = h100();
        // 100 MP: 750 ms on the Rust path, 450 + 50 + 4 ms cold, 165 + 54 warm.
        assert!(predict(&rgb8(100.0), &rust, &dev, false).device_wins);
        assert!(predict(&rgb8(100.0), &rust, &dev, true).device_wins);
        // 16 MP: 120 ms against 458 cold and 174 warm.
        assert!(!predict(&rgb8(16.0), &rust, &dev, true).device_wins);
    }

    #[test]
    fn a_warm_cache_can_turn_the_verdict() {
        let (rust, dev) = h100();
        // 40 MP: 300 ms on the Rust path; 470 ms with a compile, 185 ms from the cache.
        let work = rgb8(40.0);
        assert!(!predict(&work, &rust, &dev, false).device_wins);
        assert!(predict(&work, &rust, &dev, true).device_wins);
    }

    #[test]
    fn fewer_threads_favour_the_device() {
        let (rust, dev) = h100();
        let mut work = rgb8(16.0);
        assert!(!predict(&work, &rust, &dev, true).device_wins);
        work.threads = 2;
        // 960 ms on 2 threads.
        assert!(predict(&work, &rust, &dev, true).device_wins);
    }

    #[test]
    fn float_images_pay_four_bytes_a_sample() {
        let (_, dev) = h100();
        let mut work = rgb8(16.0);
        let bytes = device_cost(&work, &dev, true).transfer_ms;
        work.bytes_per_sample = 4;
        assert!((device_cost(&work, &dev, true).transfer_ms - 4.0 * bytes).abs() < 1e-9);
    }

    #[test]
    fn a_tie_stays_on_the_rust_path() {
        let rust = RustFigures {
            samples_per_s_per_thread: 1e6,
        };
        let dev = DeviceFigures {
            open_ms: 1000.0,
            compile_ms: 0.0,
            cached_build_ms: 0.0,
            upload_bytes_per_s: f64::INFINITY,
            download_bytes_per_s: f64::INFINITY,
            kernel_samples_per_s: f64::INFINITY,
        };
        let work = Work {
            pixels: 1_000_000,
            channels: 1,
            bytes_per_sample: 4,
            threads: 1,
        };
        assert!(!predict(&work, &rust, &dev, false).device_wins);
    }
}
