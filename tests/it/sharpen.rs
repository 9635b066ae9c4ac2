//! `gblur sharpen` and `gblur batch --sharpen`: the unsharp mask against its formula computed
//! with an exact Gaussian, its threshold, luminance, alpha, float overshoot, selections and
//! devices, and its refusals.

use crate::common;
use common::{fixture, gblur};
use image::{DynamicImage, GenericImageView, Rgb32FImage};
use std::path::Path;

/// The exact 2-D Gaussian of `plane` (w×h, f64) with clamped edges, radius 8 sigma.
fn exact_blur(plane: &[f64], (w, h): (usize, usize), sigma: f64) -> Vec<f64> {
    let r = (8.0 * sigma).ceil() as i64;
    let taps: Vec<f64> = (-r..=r)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = taps.iter().sum();
    let pass = |src: &[f64], along_x: bool| -> Vec<f64> {
        let mut out = vec![0.0; src.len()];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut acc = 0.0;
                for (t, k) in taps.iter().zip(-r..=r) {
                    let (sx, sy) = match along_x {
                        true => ((x + k).clamp(0, w as i64 - 1), y),
                        false => (x, (y + k).clamp(0, h as i64 - 1)),
                    };
                    acc += t * src[(sy * w as i64 + sx) as usize];
                }
                out[(y * w as i64 + x) as usize] = acc / sum;
            }
        }
        out
    };
    pass(&pass(plane, true), false)
}

/// One channel of an 8-bit RGB image as f64 levels.
fn channel(img: &image::RgbImage, c: usize) -> Vec<f64> {
    img.pixels().map(|p| p.0[c] as f64).collect()
}

fn sharpen(input: &Path, out: &Path, args: &[&str]) {
    gblur()
        .arg("sharpen")
        .arg(input)
        .arg(out)
        .args(args)
        .arg("-q")
        .assert()
        .success();
}

#[test]
fn eight_bit_is_within_one_level_of_the_formula_with_an_exact_gaussian() {
    let dir = tempfile::tempdir().unwrap();
    let input = image::open(fixture("samples/coffee.png"))
        .unwrap()
        .to_rgb8();
    let (w, h) = input.dimensions();
    let small = image::imageops::crop_imm(&input, 0, 0, w.min(160), h.min(120)).to_image();
    let src = dir.path().join("in.png");
    small.save(&src).unwrap();
    let (w, h) = (small.width() as usize, small.height() as usize);
    for (sigma, amount) in [(2.0, 1.0), (5.0, 0.6), (20.0, 2.0)] {
        let out = dir.path().join("out.png");
        sharpen(
            &src,
            &out,
            &[
                "--sigma",
                &sigma.to_string(),
                "--amount",
                &amount.to_string(),
                "--device",
                "rust",
            ],
        );
        let got = image::open(&out).unwrap().to_rgb8();
        let mut worst: f64 = 0.0;
        for c in 0..3 {
            let x = channel(&small, c);
            let b = exact_blur(&x, (w, h), sigma);
            for (i, p) in got.pixels().enumerate() {
                let want = (x[i] + amount * (x[i] - b[i])).clamp(0.0, 255.0);
                worst = worst.max((p.0[c] as f64 - want).abs());
            }
        }
        assert!(
            worst <= 1.0,
            "sigma {sigma} amount {amount}: {worst} levels from the formula"
        );
    }
}

#[test]
fn luminance_is_within_one_level_of_the_formula_with_an_exact_gaussian_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let input = image::open(fixture("samples/coffee.png"))
        .unwrap()
        .to_rgb8();
    let small = image::imageops::crop_imm(&input, 0, 0, 150, 110).to_image();
    let src = dir.path().join("in.png");
    small.save(&src).unwrap();
    let (w, h) = (small.width() as usize, small.height() as usize);
    let luma = |c: [f64; 3]| 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
    let x: Vec<Vec<f64>> = (0..3).map(|c| channel(&small, c)).collect();
    for (sigma, amount, threshold) in [(2.0, 1.5, 0.0), (6.0, 0.8, 0.02)] {
        let out = dir.path().join("out.png");
        let v = common::json_report(
            gblur()
                .arg("sharpen")
                .arg(&src)
                .arg(&out)
                .args([
                    "--sigma",
                    &sigma.to_string(),
                    "--amount",
                    &amount.to_string(),
                ])
                .args(["--threshold", &threshold.to_string(), "--luminance"])
                .args(["--device", "rust", "--json", "-q"]),
        );
        assert!(v["pipeline"].as_str().unwrap().contains("in place"), "{v}");
        let got = image::open(&out).unwrap().to_rgb8();
        let b: Vec<Vec<f64>> = x.iter().map(|p| exact_blur(p, (w, h), sigma)).collect();
        let mut worst: f64 = 0.0;
        for (i, p) in got.pixels().enumerate() {
            let o = [x[0][i], x[1][i], x[2][i]];
            let diff = luma(o) - luma([b[0][i], b[1][i], b[2][i]]);
            // Differences within a level of the threshold may fall either side of it.
            if (diff.abs() - threshold * 255.0).abs() < 1.0 {
                continue;
            }
            let dy = if diff.abs() > threshold * 255.0 {
                amount * diff
            } else {
                0.0
            };
            for (&got, o) in p.0.iter().zip(o) {
                let want = (o + dy).clamp(0.0, 255.0);
                worst = worst.max((got as f64 - want).abs());
            }
        }
        assert!(
            worst <= 1.0,
            "sigma {sigma} amount {amount}: {worst} levels from the formula"
        );
    }
}

#[test]
fn the_threshold_leaves_small_differences_and_luminance_adds_one_delta_to_each_channel() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("samples/coffee.png");
    let input = image::open(&src).unwrap().to_rgb8();
    let d = |n: &str| dir.path().join(n);
    sharpen(&src, &d("t.png"), &["--sigma", "3", "--threshold", "0.05"]);
    sharpen(&src, &d("all.png"), &["--sigma", "3"]);
    let (t, all) = (
        image::open(d("t.png")).unwrap().to_rgb8(),
        image::open(d("all.png")).unwrap().to_rgb8(),
    );
    let kept = t
        .pixels()
        .zip(input.pixels())
        .filter(|(a, b)| a == b)
        .count();
    let kept_all = all
        .pixels()
        .zip(input.pixels())
        .filter(|(a, b)| a == b)
        .count();
    assert!(
        kept > kept_all * 2 && kept > 1000,
        "the threshold kept {kept} pixels, none {kept_all}"
    );
    sharpen(
        &src,
        &d("l.png"),
        &["--sigma", "3", "--amount", "1.5", "--luminance"],
    );
    let l = image::open(d("l.png")).unwrap().to_rgb8();
    let mut spread = 0;
    for (p, q) in l.pixels().zip(input.pixels()) {
        let delta: Vec<i32> = (0..3).map(|c| p.0[c] as i32 - q.0[c] as i32).collect();
        // Clipped channels aside, the three deltas are one delta, rounded.
        if p.0.iter().all(|&v| v > 0 && v < 255) {
            spread = spread.max(delta.iter().max().unwrap() - delta.iter().min().unwrap());
        }
    }
    assert!(spread <= 1, "luminance deltas {spread} apart");
    assert_ne!(l, all, "luminance sharpening differs from every channel's");
}

#[test]
fn alpha_is_kept_float_overshoots_and_a_region_bounds_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let rgba = fixture("samples/chelsea-rgba.png");
    sharpen(&rgba, &d("a.png"), &["--sigma", "2", "--amount", "2"]);
    let (inp, out) = (
        image::open(&rgba).unwrap().to_rgba8(),
        image::open(d("a.png")).unwrap().to_rgba8(),
    );
    assert!(
        inp.pixels()
            .zip(out.pixels())
            .all(|(a, b)| a.0[3] == b.0[3]),
        "alpha changed"
    );
    assert_ne!(inp, out);
    // A float step sharpened overshoots below 0 and above 1 and keeps it.
    let step = Rgb32FImage::from_fn(40, 8, |x, _| {
        image::Rgb([if x < 20 { 0.0 } else { 1.0 }; 3])
    });
    DynamicImage::ImageRgb32F(step).save(d("step.tif")).unwrap();
    sharpen(&d("step.tif"), &d("s.tif"), &["--sigma", "2"]);
    let s = image::open(d("s.tif")).unwrap().to_rgb32f();
    let (lo, hi) = s.pixels().fold((f32::MAX, f32::MIN), |(lo, hi), p| {
        (lo.min(p.0[0]), hi.max(p.0[0]))
    });
    assert!(lo < -0.05 && hi > 1.05, "float overshoot kept: {lo} {hi}");
    // Outside the region every sample is the input's.
    sharpen(
        &rgba,
        &d("r.png"),
        &["--sigma", "2", "--region", "10,10,30,30"],
    );
    let r = image::open(d("r.png")).unwrap().to_rgba8();
    assert_eq!(r.get_pixel(100, 100), inp.get_pixel(100, 100));
    assert_eq!(r.get_pixel(20, 20), out.get_pixel(20, 20));
}

#[test]
fn the_device_the_batch_and_the_main_command_agree() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let src = fixture("samples/coffee.png");
    sharpen(&src, &d("rust.png"), &["--sigma", "4", "--device", "rust"]);
    sharpen(&src, &d("cpu.png"), &["--sigma", "4", "--device", "cpu"]);
    let (a, b) = (
        image::open(d("rust.png")).unwrap().to_rgb8(),
        image::open(d("cpu.png")).unwrap().to_rgb8(),
    );
    let worst = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| x.abs_diff(*y))
        .max()
        .unwrap();
    assert!(worst <= 1, "device {worst} levels from the Rust path");
    let (in_dir, out_dir) = (d("in"), d("out"));
    std::fs::create_dir(&in_dir).unwrap();
    std::fs::copy(&src, in_dir.join("coffee.png")).unwrap();
    gblur()
        .args(["batch"])
        .args([&in_dir, &out_dir])
        .args(["--sigma", "4", "--device", "rust", "--sharpen", "-q"])
        .assert()
        .success();
    assert_eq!(
        std::fs::read(out_dir.join("coffee.png")).unwrap(),
        std::fs::read(d("rust.png")).unwrap()
    );
    // Sharpening settings without --sharpen, and exclude, are refused.
    gblur()
        .args(["batch"])
        .args([&in_dir, &d("x")])
        .args(["--sigma", "4", "--amount", "2"])
        .assert()
        .code(2);
    gblur()
        .arg("sharpen")
        .arg(&src)
        .arg(d("x.png"))
        .args([
            "--sigma",
            "4",
            "--mask",
            "tests/fixtures/gray16_7x5.png",
            "--mask-mode",
            "exclude",
        ])
        .assert()
        .code(2);
    gblur()
        .arg("sharpen")
        .arg(&src)
        .arg(d("x.png"))
        .args(["--sigma", "4", "--engine", "strips"])
        .assert()
        .code(2);
}

#[test]
fn the_report_names_the_sharpening() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let v = common::json_report(
        gblur()
            .arg("sharpen")
            .arg(fixture("samples/coffee.png"))
            .arg(&out)
            .args(["--sigma", "2", "--amount", "0.5", "--json", "-q"]),
    );
    let pipeline = v["pipeline"].as_str().unwrap();
    assert!(
        pipeline.contains("sharpened (amount 0.5, threshold 0)"),
        "{pipeline}"
    );
    // In place on the Rust path, luma alone too; with alpha, planar f32 and a pass of its own.
    assert!(pipeline.contains("in place"), "{pipeline}");
    let v = common::json_report(
        gblur()
            .arg("sharpen")
            .arg(fixture("samples/chelsea-rgba.png"))
            .arg(&out)
            .args(["--sigma", "2", "--luminance", "--json", "-q"]),
    );
    let names: Vec<&str> = v["passes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"sharpen"), "{names:?}");
    let _ = image::open(&out).unwrap().dimensions();
}
