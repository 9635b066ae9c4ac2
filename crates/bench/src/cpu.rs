//! `gblur bench cpu`: the blur in memory on the CPU, the way the main command runs it without
//! a GPU: the banded Rust blur on 8-bit RGB and on one f32 channel, against the planar Rust
//! reference and the best OpenCL device's pipeline (conversions and transfers included), so
//! the default path is a measured choice. Peer tools are measured beside it by
//! `benches/cpu.sh`.

use super::output::{opt, Column};
use super::runner::{measure_host, Stats};
use super::{BenchOptions, Record};
use gblur::cpu::{banded, reference};
use gblur::filter::{Blur2d, Method};
use gblur::gpu::opencl::{device, ClContext};
use gblur::gpu::pipeline;
use gblur::gpu::plan::Upload;
use gblur::gpu::plan::{Pipeline, PipelineChoice};
use gblur::gpu::upload;
use gblur::pixels;
use gblur::progress::SWEEP;
use image::{DynamicImage, ImageBuffer};

/// A 16 MP frame with a camera's 3:2 shape.
pub const DEFAULT_SIZE: (usize, usize) = (4896, 3264);

fn record(name: &str, (w, h): (usize, usize), channels: usize, sigma: f64, device: &str) -> Record {
    Record {
        bench: "cpu",
        name: name.into(),
        size: format!("{w}x{h}"),
        width: w,
        height: h,
        channels: Some(channels),
        sigma: Some(sigma),
        device: device.into(),
        ..Record::default()
    }
}

fn timed(mut r: Record, stats: &Stats, bytes_per_pixel: f64) -> Record {
    r.timed(stats, r.pixels() * bytes_per_pixel * 2.0);
    r
}

/// Checks the banded blur against the reference on a corner of `img` (the whole image would
/// cost seconds per check on the reference path).
fn verify(img: &DynamicImage, blur: &Blur2d, tolerance: f32) -> Result<(), String> {
    let corner = img.crop_imm(0, 0, img.width().min(640), img.height().min(400));
    let want = reference::blur_image(&corner, blur, false);
    let mut got = corner.clone();
    banded::blur_image(&mut got, blur, false).ok_or("the banded blur does not apply")?;
    let d = reference::max_difference(&want, &got);
    if d <= tolerance {
        Ok(())
    } else {
        Err(format!("differs from the reference by {d:.2e}"))
    }
}

fn rgb8(w: usize, h: usize) -> DynamicImage {
    let v = super::device::noise(w * h * 3);
    let data = v.iter().map(|&x| (x * 255.0) as u8).collect();
    DynamicImage::ImageRgb8(ImageBuffer::from_raw(w as u32, h as u32, data).unwrap())
}

pub fn run(opts: &BenchOptions, sigmas: &[f64]) -> anyhow::Result<Vec<Record>> {
    let records = sweep(opts, sigmas)?;
    super::output::emit(
        &records,
        &COLUMNS,
        "gblur bench cpu (in memory; GB/s counts samples read + written)",
        opts,
    )?;
    Ok(records)
}

const COLUMNS: [Column; 8] = [
    Column::SIZE,
    Column::name("path"),
    Column {
        header: "sigma",
        value: |r| opt(r.sigma, 1),
    },
    Column::MEDIAN_MS,
    Column::SPREAD,
    Column::MPPS,
    Column {
        header: "device",
        value: |r| r.device.clone(),
    },
    Column::STATUS,
];

/// Per size and sigma: the banded rows; at the first sigma also the reference and the
/// OpenCL row.
fn sweep(opts: &BenchOptions, sigmas: &[f64]) -> anyhow::Result<Vec<Record>> {
    let sizes = opts.sizes.clone().unwrap_or_else(|| vec![DEFAULT_SIZE]);
    let rust = format!(
        "{}, {}",
        gblur::backend::rust_device_name(),
        gblur::cpu::lanes::isa_name()
    );
    // The OpenCL row shows what the main command would otherwise run; no device, no row.
    let opencl = device::select(&opts.device)
        .ok()
        .flatten()
        .and_then(|info| ClContext::new(info).ok());
    let per_size = 2 * sigmas.len() + 1 + usize::from(opencl.is_some());
    let bar = gblur::progress::progress_bar(sizes.len() * per_size, opts.quiet, SWEEP);
    let mut records = Vec::new();
    for &(w, h) in &sizes {
        let img = rgb8(w, h);
        let plane = super::device::noise(w * h);
        for (i, &sigma) in sigmas.iter().enumerate() {
            let case = Case {
                size: (w, h),
                sigma,
                blur: Blur2d::new(Method::Recursive, sigma, sigma),
                runs: opts.runs,
                rust: &rust,
            };
            let message = |what: &str| bar.set_message(format!("{w}x{h} sigma {sigma} {what}"));
            message("banded RGB8");
            records.push(case.banded_rgb8(&img));
            bar.inc(1);
            message("banded f32");
            records.push(case.banded_f32(&plane));
            bar.inc(1);
            if i > 0 {
                continue;
            }
            message("reference");
            records.push(case.reference_rgb8(&img));
            bar.inc(1);
            if let Some(ctx) = &opencl {
                let (pipe, name) = opencl_row(ctx);
                message(&name);
                records.push(case.opencl_rgb8(ctx, pipe, &name, &img)?);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(records)
}

/// One size and sigma of the sweep: the blur, the timed runs, and the Rust rows' device name.
struct Case<'a> {
    size: (usize, usize),
    sigma: f64,
    blur: Blur2d,
    runs: usize,
    rust: &'a str,
}

impl Case<'_> {
    /// The banded blur on 8-bit RGB, in place, checked on a corner first.
    fn banded_rgb8(&self, img: &DynamicImage) -> Record {
        let mut r = record(
            "rust banded, RGB 8-bit",
            self.size,
            3,
            self.sigma,
            self.rust,
        );
        if let Err(why) = verify(img, &self.blur, 1.01 / 255.0) {
            r.fail(why);
            return r;
        }
        let mut work = img.clone();
        let stats = measure_host(
            self.runs,
            &mut work,
            |work| work.clone_from(img),
            |work| {
                banded::blur_image(work, &self.blur, false);
            },
        );
        timed(r, &stats, 3.0)
    }

    /// The banded blur on one f32 plane, in place.
    fn banded_f32(&self, plane: &[f32]) -> Record {
        let r = record(
            "rust banded, 1 channel f32",
            self.size,
            1,
            self.sigma,
            self.rust,
        );
        let k = banded::Axis::of(&self.blur.x).expect("Method::Recursive");
        let mut work = plane.to_vec();
        let stats = measure_host(
            self.runs,
            &mut work,
            |work| work.copy_from_slice(plane),
            |work| {
                banded::blur_gray_f32_in_place(work, self.size, k, k);
            },
        );
        timed(r, &stats, 4.0)
    }

    /// The planar Rust reference on 8-bit RGB.
    fn reference_rgb8(&self, img: &DynamicImage) -> Record {
        let name = "rust reference (planar f32), RGB 8-bit";
        let r = record(name, self.size, 3, self.sigma, self.rust);
        let stats = measure_host(
            self.runs,
            &mut (),
            |_| {},
            |_| {
                reference::blur_image(img, &self.blur, false);
            },
        );
        timed(r, &stats, 3.0)
    }

    /// The OpenCL device's pipeline on 8-bit RGB as the main command runs it, conversions and
    /// transfers included.
    fn opencl_rgb8(
        &self,
        ctx: &ClContext,
        pipe: Pipeline,
        name: &str,
        img: &DynamicImage,
    ) -> anyhow::Result<Record> {
        let blur = &self.blur;
        let r = record(name, self.size, 3, self.sigma, &ctx.device_name());
        let upload = Upload::for_image(img.color(), false, pipe, blur);
        pipeline::prepare(ctx, blur, pipe, self.size, upload)?;
        let mut failure = None;
        let mut work = img.clone();
        let stats = measure_host(
            self.runs,
            &mut work,
            |work| *work = img.clone(),
            |work| {
                let done = match upload {
                    // As the main command runs it: bytes up, bytes down, in place.
                    Upload::U8 { .. } => upload::blur_u8(ctx, work, blur, false, pipe).map(drop),
                    Upload::PlanarF32 => {
                        let (p, layout) = pixels::to_planar(work, false);
                        pipeline::blur(ctx, p, blur, pipe).map(|(mut out, _)| {
                            pixels::finish_planar(&mut out, layout);
                            pixels::from_planar(&out, layout.color, img.color());
                        })
                    }
                };
                if let Err(e) = done {
                    failure = Some(e.to_string());
                }
            },
        );
        Ok(match failure {
            Some(why) => {
                let mut r = r;
                r.fail(why);
                r
            }
            None => timed(r, &stats, 3.0),
        })
    }
}

/// The pipeline the main command would pick on `ctx`, and the OpenCL row's name.
fn opencl_row(ctx: &ClContext) -> (Pipeline, String) {
    let pipe = PipelineChoice::Auto.resolve(&ctx.info);
    (pipe, format!("opencl {}, RGB 8-bit", pipe.describe()))
}
