//! Blurring part of an image (`--region`, `--mask`, `--feather`, `--mask-mode`) and
//! `--nan ignore`, through the command line on every path: every sample outside the selection
//! is the input's bit for bit, a grey mask blends by its value, `exclude` lets nothing from
//! outside the selection into the blur, and `--nan ignore` is the normalised convolution over
//! the valid samples.

use crate::common;

use common::gblur;
use image::{DynamicImage, GrayImage, Luma, Rgb, Rgb32FImage, RgbImage, Rgba, RgbaImage};
use std::path::{Path, PathBuf};

/// Every path a masked blur can take here: the banded Rust blur, the planar reference (the
/// FIR on the Rust path), and the OpenCL pipelines on PoCL.
fn paths() -> Vec<Vec<&'static str>> {
    let mut paths = vec![
        vec!["--device", "rust"],
        vec!["--device", "rust", "--method", "fir"],
    ];
    common::require_opencl();
    for p in ["direct", "transpose", "blocked"] {
        paths.push(vec!["--device", "cpu", "--pipeline", p]);
    }
    paths
}

fn noise_rgb(w: u32, h: u32, seed: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let v = (x * 73 + y * 151 + seed * 29) ^ (x * y + seed);
        Rgb([(v % 251) as u8, (v / 3 % 241) as u8, (v / 7 % 239) as u8])
    })
}

fn inputs(dir: &Path) -> Vec<(PathBuf, DynamicImage)> {
    let rgb = noise_rgb(40, 30, 1);
    let gray16 = image::ImageBuffer::<Luma<u16>, Vec<u16>>::from_fn(40, 30, |x, y| {
        Luma([((x * 7919 + y * 104_729) % 65_536) as u16])
    });
    let rgba = RgbaImage::from_fn(40, 30, |x, y| {
        let p = rgb.get_pixel(x, y).0;
        Rgba([p[0], p[1], p[2], ((x * 13 + y * 7) % 256) as u8])
    });
    let float = Rgb32FImage::from_fn(40, 30, |x, y| {
        Rgb([x as f32 * 0.1, y as f32 * -0.3 + 2.0, ((x * y) % 7) as f32])
    });
    let images: Vec<(&str, DynamicImage)> = vec![
        ("rgb8.png", rgb.into()),
        ("gray16.png", gray16.into()),
        ("rgba8.png", rgba.into()),
        ("rgbf32.exr", float.into()),
    ];
    images
        .into_iter()
        .map(|(name, img)| {
            let path = dir.join(name);
            img.save(&path).unwrap();
            (path, img)
        })
        .collect()
}

/// Runs gblur and returns the decoded output.
fn run(input: &Path, out: &Path, args: &[&str]) -> DynamicImage {
    gblur()
        .arg(input)
        .arg(out)
        .args(args)
        .arg("-q")
        .assert()
        .success();
    image::open(out).unwrap()
}

/// Samples of pixel (x, y), as bits, so that f32 samples compare exactly.
fn pixel_bits(img: &DynamicImage, x: u32, y: u32) -> Vec<u32> {
    let c = img.color().channel_count() as usize;
    let i = (y as usize * img.width() as usize + x as usize) * c;
    match img {
        DynamicImage::ImageRgb32F(b) => b.as_raw()[i..i + c].iter().map(|v| v.to_bits()).collect(),
        DynamicImage::ImageRgba32F(b) => b.as_raw()[i..i + c].iter().map(|v| v.to_bits()).collect(),
        DynamicImage::ImageLuma16(b) => b.as_raw()[i..i + c].iter().map(|v| *v as u32).collect(),
        _ => img.as_bytes()[i..i + c].iter().map(|v| *v as u32).collect(),
    }
}

#[test]
fn outside_the_selection_every_sample_is_the_input_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let grey = GrayImage::from_fn(40, 30, |x, _| Luma([if x < 20 { 0 } else { 200 }]));
    let mask = dir.path().join("mask.png");
    grey.save(&mask).unwrap();
    for (input, src) in inputs(dir.path()) {
        let ext = input.extension().unwrap().to_str().unwrap().to_string();
        let integer = !matches!(src, DynamicImage::ImageRgb32F(_));
        for path in paths() {
            for mode in ["blend", "exclude"] {
                for linear in [false, true] {
                    if linear && !integer {
                        continue;
                    }
                    let what = format!("{} {path:?} {mode} linear={linear}", input.display());
                    let out = dir.path().join(format!("out.{ext}"));
                    let mut args = vec!["-s", "3", "--mask-mode", mode];
                    args.extend(&path);
                    if linear {
                        args.push("--linear");
                    }
                    // Two rectangles, one partly outside the image (clipped).
                    let mut with = args.clone();
                    with.extend(["--region", "5,4,10,8", "--region", "30,-5,20,12"]);
                    let got = run(&input, &out, &with);
                    let mut changed = 0;
                    for (x, y, _) in src.to_rgba8().enumerate_pixels() {
                        let inside =
                            (5..15).contains(&x) && (4..12).contains(&y) || x >= 30 && y < 7;
                        if inside {
                            changed += (pixel_bits(&got, x, y) != pixel_bits(&src, x, y)) as u32;
                        } else {
                            assert_eq!(
                                pixel_bits(&got, x, y),
                                pixel_bits(&src, x, y),
                                "{what} ({x}, {y})"
                            );
                        }
                    }
                    assert!(
                        changed > 40,
                        "{what}: only {changed} selected pixels changed"
                    );
                    // A mask: its zero half is untouched.
                    let mut with = args.clone();
                    with.extend(["--mask", mask.to_str().unwrap()]);
                    let got = run(&input, &out, &with);
                    for (x, y, _) in src.to_rgba8().enumerate_pixels() {
                        if x < 20 {
                            assert_eq!(
                                pixel_bits(&got, x, y),
                                pixel_bits(&src, x, y),
                                "{what} mask ({x}, {y})"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn feathered_edges_leave_pixels_beyond_them_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    let src = noise_rgb(64, 48, 3);
    src.save(&input).unwrap();
    let out = dir.path().join("out.png");
    let got = run(
        &input,
        &out,
        &["-s", "2", "--region", "20,16,24,16", "--feather", "4"],
    );
    let got = got.to_rgb8();
    let mut softened = 0;
    for (x, y, p) in got.enumerate_pixels() {
        // Distance outside the rectangle, in pixels.
        let dx = (20i32 - x as i32).max(x as i32 - 43).max(0);
        let dy = (16i32 - y as i32).max(y as i32 - 31).max(0);
        if dx.max(dy) >= 7 {
            assert_eq!(p, src.get_pixel(x, y), "({x}, {y}) is beyond the feather");
        } else if dx.max(dy) >= 1 && p != src.get_pixel(x, y) {
            softened += 1;
        }
    }
    assert!(
        softened > 50,
        "the feather reaches outside the rectangle: {softened}"
    );
}

#[test]
fn a_grey_mask_blends_the_blur_in_by_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    let src = noise_rgb(48, 32, 5);
    src.save(&input).unwrap();
    let blurred = run(&input, &dir.path().join("full.png"), &["-s", "4"]).to_rgb8();
    for (level, mask_kind) in [
        (0u16, "8"),
        (128, "8"),
        (255, "8"),
        (40_000, "16"),
        (65_535, "16"),
    ] {
        let mask = dir.path().join(format!("mask{level}.png"));
        let m = if mask_kind == "8" {
            GrayImage::from_pixel(48, 32, Luma([level as u8]))
                .save(&mask)
                .unwrap();
            level as f32 / 255.0
        } else {
            image::ImageBuffer::<Luma<u16>, Vec<u16>>::from_pixel(48, 32, Luma([level]))
                .save(&mask)
                .unwrap();
            level as f32 / 65535.0
        };
        let got = run(
            &input,
            &dir.path().join("out.png"),
            &["-s", "4", "--mask", mask.to_str().unwrap()],
        );
        let got = got.to_rgb8();
        for ((a, b), o) in src.iter().zip(blurred.iter()).zip(got.iter()) {
            let (a, b) = (*a as f32, *b as f32);
            let want = (a + m * (b - a) + 0.5) as u8;
            assert_eq!(*o, want, "mask {level}/{mask_kind}-bit: in {a} blurred {b}");
        }
    }
}

/// A white disc on black, its background selected (the disc excluded), blurred: the largest
/// value in the ring of pixels just outside the disc.
fn disc_leak(dir: &Path, mode: &str, path: &[&str]) -> u8 {
    let (n, r) = (96u32, 24.0f32);
    let dist = |x: u32, y: u32| ((x as f32 - 47.5).powi(2) + (y as f32 - 47.5).powi(2)).sqrt();
    let disc = GrayImage::from_fn(n, n, |x, y| Luma([if dist(x, y) <= r { 255 } else { 0 }]));
    let background = GrayImage::from_fn(n, n, |x, y| Luma([if dist(x, y) <= r { 0 } else { 255 }]));
    let (input, mask) = (dir.join("disc.png"), dir.join("bg.png"));
    disc.save(&input).unwrap();
    background.save(&mask).unwrap();
    let mut args = vec![
        "-s",
        "5",
        "--mask",
        mask.to_str().unwrap(),
        "--mask-mode",
        mode,
    ];
    args.extend(path);
    let got = run(&input, &dir.join("out.png"), &args).to_luma8();
    for (x, y, p) in got.enumerate_pixels() {
        if dist(x, y) <= r {
            assert_eq!(p.0[0], 255, "the excluded disc is untouched");
        }
    }
    got.enumerate_pixels()
        .filter(|(x, y, _)| (r..r + 4.0).contains(&dist(*x, *y)) && dist(*x, *y) > r)
        .map(|(_, _, p)| p.0[0])
        .max()
        .unwrap()
}

#[test]
fn exclude_leaks_nothing_of_the_unselected_disc_and_blend_does() {
    let dir = tempfile::tempdir().unwrap();
    for path in paths() {
        let blend = disc_leak(dir.path(), "blend", &path);
        let exclude = disc_leak(dir.path(), "exclude", &path);
        assert!(blend > 60, "{path:?}: blend spreads the disc ({blend})");
        assert_eq!(exclude, 0, "{path:?}: exclude leaks {exclude}");
    }
}

/// The sampled-Gaussian FIR along one axis with clamped edges: what `--method fir` runs.
fn fir(plane: &[f64], (w, h): (usize, usize), sigma: f64, along_x: bool) -> Vec<f64> {
    // The sampled Gaussian of radius ceil(5 sigma), normalised (`--method fir`'s taps).
    let radius = (5.0 * sigma).ceil().max(1.0) as i64;
    let weights: Vec<f64> = (-radius..=radius)
        .map(|k| (-((k * k) as f64) / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let taps: Vec<f32> = weights.iter().map(|w| (w / total) as f32).collect();
    let r = (taps.len() / 2) as isize;
    let mut out = vec![0.0; plane.len()];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0.0;
            for (k, t) in taps.iter().enumerate() {
                let d = k as isize - r;
                let (sx, sy) = if along_x {
                    ((x as isize + d).clamp(0, w as isize - 1) as usize, y)
                } else {
                    (x, (y as isize + d).clamp(0, h as isize - 1) as usize)
                };
                s += *t as f64 * plane[sy * w + sx];
            }
            out[y * w + x] = s;
        }
    }
    out
}

#[test]
fn nan_ignore_is_the_normalised_convolution_over_the_valid_samples() {
    // Scattered NaN and ±Inf by sample, then by whole pixels (nodata: the Rust path then
    // carries the weight as alpha, `weights::nan_as_alpha`).
    for by_pixel in [false, true] {
        nan_ignore_matches_the_normalised_convolution(by_pixel);
    }
}

fn nan_ignore_matches_the_normalised_convolution(by_pixel: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (48usize, 40usize);
    // Scattered NaN and ±Inf, and a 22×22 hole far wider than the blur in one corner.
    let hole = |x: usize, y: usize| x >= 26 && y >= 18;
    let img = Rgb32FImage::from_fn(w as u32, h as u32, |x, y| {
        let (x, y) = (x as usize, y as usize);
        let v = |c: usize| ((x * 3 + y * 5 + c * 7) % 11) as f32 * 0.25 - 0.5;
        let bad = |c: usize| (x * 7 + y * 3 + if by_pixel { 0 } else { c }).is_multiple_of(9);
        let s = |c: usize| {
            if hole(x, y) {
                f32::NAN
            } else if bad(c) {
                [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][(x + y) % 3]
            } else {
                v(c)
            }
        };
        Rgb([s(0), s(1), s(2)])
    });
    let input = dir.path().join("holes.exr");
    DynamicImage::ImageRgb32F(img.clone()).save(&input).unwrap();
    let sigma = 1.5;
    let mut paths = paths();
    paths[0].extend(["--method", "recursive"]);
    for path in paths {
        let exact = path.contains(&"fir");
        let tolerance = if exact { 1e-5 } else { 5e-3 };
        let mut args = vec!["-s", "1.5", "--nan", "ignore"];
        args.extend(&path);
        let got = run(&input, &dir.path().join("out.exr"), &args).to_rgb32f();
        for c in 0..3 {
            let valid: Vec<f64> = img
                .pixels()
                .map(|p| p.0[c].is_finite() as u8 as f64)
                .collect();
            let value: Vec<f64> = img
                .pixels()
                .map(|p| {
                    if p.0[c].is_finite() {
                        p.0[c] as f64
                    } else {
                        0.0
                    }
                })
                .collect();
            let blur = |p: &[f64]| fir(&fir(p, (w, h), sigma, true), (w, h), sigma, false);
            let (num, den) = (blur(&value), blur(&valid));
            for y in 0..h {
                for x in 0..w {
                    let (i, o) = (y * w + x, got.get_pixel(x as u32, y as u32).0[c]);
                    let input = img.get_pixel(x as u32, y as u32).0[c];
                    if !exact && den[i] < 0.05 {
                        // The recursive filter's weight near the threshold differs from the
                        // sampled Gaussian's by its own error; the FIR run checks the rule.
                        continue;
                    }
                    if den[i] < 1e-3 {
                        // Nothing valid reaches it: the input sample, bit for bit.
                        let at = format!("{path:?} by pixel {by_pixel} ({x}, {y}, {c})");
                        assert_eq!(o.to_bits(), input.to_bits(), "{at}");
                        assert!(hole(x, y), "({x}, {y}) is reached by valid samples");
                    } else {
                        let want = num[i] / den[i];
                        assert!(
                            (o as f64 - want).abs() < tolerance,
                            "{path:?} by pixel {by_pixel} ({x}, {y}, {c}): {o} vs {want}"
                        );
                    }
                }
            }
        }
        // The hole's centre stays NaN; its edge is filled.
        assert!(got.get_pixel(40, 32).0[0].is_nan());
        assert!(got.get_pixel(27, 19).0[0].is_finite());
    }
}

#[test]
fn nan_ignore_on_an_integer_image_does_nothing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    noise_rgb(20, 10, 2).save(&input).unwrap();
    let plain = run(&input, &dir.path().join("a.png"), &["-s", "2"]);
    let out = dir.path().join("b.png");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "2", "--nan", "ignore"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "--nan ignore: Rgb8 samples cannot be NaN",
        ));
    assert_eq!(image::open(&out).unwrap(), plain);
}

#[test]
fn bad_selections_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    noise_rgb(20, 10, 2).save(&input).unwrap();
    let small = dir.path().join("small.png");
    GrayImage::new(8, 8).save(&small).unwrap();
    let out = dir.path().join("out.png");
    let cases: [(&[&str], &str); 6] = [
        (&["--mask", small.to_str().unwrap()], "the mask is 8×8 but"),
        (
            &["--mask", "/nonexistent/m.png"],
            "--mask /nonexistent/m.png: cannot read",
        ),
        (&["--region", "1,2,3"], "is not x,y,w,h"),
        (&["--region", "1,2,0,4"], "is not x,y,w,h"),
        (
            &["--region", "20,0,5,5"],
            "lies wholly outside the 20×10 image",
        ),
        (
            &["--feather", "3"],
            "--region <X,Y,W,H|WxH+X+Y>|--mask <MASK>",
        ),
    ];
    for (args, message) in cases {
        let assert = gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "2"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        if message.contains("mask is") {
            assert!(
                stderr.contains("small.png") && stderr.contains("20×10"),
                "{stderr}"
            );
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
        assert!(!out.exists(), "{args:?} wrote an output");
    }
}

#[test]
fn batch_applies_one_mask_to_every_image_and_fails_only_the_misfits() {
    let dir = tempfile::tempdir().unwrap();
    let (in_dir, out_dir) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir_all(&in_dir).unwrap();
    let (a, b) = (noise_rgb(32, 24, 1), noise_rgb(32, 24, 2));
    a.save(in_dir.join("a.png")).unwrap();
    b.save(in_dir.join("b.png")).unwrap();
    noise_rgb(16, 16, 3).save(in_dir.join("small.png")).unwrap();
    let mask = dir.path().join("mask.png");
    GrayImage::from_fn(32, 24, |x, _| Luma([if x < 16 { 0 } else { 255 }]))
        .save(&mask)
        .unwrap();
    gblur()
        .arg("batch")
        .args([&in_dir, &out_dir])
        .args([
            "-s",
            "3",
            "--mask",
            mask.to_str().unwrap(),
            "--mask-mode",
            "exclude",
        ])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("the mask is 32×24 but"))
        .stderr(predicates::str::contains("small.png is 16×16"));
    for (name, src) in [("a.png", a), ("b.png", b)] {
        let got = image::open(out_dir.join(name)).unwrap().to_rgb8();
        let mut changed = 0;
        for (x, y, p) in got.enumerate_pixels() {
            if x < 16 {
                assert_eq!(p, src.get_pixel(x, y), "{name} ({x}, {y})");
            } else {
                changed += (p != src.get_pixel(x, y)) as u32;
            }
        }
        assert!(changed > 100, "{name}: the selected half is blurred");
    }
    assert!(!out_dir.join("small.png").exists());
}

/// An edge mode extends the image and its selection together: a region touching the border
/// takes the same blur as the whole image with that edge mode, everything outside it stays the
/// input's, and with `exclude` the unselected pixels' mirror images stay unselected.
#[test]
fn a_selection_takes_the_edge_mode_of_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.png");
    let img = DynamicImage::ImageRgb8(noise_rgb(40, 30, 7));
    img.save(&input).unwrap();
    for path in paths() {
        for edge in ["reflect", "wrap", "constant=0.5"] {
            let mut args = path.clone();
            args.extend(["--sigma", "3", "--edge", edge]);
            let whole = run(&input, &dir.path().join("whole.png"), &args);
            args.extend(["--region", "0,0,12,30"]);
            let part = run(&input, &dir.path().join("part.png"), &args);
            for (x, y) in [(0, 0), (5, 29), (11, 15), (12, 0), (39, 29), (25, 10)] {
                let want = if x < 12 { &whole } else { &img };
                assert_eq!(
                    pixel_bits(&part, x, y),
                    pixel_bits(want, x, y),
                    "{path:?} --edge {edge}: pixel ({x}, {y})"
                );
            }
        }
    }
    // A black frame around a white square, the frame excluded: the reflected frame is excluded
    // too, so the square's blur sees only white and it stays white to its border.
    let square = GrayImage::from_fn(30, 30, |x, y| {
        let inside = (5..25).contains(&x) && (5..25).contains(&y);
        Luma([if inside { 255 } else { 0 }])
    });
    let (sq, mask) = (dir.path().join("sq.png"), dir.path().join("mask.png"));
    square.save(&sq).unwrap();
    square.save(&mask).unwrap();
    let args = [
        "--sigma",
        "4",
        "--edge",
        "reflect",
        "--mask",
        mask.to_str().unwrap(),
        "--mask-mode",
        "exclude",
        "--device",
        "rust",
    ];
    let out = run(&sq, &dir.path().join("sq_out.png"), &args).to_luma8();
    assert!((5..25).all(|i| out.get_pixel(i, 5)[0] == 255 && out.get_pixel(5, i)[0] == 255));
}

/// Runs gblur with `--json` and returns the decoded output and the pipeline the report names.
fn run_reported(input: &Path, out: &Path, args: &[&str]) -> (DynamicImage, String) {
    let assert = gblur()
        .arg(input)
        .arg(out)
        .args(args)
        .args(["--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    let pipeline = report["pipeline"].as_str().unwrap().to_string();
    (image::open(out).unwrap(), pipeline)
}

/// Whether two pixels' samples agree to within one 8-bit level, or a relative 1e-5 for f32.
fn near(a: &DynamicImage, b: &DynamicImage, x: u32, y: u32) -> bool {
    let (pa, pb) = (pixel_bits(a, x, y), pixel_bits(b, x, y));
    match a {
        DynamicImage::ImageRgb32F(_) => pa.iter().zip(&pb).all(|(p, q)| {
            let (p, q) = (f32::from_bits(*p), f32::from_bits(*q));
            (p - q).abs() <= 1e-5 * (1.0 + p.abs())
        }),
        _ => pa.iter().zip(&pb).all(|(p, q)| p.abs_diff(*q) <= 1),
    }
}

/// A selection far smaller than the image is blurred within its bounding box grown by the
/// filter's reach: its pixels come out as the whole-image path makes them (to within one
/// level: the band boundaries of the banded blur fall elsewhere), at the image's corners and
/// inside it, with every edge mode, and every other pixel is the input's bit for bit. The
/// whole-image reference for `blend` is the unmasked blur; for `exclude` the same selection
/// with two one-pixel boxes added far from it (beyond any reach, also through the edge
/// mode's mirror or wrap), which spread the selection over the image.
#[test]
fn a_small_selection_is_blurred_within_its_window_as_the_whole_image_is() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (200, 150);
    let rgb = noise_rgb(w, h, 11);
    let rgba = RgbaImage::from_fn(w, h, |x, y| {
        let p = rgb.get_pixel(x, y).0;
        Rgba([p[0], p[1], p[2], ((x * 13 + y * 7) % 256) as u8])
    });
    let float = Rgb32FImage::from_fn(w, h, |x, y| {
        Rgb([
            (x % 17) as f32 * 0.1,
            y as f32 * -0.3 + 2.0,
            ((x * y) % 7) as f32,
        ])
    });
    let images: Vec<(&str, DynamicImage)> = vec![
        ("rgb8.png", rgb.into()),
        ("rgba8.png", rgba.into()),
        ("rgbf32.exr", float.into()),
    ];
    // (region, far boxes that make the selection span the image, whether the region lies
    // inside, away from the borders)
    let regions = [
        ("0,0,20,16", ["199,80,1,1", "100,149,1,1"], false),
        ("185,138,15,12", ["0,60,1,1", "90,0,1,1"], false),
        ("90,60,12,10", ["0,0,1,1", "199,149,1,1"], true),
    ];
    for (name, src) in images {
        let input = dir.path().join(name);
        src.save(&input).unwrap();
        let out = dir
            .path()
            .join(format!("out.{}", name.split('.').nth(1).unwrap()));
        let mut all_paths = paths();
        if name != "rgb8.png" {
            // The other paths share the window with the banded blur; one image type covers them.
            all_paths.truncate(1);
        } else {
            all_paths.truncate(3);
        }
        for path in all_paths {
            for edge in ["clamp", "reflect", "wrap", "constant=0.5"] {
                let mut base = path.clone();
                base.extend(["--sigma", "2", "--edge", edge]);
                let (plain, _) = run_reported(&input, &out, &base);
                for mode in ["blend", "exclude"] {
                    for (region, far, inner) in regions {
                        let what = format!("{name} {path:?} --edge {edge} {mode} {region}");
                        let mut args = base.clone();
                        args.extend(["--mask-mode", mode, "--region", region]);
                        let (part, pipeline) = run_reported(&input, &out, &args);
                        // A constant edge counts as selected, and a wrapped corner box is
                        // selected at the opposite corner too: those selections span the image.
                        let windowed = match edge {
                            "wrap" => inner,
                            e => !e.starts_with("constant"),
                        };
                        assert_eq!(pipeline.contains("blurred within"), windowed, "{what}");
                        let whole = if mode == "blend" {
                            plain.clone()
                        } else {
                            args.extend(["--region", far[0], "--region", far[1]]);
                            let (whole, pipeline) = run_reported(&input, &out, &args);
                            assert!(!pipeline.contains("blurred within"), "{what}");
                            whole
                        };
                        let r: Vec<u32> = region.split(',').map(|v| v.parse().unwrap()).collect();
                        for y in 0..h {
                            for x in 0..w {
                                let inside = (r[0]..r[0] + r[2]).contains(&x)
                                    && (r[1]..r[1] + r[3]).contains(&y);
                                if inside {
                                    assert!(near(&part, &whole, x, y), "{what} ({x}, {y})");
                                } else {
                                    assert_eq!(
                                        pixel_bits(&part, x, y),
                                        pixel_bits(&src, x, y),
                                        "{what} ({x}, {y})"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
