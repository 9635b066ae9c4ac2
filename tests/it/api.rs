//! The library's public API, used as a program outside the crate uses it: images, raw
//! interleaved buffers with a stride, planes and N-D volumes, on the host and on an OpenCL
//! device opened once; the N-D filter against an exact Gaussian for every edge mode; files as
//! the command writes them; and every bad argument refused with an error, never a panic.

use crate::common;

use common::{fixture, gblur, require_opencl};
use gblur::nd::Filter;
use gblur::{blur_file, Device, EdgeMode, Error, FileOptions, Gaussian, Layout, Method};
use image::{DynamicImage, Rgba, RgbaImage};
use proptest::prelude::*;

/// An exact Gaussian along one line: the line extended by `mode` (as scipy.ndimage extends
/// it) and convolved in f64 with the normalised sampled Gaussian reaching `reach` sigmas.
fn exact_line(line: &[f64], sigma: f64, mode: EdgeMode, cval: f64, reach: f64) -> Vec<f64> {
    let n = line.len() as i64;
    let r = (reach * sigma + 0.5).floor().max(1.0) as i64;
    let taps: Vec<f64> = (-r..=r)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = taps.iter().sum();
    (0..n)
        .map(|i| {
            (-r..=r)
                .map(|k| {
                    let v = match mode.source(i + k, n) {
                        Some(s) => line[s],
                        None => cval,
                    };
                    v * taps[(k + r) as usize] / sum
                })
                .sum()
        })
        .collect()
}

/// The exact N-D Gaussian of `data` (shape `shape`), axis by axis in f64.
fn exact_nd(
    data: &[f64],
    shape: &[usize],
    sigma: &[f64],
    mode: EdgeMode,
    cval: f64,
    reach: f64,
) -> Vec<f64> {
    let mut out = data.to_vec();
    for (axis, &s) in sigma.iter().enumerate() {
        if s == 0.0 {
            continue;
        }
        let outer: usize = shape[..axis].iter().product();
        let n = shape[axis];
        let inner: usize = shape[axis + 1..].iter().product();
        let src = out.clone();
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| (o * n + k) * inner + i;
                let line: Vec<f64> = (0..n).map(|k| src[at(k)]).collect();
                for (k, v) in exact_line(&line, s, mode, cval, reach)
                    .into_iter()
                    .enumerate()
                {
                    out[at(k)] = v;
                }
            }
        }
    }
    out
}

fn noise(len: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f64 / (1u64 << 24) as f64
        })
        .collect()
}

const MODES: [EdgeMode; 5] = [
    EdgeMode::Clamp,
    EdgeMode::Reflect,
    EdgeMode::Reflect101,
    EdgeMode::Wrap,
    EdgeMode::Constant(0.0),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Within 1e-3 of the data's range of an exact Gaussian reaching 12 sigma (the recursive
    /// filter), or of scipy's kernel cut at `truncate` (the FIR it runs where scipy cuts
    /// short), on every rank, mode and axis combination.
    #[test]
    fn nd_filter_matches_an_exact_gaussian(
        shape in prop::collection::vec(1usize..24, 1..4),
        sigmas in prop::collection::vec(prop_oneof![Just(0.0), 0.6f64..9.0], 3),
        mode in 0usize..5,
        truncate in prop_oneof![Just(4.0), Just(8.0), 1.0f64..3.5],
        seed in any::<u64>(),
    ) {
        let sigma = &sigmas[..shape.len()];
        let len: usize = shape.iter().product();
        let data = noise(len, seed);
        let (mode, cval) = (MODES[mode], 0.3);
        let filter = Filter::new(sigma).unwrap().mode(mode).cval(cval).truncate(truncate);
        let mut got = data.clone();
        filter.apply(&mut got, &shape).unwrap();
        let reach = if truncate >= 4.0 { 12.0 } else { truncate };
        let want = exact_nd(&data, &shape, sigma, mode, cval, reach);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            prop_assert!((g - w).abs() < 1e-3, "[{i}] {g} vs {w} ({:?})", filter.describe());
        }
    }
}

#[test]
fn integer_arrays_are_rounded_once_from_the_float_result() {
    let shape = [40, 30];
    let data: Vec<u8> = noise(1200, 3).iter().map(|v| (v * 255.0) as u8).collect();
    let filter = Filter::new(&[3.0, 2.0]).unwrap();
    let mut as_float: Vec<f32> = data.iter().map(|&v| v as f32).collect();
    filter.apply(&mut as_float, &shape).unwrap();
    let mut in_place = data.clone();
    filter.apply(&mut in_place, &shape).unwrap();
    let mut into = vec![0u8; data.len()];
    filter.apply_into(&data, &mut into, &shape).unwrap();
    for ((a, b), f) in in_place.iter().zip(&into).zip(&as_float) {
        assert_eq!(*a, f.round() as u8);
        assert_eq!(a, b);
    }
    // Into another type: the input stays, the output holds the float result.
    let mut wide = vec![0f64; data.len()];
    filter.apply_into(&data, &mut wide, &shape).unwrap();
    for (w, f) in wide.iter().zip(&as_float) {
        assert!((*w as f32 - f).abs() < 1e-4);
    }
}

#[test]
fn a_dynamic_image_blurs_as_the_command_blurs_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    for (edge, flag) in [(EdgeMode::Clamp, "clamp"), (EdgeMode::Reflect, "reflect")] {
        gblur()
            .arg(fixture("samples/coffee.png"))
            .arg(&out)
            .args([
                "--sigma", "3.5", "--device", "rust", "--edge", flag, "--quiet",
            ])
            .assert()
            .success();
        let mut img = image::open(fixture("samples/coffee.png")).unwrap();
        let g = Gaussian::builder().sigma(3.5).edges(edge).build().unwrap();
        g.blur_image(&mut img).unwrap();
        let written = image::open(&out).unwrap();
        assert_eq!(img.as_bytes(), written.as_bytes(), "edge {flag}");
    }
}

#[test]
fn a_strided_rgba16_buffer_blurs_as_a_packed_one_and_keeps_its_gaps() {
    let (w, h, stride) = (37, 23, 37 * 4 + 9);
    let layout = Layout::new(w, h, 4)
        .with_row_stride(stride)
        .with_alpha(true);
    let mut strided = vec![7u16; layout.len()];
    let mut packed = Vec::new();
    for (i, v) in noise(w * h * 4, 9).into_iter().enumerate() {
        let (y, x) = (i / (w * 4), i % (w * 4));
        let s = (v * 65535.0) as u16;
        strided[y * stride + x] = s;
        packed.push(s);
    }
    for g in [
        Gaussian::new(4.0).unwrap(),
        Gaussian::builder()
            .sigma(1.2)
            .edges(EdgeMode::Wrap)
            .build()
            .unwrap(),
    ] {
        let mut a = strided.clone();
        g.blur_interleaved(&mut a, layout).unwrap();
        let mut b = packed.clone();
        g.blur_interleaved(&mut b, Layout::new(w, h, 4).with_alpha(true))
            .unwrap();
        for y in 0..h {
            assert_eq!(
                &a[y * stride..y * stride + w * 4],
                &b[y * w * 4..(y + 1) * w * 4]
            );
            if y + 1 < h {
                assert!(a[y * stride + w * 4..(y + 1) * stride]
                    .iter()
                    .all(|&v| v == 7));
            }
        }
    }
}

#[test]
fn a_one_axis_blur_of_raw_samples_leaves_the_other_axis_alone() {
    // Rows that are each constant: a blur along x alone keeps them, one along y mixes them;
    // raw samples and a DynamicImage take the same one-axis passes, bit for bit.
    let (w, h) = (150, 70);
    let rows: Vec<u8> = (0..w * h * 3)
        .map(|i| ((i / (w * 3)) * 37 % 256) as u8)
        .collect();
    for (sx, sy) in [(4.0, 0.0), (0.0, 4.0)] {
        let g = Gaussian::builder().sigma_x(sx).sigma_y(sy).build().unwrap();
        let mut raw = rows.clone();
        g.blur_interleaved(&mut raw, Layout::new(w, h, 3)).unwrap();
        assert_eq!(raw == rows, sy == 0.0, "sigma ({sx}, {sy})");
        let mut img = DynamicImage::ImageRgb8(
            image::RgbImage::from_raw(w as u32, h as u32, rows.clone()).unwrap(),
        );
        g.blur_image(&mut img).unwrap();
        assert_eq!(img.as_bytes(), &raw[..], "sigma ({sx}, {sy})");
    }
}

#[test]
fn interleaved_alpha_is_premultiplied_and_edges_follow_the_mode() {
    // An opaque red square on transparent black: no dark fringe, whatever the path.
    let (w, h) = (24, 24);
    let img = RgbaImage::from_fn(w, h, |x, y| {
        match (8..16).contains(&x) && (8..16).contains(&y) {
            true => Rgba([255, 0, 0, 255]),
            false => Rgba([0, 0, 0, 0]),
        }
    });
    for g in [
        Gaussian::new(3.0).unwrap(),
        Gaussian::builder()
            .sigma(1.5)
            .edges(EdgeMode::Reflect)
            .build()
            .unwrap(),
    ] {
        let mut buf = img.clone();
        g.blur_buffer(&mut buf).unwrap();
        for p in buf.pixels().filter(|p| p[3] > 8) {
            assert!(
                p[0] >= 250,
                "{p:?}: colour darkened by transparent neighbours"
            );
        }
    }
    // A constant edge of 0.5 on a black image lightens its border.
    let g = Gaussian::builder()
        .sigma(2.5)
        .edges(EdgeMode::Constant(0.5))
        .build()
        .unwrap();
    let mut gray = vec![0f32; 32 * 32];
    g.blur_interleaved(&mut gray, Layout::new(32, 32, 1))
        .unwrap();
    assert!(gray[0] > 0.2 && gray[16 * 32 + 16] < 1e-3);
}

#[test]
fn planes_and_volumes_match_on_the_host_and_on_an_opencl_device_opened_once() {
    require_opencl();
    let device = Device::open("cpu").unwrap();
    assert!(device.is_opencl(), "{}", device.name());
    let host = Device::open("rust").unwrap();
    // A DynamicImage (8-bit, so it goes up as bytes), several times on the same device.
    let img = image::open(fixture("samples/coffee.png")).unwrap();
    let g = Gaussian::new(5.0).unwrap();
    for _ in 0..2 {
        let (mut a, mut b) = (img.clone(), img.clone());
        device.blur_image(&g, &mut a).unwrap();
        host.blur_image(&g, &mut b).unwrap();
        let worst = a
            .as_bytes()
            .iter()
            .zip(b.as_bytes())
            .map(|(x, y)| x.abs_diff(*y))
            .max();
        assert!(worst <= Some(1), "8-bit image: {worst:?} levels apart");
    }
    // A float image with reflected edges (planar f32 on the device).
    let f = DynamicImage::ImageRgb32F(img.to_rgb32f());
    let g = Gaussian::builder()
        .sigma(3.0)
        .edges(EdgeMode::Reflect)
        .build()
        .unwrap();
    let (mut a, mut b) = (f.clone(), f.clone());
    device.blur_image(&g, &mut a).unwrap();
    g.blur_image(&mut b).unwrap();
    let worst = a
        .to_rgb32f()
        .iter()
        .zip(b.to_rgb32f().iter())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-4, "float image: {worst}");
    // Planes.
    let planes: Vec<f32> = noise(3 * 40 * 50, 5).iter().map(|&v| v as f32).collect();
    let (mut a, mut b) = (planes.clone(), planes.clone());
    device.blur_planar(&g, &mut a, 50, 40).unwrap();
    g.blur_planar(&mut b, 50, 40).unwrap();
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(worst < 1e-4, "planes: {worst}");
    // A 3-D volume, every mode, one and several axes.
    let shape = [9, 20, 17];
    let volume: Vec<f32> = noise(9 * 20 * 17, 11).iter().map(|&v| v as f32).collect();
    for mode in MODES {
        for sigma in [
            [2.0, 3.0, 1.5],
            [2.5, 0.0, 0.0],
            [0.0, 0.0, 4.0],
            [0.0, 3.0, 0.0],
        ] {
            let filter = Filter::new(&sigma).unwrap().mode(mode).cval(0.25);
            let (mut a, mut b) = (volume.clone(), volume.clone());
            device.blur_nd(&filter, &mut a, &shape).unwrap();
            filter.apply(&mut b, &shape).unwrap();
            let worst = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-4, "{mode:?} {sigma:?}: {worst}");
        }
    }
    // Integers go up as f32 and come back rounded as the host rounds them.
    let small: Vec<u16> = volume.iter().map(|&v| (v * 60000.0) as u16).collect();
    let filter = Filter::new(&[1.0, 2.0, 2.0]).unwrap();
    let (mut a, mut b) = (small.clone(), small.clone());
    device.blur_nd(&filter, &mut a, &shape).unwrap();
    filter.apply(&mut b, &shape).unwrap();
    assert!(a.iter().zip(&b).all(|(x, y)| x.abs_diff(*y) <= 1));
    // Raw 16-bit RGBA rows with gaps between them: the rows go up gathered and come back
    // between the gaps, which keep their samples.
    let (w, h, stride) = (61, 45, 61 * 4 + 7);
    let layout = Layout::new(w, h, 4)
        .with_row_stride(stride)
        .with_alpha(true);
    let mut strided = vec![4321u16; layout.len()];
    for (i, v) in noise(w * h * 4, 13).into_iter().enumerate() {
        strided[i / (w * 4) * stride + i % (w * 4)] = (v * 65535.0) as u16;
    }
    let g = Gaussian::new(3.0).unwrap();
    for _ in 0..2 {
        let (mut a, mut b) = (strided.clone(), strided.clone());
        device.blur_interleaved(&g, &mut a, layout).unwrap();
        g.blur_interleaved(&mut b, layout).unwrap();
        let worst = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max();
        assert!(worst <= Some(2), "strided RGBA16: {worst:?} levels apart");
        for y in 0..h - 1 {
            let gap = &a[y * stride + w * 4..(y + 1) * stride];
            assert!(gap.iter().all(|&v| v == 4321), "row {y}'s gap was written");
        }
    }
}

#[test]
fn a_file_blurs_as_the_command_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("api.png"), dir.path().join("cli.png"));
    let options = FileOptions::new(Gaussian::new(4.0).unwrap()).device("rust");
    let report = blur_file(fixture("samples/coffee.png"), &ours, &options).unwrap();
    assert_eq!(report.method(), "recursive");
    assert!(report.passes().iter().any(|p| p.name == "decode"));
    assert!(report.to_json().contains("\"passes\""));
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(&theirs)
        .args(["--sigma", "4", "--device", "rust", "--quiet"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap()
    );
    // A file that is no image: an error naming it, nothing written.
    let bad = dir.path().join("bad.png");
    std::fs::write(&bad, b"not an image").unwrap();
    let e = blur_file(&bad, dir.path().join("x.png"), &options).unwrap_err();
    assert!(matches!(e, Error::Failed { .. }), "{e:?}");
    assert!(!dir.path().join("x.png").exists());
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let g = Gaussian::new(2.0).unwrap();
    let mut short = vec![0u8; 10];
    assert!(matches!(
        g.blur_interleaved(&mut short, Layout::new(4, 4, 1)),
        Err(Error::Buffer(_))
    ));
    assert!(g
        .blur_interleaved(&mut short, Layout::new(2, 2, 3).with_alpha(true))
        .is_err());
    assert!(g
        .blur_interleaved(&mut short, Layout::new(4, 2, 1).with_row_stride(3))
        .is_err());
    let mut planes = vec![0f32; 10];
    assert!(g.blur_planar(&mut planes, 3, 3).is_err());
    let f = Filter::new(&[1.0, 2.0]).unwrap();
    let mut data = vec![0f32; 12];
    assert!(matches!(
        f.apply(&mut data, &[3, 4, 1]),
        Err(Error::Shape(_))
    ));
    assert!(matches!(f.apply(&mut data, &[5, 4]), Err(Error::Buffer(_))));
    assert!(f.clone().truncate(0.0).apply(&mut data, &[3, 4]).is_err());
    assert!(f.clone().cval(f64::NAN).apply(&mut data, &[3, 4]).is_err());
    assert!(f.clone().radius(&[0, 2]).apply(&mut data, &[3, 4]).is_err());
    assert!(matches!(Filter::new(&[-1.0]), Err(Error::Sigma { .. })));
    assert!(Filter::new(&[f64::INFINITY]).is_err());
    assert!(Filter::new(&[2000.0])
        .unwrap()
        .method(Method::Fir)
        .apply(&mut [0f32; 4], &[4])
        .is_err());
    assert!(Device::open("no such device").is_err());
    // Empty arrays and images are fine.
    Filter::new(&[1.0, 1.0])
        .unwrap()
        .apply(&mut [0f32; 0], &[0, 5])
        .unwrap();
    g.blur_interleaved(&mut [0u8; 0], Layout::new(0, 5, 3))
        .unwrap();
}

/// A job's progress callback is told each stage of the whole-image path, or each row of the
/// strip engine up to the image's height, in order, then `done`.
#[test]
fn a_jobs_progress_callback_is_told_every_stage_and_row_then_done() {
    use gblur::command::devices::{DeviceChoice, DeviceSet};
    use gblur::command::job::{run, BlurJob, Engine, Progress};
    use gblur::command::stages::Blur2d;
    use std::sync::{Arc, Mutex};
    let dir = tempfile::tempdir().unwrap();
    let height = image::image_dimensions(fixture("samples/coffee.png"))
        .unwrap()
        .1 as u64;
    let steps_of = |engine: Engine| {
        let steps = Arc::new(Mutex::new(Vec::<Progress>::new()));
        let told = steps.clone();
        let filter = Blur2d::checked(Method::Recursive, 3.0, 3.0).unwrap();
        let mut job = BlurJob::new(
            fixture("samples/coffee.png"),
            dir.path().join("out.png"),
            filter,
        )
        .with_progress_callback(move |step| told.lock().unwrap().push(step));
        job.engine = engine;
        job.device = DeviceSet::One(DeviceChoice::Rust);
        run(&job).unwrap();
        let steps = steps.lock().unwrap().clone();
        steps
    };
    let stage = |stage, done, total| Progress { stage, done, total };
    let whole = steps_of(Engine::Whole);
    assert_eq!(
        whole,
        [
            stage("decode", 0, 3),
            stage("blur", 1, 3),
            stage("encode and write", 2, 3),
            stage("done", 1, 1)
        ]
    );
    let strips = steps_of(Engine::Strips);
    let (done, rows) = strips.split_last().unwrap();
    assert_eq!(*done, stage("done", 1, 1));
    assert!(rows.len() > 1, "{strips:?}");
    assert!(
        rows.iter().all(|s| s.stage == "rows" && s.total == height),
        "{strips:?}"
    );
    assert!(rows.windows(2).all(|w| w[0].done < w[1].done), "{strips:?}");
    assert_eq!(rows.last().unwrap().done, height);
}
