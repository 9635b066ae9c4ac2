//! Golden images: the command's output for a few (format, depth, channels, sigma) cases
//! against an exact Gaussian computed in f64 outside gblur (tests/fixtures/golden/
//! make_golden.py: numpy, scipy.ndimage.gaussian_filter with clamped edges), within bounds
//! that follow from what gblur promises. Each case runs on `--device auto` and `rust`, and on
//! the OpenCL device with its own pipeline and with the blocked one (8-bit samples in and out
//! of the kernels).
//!
//! The bounds: each axis's filter is within 5.7e-4 relative L1 of the exact sampled Gaussian
//! (README, Accuracy; the FIR below sigma 2 within 1e-7). The error kernel of the 2-D blur
//! then has L1 norm at most 2·5.7e-4 + 5.7e-4² and sums to zero, so no output is further than
//! 5.7e-4 × the sample range from the exact one: 0.15 steps of 8 bits, 37.4 steps of 16
//! bits. Both images are rounded to their steps, which adds at most one step.

use crate::common;
use common::{fixture, gblur};
use image::{ColorType, DynamicImage};
use std::path::{Path, PathBuf};

/// The 2-D blur's worst error as a fraction of the sample range (see the module comment).
const RANGE_FRACTION: f64 = 2.0 * 5.7e-4 + 5.7e-4 * 5.7e-4;

enum Bound {
    /// Integer samples: the exact error bound in steps, plus one step of rounding.
    Steps { full: f64 },
    /// Float samples: a fraction of the input's range (the 2-D bound, with room for f32).
    Range { fraction: f64 },
    /// 8-bit RGBA blurred premultiplied: alpha as `Steps`. Colour is the blurred
    /// premultiplied colour P over the blurred alpha A, each within e = RANGE_FRACTION/2 of
    /// exact, so colour (c <= 1) is within (|eP| + c·|eA|)/A <= 2e/A, 255·2e/A steps plus one
    /// of rounding: 1 step where A is above 0.3, 11 at A = 7/255. Where the golden alpha is
    /// below 8/255 the colour carries almost nothing and is not compared. A blur of colour
    /// not premultiplied puts 4097 samples of this image over these bounds.
    Premultiplied,
}

struct Case {
    name: &'static str,
    ext: &'static str,
    sigma: f64,
    color: ColorType,
    bound: Bound,
}

/// Every sample of `img`, in order, as f64.
fn samples(img: &DynamicImage) -> Vec<f64> {
    match img {
        DynamicImage::ImageLuma8(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageRgb8(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageRgba8(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageLuma16(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        DynamicImage::ImageRgb32F(b) => b.as_raw().iter().map(|&v| v as f64).collect(),
        other => panic!("no golden case decodes to {:?}", other.color()),
    }
}

fn open(p: &Path) -> DynamicImage {
    image::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The most each sample of the output may differ from the golden one; `None`: not compared.
fn allowed(case: &Case, input: &[f64], golden: &[f64]) -> Vec<Option<f64>> {
    match case.bound {
        Bound::Steps { full } => {
            let steps = (RANGE_FRACTION / 2.0 * full).floor() + 1.0;
            vec![Some(steps); golden.len()]
        }
        Bound::Range { fraction } => {
            let lo = input.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = input.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            vec![Some(fraction * (hi - lo)); golden.len()]
        }
        Bound::Premultiplied => golden
            .chunks(4)
            .flat_map(|px| {
                // A lower bound on both the exact blurred alpha (at most half a step under
                // the rounded golden one) and gblur's (at most 0.15 steps further).
                let a = (px[3] - 1.0) / 255.0;
                let colour = (a >= 7.0 / 255.0).then(|| (255.0 * RANGE_FRACTION / a).floor() + 1.0);
                [colour, colour, colour, Some(1.0)]
            })
            .collect(),
    }
}

/// Runs gblur on the case's input with `device_args` and checks the output against the
/// golden image. On failure the output is kept in the temporary folder and named.
fn check(case: &Case, device_args: &[&str]) {
    let input = fixture(&format!(
        "tests/fixtures/golden/{}_in.{}",
        case.name, case.ext
    ));
    let golden_path = fixture(&format!(
        "tests/fixtures/golden/{}_golden.{}",
        case.name, case.ext
    ));
    let work = tempfile::tempdir().unwrap();
    let out = work.path().join(format!("out.{}", case.ext));
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["--sigma", &case.sigma.to_string(), "-q"])
        .args(device_args)
        .assert()
        .success();
    let what = match device_args {
        [] => format!("{} on --device auto", case.name),
        args => format!("{} on {}", case.name, args.join(" ")),
    };
    let (got, golden) = (open(&out), open(&golden_path));
    let (w, h) = (golden.width() as usize, golden.height() as usize);
    assert_eq!(got.color(), case.color, "{what}: the output's layout");
    assert_eq!(golden.color(), case.color, "{what}: the golden's layout");
    assert_eq!((got.width(), got.height()), (w as u32, h as u32), "{what}");
    let (got, want) = (samples(&got), samples(&golden));
    let allowed = allowed(case, &samples(&open(&input)), &want);
    let channels = want.len() / (w * h);
    let mut worst: Option<(f64, usize)> = None;
    let mut over = 0;
    for (i, ((a, b), limit)) in got.iter().zip(&want).zip(&allowed).enumerate() {
        let Some(limit) = limit else { continue };
        let off = (a - b).abs();
        if off > *limit {
            over += 1;
        }
        if worst.is_none_or(|(w, _)| off / limit > w) {
            worst = Some((off / limit, i));
        }
    }
    let (ratio, i) = worst.expect("samples compared");
    let (x, y, c) = ((i / channels) % w, i / channels / w, i % channels);
    let report = format!(
        "{what}: worst sample (x {x}, y {y}, channel {c}) is {} against the golden {}, \
         {:.3} of its bound {:.3e}",
        got[i],
        want[i],
        ratio,
        allowed[i].unwrap()
    );
    println!("{report}");
    if over > 0 {
        let keep = std::env::temp_dir().join(format!(
            "gblur-golden-{}-{}-actual.{}",
            case.name,
            device_args.join("-").replace('/', "_"),
            case.ext
        ));
        std::fs::copy(&out, &keep).unwrap();
        panic!(
            "{report}; {over} samples over their bound. Actual image: {}, golden: {}",
            keep.display(),
            golden_path.display()
        );
    }
}

/// The device arguments every case runs with.
fn devices() -> Vec<Vec<String>> {
    let mut runs = vec![vec![], vec!["--device".into(), "rust".into()]];
    common::require_opencl();
    {
        // The first OpenCL device (PoCL's CPU device in CI) unless GBLUR_TEST_DEVICE names one.
        let device = std::env::var("GBLUR_TEST_DEVICE").unwrap_or_else(|_| "0".into());
        for pipeline in ["auto", "blocked"] {
            runs.push(
                ["--device", &device, "--pipeline", pipeline]
                    .map(String::from)
                    .to_vec(),
            );
        }
    }
    runs
}

fn run(case: Case) {
    for args in devices() {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        check(&case, &args);
    }
}

#[test]
fn gray8_png_sigma3() {
    run(Case {
        name: "gray8_sigma3",
        ext: "png",
        sigma: 3.0,
        color: ColorType::L8,
        bound: Bound::Steps { full: 255.0 },
    });
}

#[test]
fn gray8_png_sigma1_5_runs_the_exact_fir() {
    run(Case {
        name: "gray8_sigma1.5_fir",
        ext: "png",
        sigma: 1.5,
        color: ColorType::L8,
        bound: Bound::Steps { full: 255.0 },
    });
}

#[test]
fn rgb8_png_sigma5() {
    run(Case {
        name: "rgb8_sigma5",
        ext: "png",
        sigma: 5.0,
        color: ColorType::Rgb8,
        bound: Bound::Steps { full: 255.0 },
    });
}

#[test]
fn rgba8_png_sigma2_5_is_blurred_premultiplied() {
    run(Case {
        name: "rgba8_sigma2.5_premultiplied",
        ext: "png",
        sigma: 2.5,
        color: ColorType::Rgba8,
        bound: Bound::Premultiplied,
    });
}

#[test]
fn gray16_png_sigma10() {
    run(Case {
        name: "gray16_sigma10",
        ext: "png",
        sigma: 10.0,
        color: ColorType::L16,
        bound: Bound::Steps { full: 65535.0 },
    });
}

#[test]
fn rgb_f32_tiff_sigma7() {
    run(Case {
        name: "rgbf32_sigma7",
        ext: "tiff",
        sigma: 7.0,
        color: ColorType::Rgb32F,
        bound: Bound::Range { fraction: 1e-3 },
    });
}

/// The goldens are blurs, not copies: most samples differ from their input's.
#[test]
fn goldens_are_blurs_of_their_inputs() {
    for (name, ext) in [
        ("gray8_sigma3", "png"),
        ("gray8_sigma1.5_fir", "png"),
        ("rgb8_sigma5", "png"),
        ("rgba8_sigma2.5_premultiplied", "png"),
        ("gray16_sigma10", "png"),
        ("rgbf32_sigma7", "tiff"),
    ] {
        let path = |kind: &str| -> PathBuf {
            fixture(&format!("tests/fixtures/golden/{name}_{kind}.{ext}"))
        };
        let (input, golden) = (samples(&open(&path("in"))), samples(&open(&path("golden"))));
        let moved = input.iter().zip(&golden).filter(|(a, b)| a != b).count();
        assert!(
            moved * 2 > input.len(),
            "{name}: the golden is mostly its input"
        );
    }
}
