//! The figures the cost model predicts from: measured once per machine (the Rust path) and
//! per device and driver, then kept as JSON beside the program cache
//! (`<cache>/calibration/`). `gblur calibrate` measures them again; `GBLUR_COST_FIGURES`
//! replaces them outright, so that tests and experiments get the verdict they set up.

use super::cost::{DeviceFigures, RustFigures};
use crate::filter::{Blur2d, Method};
use crate::gpu::opencl::cache::{self, ProgramCache};
use crate::gpu::opencl::{ClContext, ClError, DeviceInfo};
use crate::gpu::pipeline;
use crate::gpu::plan::{Pipeline, Upload};
use crate::pixels::planar::Planar;
use crate::report::PassKind;
use image::{DynamicImage, RgbImage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The Rust path's calibration image: 1 MP of RGB, blurred with σ 5.
const RUST_SIZE: (u32, u32) = (1024, 1024);
/// The device's: 4 MP of one f32 channel, enough to move 16 MB each way.
const DEVICE_SIZE: (usize, usize) = (2048, 2048);
const SIGMA: f64 = 5.0;

/// Where the figures came from, for `--explain`.
#[derive(Clone, Debug)]
pub enum Source {
    /// `GBLUR_COST_FIGURES`.
    Forced,
    /// Read from this file.
    Kept(PathBuf),
    /// Measured by this process (and kept in this file where the cache is on).
    Measured(Option<PathBuf>),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Forced => write!(f, "set by GBLUR_COST_FIGURES"),
            Source::Kept(p) => write!(f, "calibrated earlier, kept in {}", p.display()),
            Source::Measured(Some(p)) => write!(f, "calibrated now, kept in {}", p.display()),
            Source::Measured(None) => write!(f, "calibrated now (the cache is off)"),
        }
    }
}

/// `GBLUR_COST_FIGURES`: `rust=S,open=MS,compile=MS,cached=MS,up=B,down=B,kernel=S`, the
/// Rust path's samples per second per thread, the device's set-up parts in milliseconds,
/// its bytes per second each way and its kernels' samples per second. Every key is required.
pub fn forced() -> Option<Result<(RustFigures, DeviceFigures), String>> {
    let text = std::env::var("GBLUR_COST_FIGURES").ok()?;
    Some(parse_forced(&text))
}

fn parse_forced(text: &str) -> Result<(RustFigures, DeviceFigures), String> {
    let mut values = std::collections::HashMap::new();
    for pair in text.split(',') {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("GBLUR_COST_FIGURES: '{pair}' is not KEY=VALUE"))?;
        let value: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| *v >= 0.0)
            .ok_or_else(|| format!("GBLUR_COST_FIGURES: '{pair}' needs a number ≥ 0"))?;
        values.insert(key.trim(), value);
    }
    let get = |key: &str| {
        values
            .get(key)
            .copied()
            .ok_or_else(|| format!("GBLUR_COST_FIGURES lacks {key}="))
    };
    Ok((
        RustFigures {
            samples_per_s_per_thread: get("rust")?,
        },
        DeviceFigures {
            open_ms: get("open")?,
            compile_ms: get("compile")?,
            cached_build_ms: get("cached")?,
            upload_bytes_per_s: get("up")?,
            download_bytes_per_s: get("down")?,
            kernel_samples_per_s: get("kernel")?,
        },
    ))
}

fn rust_file(root: &Path) -> PathBuf {
    root.join("calibration").join("rust.json")
}

fn device_file(root: &Path, info: &DeviceInfo) -> PathBuf {
    root.join("calibration")
        .join(format!("device-{}.json", cache::device_tag(info)))
}

/// The last GPU calibrated on this machine, by name: what `auto` weighs before it loads any
/// OpenCL driver (loading NVIDIA's costs about 0.2 s, which a small image cannot repay).
fn gpu_summary_file(root: &Path) -> PathBuf {
    root.join("calibration").join("gpu.json")
}

/// A GPU's name and figures, as `gpu_summary_file` keeps them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GpuSummary {
    pub name: String,
    pub figures: DeviceFigures,
}

/// The kept summary of this machine's GPU, or None where none was calibrated (`gblur
/// calibrate` measures one).
pub fn gpu_summary(root: Option<&Path>) -> Option<(GpuSummary, PathBuf)> {
    let path = gpu_summary_file(root?);
    read(&path).map(|s| (s, path))
}

/// The Rust path's kept figures, without measuring: None where there are none.
pub fn kept_rust_figures(root: Option<&Path>) -> Option<RustFigures> {
    read(&rust_file(root?))
}

fn read<T: DeserializeOwned>(path: &Path) -> Option<T> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Writes `value` to `path` through a temporary file, so that a reader never sees half of it.
/// A cache that cannot be written means measuring again next time, no more.
fn keep<T: Serialize>(path: &Path, value: &T) -> Option<PathBuf> {
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let tmp = tempfile::NamedTempFile::new_in(dir).ok()?;
    serde_json::to_writer_pretty(tmp.as_file(), value).ok()?;
    tmp.persist(path).ok()?;
    Some(path.to_path_buf())
}

/// The Rust path's figures: kept ones, else measured now (and kept).
pub fn rust_figures(root: Option<&Path>, fresh: bool) -> (RustFigures, Source) {
    if let Some(path) = root.map(rust_file) {
        if let Some(figures) = read(&path).filter(|_| !fresh) {
            return (figures, Source::Kept(path));
        }
    }
    let figures = measure_rust();
    let kept = root.and_then(|root| keep(&rust_file(root), &figures));
    (figures, Source::Measured(kept))
}

/// `info`'s figures running `pipeline`: kept ones, else measured now (and kept).
pub fn device_figures(
    root: Option<&Path>,
    info: &DeviceInfo,
    pipeline: Pipeline,
    fresh: bool,
) -> Result<(DeviceFigures, Source), ClError> {
    if let Some(path) = root.map(|root| device_file(root, info)) {
        if let Some(figures) = read(&path).filter(|_| !fresh) {
            return Ok((figures, Source::Kept(path)));
        }
    }
    let figures = measure_device(info, pipeline)?;
    let kept = root.and_then(|root| keep(&device_file(root, info), &figures));
    if let (Some(root), true) = (root, info.is_gpu()) {
        let summary = GpuSummary {
            name: info.name.clone(),
            figures,
        };
        keep(&gpu_summary_file(root), &summary);
    }
    Ok((figures, Source::Measured(kept)))
}

/// Noise in 0..255: the banded blur's time does not depend on the values, but a constant
/// image would let a future shortcut flatter it.
fn noise(len: usize) -> impl Iterator<Item = u8> {
    let mut state = 0x2545_f491_u32;
    (0..len).map(move |_| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state >> 24) as u8
    })
}

/// Times the banded blur of the calibration image; the fastest of five runs (a few ms each):
/// the first pays for page faults and thread start-up, and a shared machine's other work
/// slows some of the rest.
pub fn measure_rust() -> RustFigures {
    let (w, h) = RUST_SIZE;
    let pixels: Vec<u8> = noise((w * h * 3) as usize).collect();
    let blur = Blur2d::new(Method::Recursive, SIGMA, SIGMA);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut img = DynamicImage::ImageRgb8(
            RgbImage::from_raw(w, h, pixels.clone()).expect("sized buffer"),
        );
        let t = Instant::now();
        crate::cpu::banded::blur_image(&mut img, &blur, false).expect("a recursive blur");
        best = best.min(t.elapsed().as_secs_f64());
    }
    let samples = (w * h * 3) as f64;
    RustFigures {
        samples_per_s_per_thread: samples / best / rayon::current_num_threads() as f64,
    }
}

/// Times opening `info`, compiling the blur's kernels, loading them from a program cache (a
/// temporary one, so that the user's is neither needed nor disturbed), and a blur of the
/// calibration image: its transfers and its kernels, from a second run.
pub fn measure_device(info: &DeviceInfo, pipeline: Pipeline) -> Result<DeviceFigures, ClError> {
    let blur = Blur2d::new(Method::Recursive, SIGMA, SIGMA);
    let (w, h) = DEVICE_SIZE;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let scratch = tempfile::tempdir().ok();
    let cache = scratch
        .as_ref()
        .map(|dir| ProgramCache::new(dir.path(), info));

    let t = Instant::now();
    let ctx = ClContext::with_cache(info.clone(), cache.clone())?;
    let open_ms = ms(t);
    let t = Instant::now();
    pipeline::prepare(&ctx, &blur, pipeline, (w, h), Upload::PlanarF32)?;
    let compile_ms = ms(t);
    let cached = ClContext::with_cache(info.clone(), cache)?;
    let t = Instant::now();
    pipeline::prepare(&cached, &blur, pipeline, (w, h), Upload::PlanarF32)?;
    let cached_build_ms = ms(t);

    let mut img = Planar::new(w, h, 1);
    for (v, n) in img.data.iter_mut().zip(noise(w * h)) {
        *v = n as f32;
    }
    let mut passes = Vec::new();
    for _ in 0..2 {
        passes = pipeline::blur(&ctx, img.clone(), &blur, pipeline)?.1;
    }
    let bytes = (w * h * 4) as f64;
    let named = |prefix: &str| -> f64 {
        let ms: f64 = passes
            .iter()
            .filter(|p| p.kind == PassKind::Transfer && p.name.starts_with(prefix))
            .map(|p| p.ms)
            .sum();
        bytes / (ms.max(1e-6) * 1e-3)
    };
    let kernel_ms: f64 = passes
        .iter()
        .filter(|p| matches!(p.kind, PassKind::Filter | PassKind::Transpose))
        .map(|p| p.ms)
        .sum();
    Ok(DeviceFigures {
        open_ms,
        compile_ms,
        cached_build_ms,
        upload_bytes_per_s: named("upload"),
        download_bytes_per_s: named("download"),
        kernel_samples_per_s: (w * h) as f64 / (kernel_ms.max(1e-6) * 1e-3),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_figures_parse_and_refuse_gaps() {
        let (rust, dev) =
            parse_forced("rust=2e7,open=150,compile=300,cached=15,up=1.2e10,down=1e10,kernel=8e10")
                .unwrap();
        assert_eq!(rust.samples_per_s_per_thread, 2e7);
        assert_eq!(dev.open_ms, 150.0);
        assert_eq!(dev.cached_build_ms, 15.0);
        assert_eq!(dev.download_bytes_per_s, 1e10);
        assert!(parse_forced("rust=2e7").unwrap_err().contains("open="));
        assert!(parse_forced("rust=fast").is_err());
        assert!(parse_forced("rust=-1,open=1,compile=1,cached=1,up=1,down=1,kernel=1").is_err());
    }

    #[test]
    fn figures_are_kept_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let figures = RustFigures {
            samples_per_s_per_thread: 1234.0,
        };
        let path = rust_file(dir.path());
        assert_eq!(keep(&path, &figures), Some(path.clone()));
        let (read_back, source) = rust_figures(Some(dir.path()), false);
        assert_eq!(read_back, figures);
        assert!(matches!(source, Source::Kept(p) if p == path));
    }

    #[test]
    fn the_rust_path_measures_a_positive_rate() {
        let figures = measure_rust();
        assert!(figures.samples_per_s_per_thread.is_finite());
        assert!(figures.samples_per_s_per_thread > 1e5);
    }
}
