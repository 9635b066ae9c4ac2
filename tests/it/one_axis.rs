//! One axis blurred, the other left alone: `--sigma-x S` or `--sigma-y S` alone, or sigma 0
//! on an axis (scipy's rule), on the Rust path and an OpenCL device, against an exact 1-D
//! Gaussian.

use crate::common;
use common::{fixture, gblur};
use image::{DynamicImage, GenericImageView};
use std::path::Path;

/// An exact 1-D Gaussian (f64, radius 8 sigma, normalised) along x or y of every channel of
/// `img`, with `mode` (clamp or reflect) beyond the edges, in the image's own levels.
fn exact(img: &DynamicImage, sigma: f64, along_x: bool, reflect: bool) -> Vec<f64> {
    let (w, h) = img.dimensions();
    let c = img.color().channel_count() as usize;
    let full = if img.color().bytes_per_pixel() as usize == c {
        255.0
    } else {
        65535.0
    };
    let src: Vec<f64> = img
        .to_rgba32f()
        .pixels()
        .flat_map(|p| p.0)
        .map(|v| v as f64)
        .collect();
    let r = (8.0 * sigma).ceil() as i64;
    let taps: Vec<f64> = (-r..=r)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = taps.iter().sum();
    let n = if along_x { w as i64 } else { h as i64 };
    let source = |i: i64| -> i64 {
        if reflect {
            let m = i.rem_euclid(2 * n);
            if m < n {
                m
            } else {
                2 * n - 1 - m
            }
        } else {
            i.clamp(0, n - 1)
        }
    };
    let mut out = Vec::with_capacity((w * h) as usize * c);
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            for ch in 0..c {
                let mut acc = 0.0;
                for (t, k) in taps.iter().zip(-r..=r) {
                    let (sx, sy) = match along_x {
                        true => (source(x + k), y),
                        false => (x, source(y + k)),
                    };
                    acc += t * src[((sy * w as i64 + sx) * 4) as usize + ch.min(3)];
                }
                out.push(acc / sum * full);
            }
        }
    }
    out
}

fn levels(img: &DynamicImage) -> Vec<f64> {
    match img {
        DynamicImage::ImageRgb8(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageLuma8(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageRgb16(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        other => panic!("unexpected {:?}", other.color()),
    }
}

fn run(input: &Path, out: &Path, args: &[&str]) -> serde_json::Value {
    let done = gblur()
        .arg(input)
        .arg(out)
        .args(args)
        .args(["--json", "-q"])
        .assert()
        .success();
    serde_json::from_slice(&done.get_output().stdout).unwrap()
}

fn blur_passes(report: &serde_json::Value) -> Vec<String> {
    report["passes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["stage"] == "blur")
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn one_sigma_alone_blurs_that_axis_only_within_half_a_level() {
    let dir = tempfile::tempdir().unwrap();
    let sample = fixture("samples/coffee.png");
    let input = image::open(&sample).unwrap();
    // A 16-bit copy too.
    let sixteen = dir.path().join("in16.png");
    DynamicImage::ImageRgb16(input.to_rgb16())
        .save(&sixteen)
        .unwrap();
    for (path, img) in [
        (sample.clone(), input.clone()),
        (sixteen.clone(), image::open(&sixteen).unwrap()),
    ] {
        for (flag, along_x) in [("--sigma-x", true), ("--sigma-y", false)] {
            for (edge, reflect) in [("clamp", false), ("reflect", true)] {
                let out = dir.path().join("out.png");
                let report = run(
                    &path,
                    &out,
                    &[flag, "4", "--device", "rust", "--edge", edge],
                );
                let got = levels(&image::open(&out).unwrap());
                let want = exact(&img, 4.0, along_x, reflect);
                let full = if matches!(img, DynamicImage::ImageRgb16(_)) {
                    65535.0
                } else {
                    255.0
                };
                let worst = got
                    .iter()
                    .zip(&want)
                    .map(|(g, w)| (g - w).abs())
                    .fold(0.0, f64::max);
                // Within the recursive filter's error (5.7e-4 of the range) and rounding.
                assert!(
                    worst <= 0.5 + 6e-4 * full,
                    "{flag} {edge} {path:?}: {worst} levels"
                );
                let passes = blur_passes(&report);
                let (name, other) = match along_x {
                    true => ("rows (x)", "columns (y)"),
                    false => ("columns (y)", "rows (x)"),
                };
                assert!(passes.iter().any(|p| p == name), "{flag}: {passes:?}");
                assert!(
                    !passes.iter().any(|p| p == other),
                    "{flag}: the other axis is not filtered: {passes:?}"
                );
            }
        }
    }
}

#[test]
fn sigma_zero_leaves_its_axis_and_zero_everywhere_leaves_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let sample = fixture("samples/coffee.png");
    let d = |n: &str| dir.path().join(n);
    run(&sample, &d("alone.png"), &["--sigma-x", "3"]);
    run(&sample, &d("zero.png"), &["--sigma", "3", "--sigma-y", "0"]);
    run(
        &sample,
        &d("both.png"),
        &["--sigma-x", "3", "--sigma-y", "0"],
    );
    let alone = image::open(d("alone.png")).unwrap();
    assert_eq!(alone, image::open(d("zero.png")).unwrap());
    assert_eq!(alone, image::open(d("both.png")).unwrap());
    run(&sample, &d("none.png"), &["--sigma", "0"]);
    assert_eq!(
        image::open(d("none.png")).unwrap(),
        image::open(&sample).unwrap()
    );
    // Negative and tiny non-zero sigmas stay errors.
    for bad in ["-1", "0.0005"] {
        gblur()
            .arg(&sample)
            .arg(d("bad.png"))
            .args(["--sigma-x", bad])
            .assert()
            .code(2);
    }
}

#[test]
fn one_axis_with_alpha_a_selection_and_on_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    let rgba = fixture("samples/chelsea-rgba.png");
    // Alpha: premultiplied, as the 2-D blur; a selection: outside it the input stays.
    run(&rgba, &d("a.png"), &["--sigma-y", "5", "--device", "rust"]);
    run(
        &rgba,
        &d("r.png"),
        &[
            "--sigma-y",
            "5",
            "--region",
            "10,10,40,30",
            "--device",
            "rust",
        ],
    );
    let (input, region) = (
        image::open(&rgba).unwrap().to_rgba8(),
        image::open(d("r.png")).unwrap().to_rgba8(),
    );
    let blurred = image::open(d("a.png")).unwrap().to_rgba8();
    assert_eq!(region.get_pixel(100, 100), input.get_pixel(100, 100));
    assert_eq!(region.get_pixel(20, 20), blurred.get_pixel(20, 20));
    common::require_opencl();
    run(&rgba, &d("dev.png"), &["--sigma-y", "5", "--device", "cpu"]);
    let on_device = image::open(d("dev.png")).unwrap().to_rgba8();
    let worst = on_device
        .as_raw()
        .iter()
        .zip(blurred.as_raw())
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(worst <= 1, "device and Rust path {worst} levels apart");
}
