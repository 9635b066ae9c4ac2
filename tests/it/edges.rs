//! Edge modes against scipy.ndimage.gaussian_filter(mode=.., cval=0.2, truncate=8) in f64
//! (tests/fixtures/edges/make_edges.py), through the command on every path: the Rust path
//! (banded in place, and the planar reference under the FIR), and on the OpenCL device the
//! direct, transpose and blocked pipelines (carried and overlap chunks; 8-bit images go up as
//! bytes) and the FIR; for 8-bit, 16-bit and f32 images, 24x16 and 7x5 (narrower than 3
//! sigma for most sigmas here), sigma 0.5 to 200.
//!
//! The bound: within 1e-3 of full scale of the exact blur (the recursive filter's fit,
//! 5.7e-4 per axis at most, plus the extension's tail, 5e-5 per side), plus half a step where
//! the output is rounded to integers and the golden's own rounding to 16 bits.

use crate::common;
use common::{fixture, gblur};
use image::DynamicImage;
use std::path::{Path, PathBuf};

const SIGMAS: [f64; 7] = [0.5, 1.5, 3.0, 7.0, 20.0, 60.0, 200.0];
const MODES: [&str; 5] = ["clamp", "reflect", "reflect101", "wrap", "constant=0.2"];
const BUDGET: f64 = 1e-3;

fn dir() -> PathBuf {
    fixture("tests/fixtures/edges")
}

/// Every sample of `img` as a fraction of full scale (floats as they are).
fn fractions(img: &DynamicImage) -> Vec<f64> {
    match img {
        DynamicImage::ImageLuma8(b) => b.iter().map(|&v| v as f64 / 255.0).collect(),
        DynamicImage::ImageLuma16(b) => b.iter().map(|&v| v as f64 / 65535.0).collect(),
        DynamicImage::ImageRgb16(b) => b.iter().map(|&v| v as f64 / 65535.0).collect(),
        DynamicImage::ImageRgb32F(b) => b.iter().map(|&v| v as f64).collect(),
        other => panic!("no edge case decodes to {:?}", other.color()),
    }
}

fn open(p: &Path) -> DynamicImage {
    image::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// An input: its stem, the output extension that keeps its samples, and its output step.
struct Input {
    stem: &'static str,
    ext: &'static str,
    step: f64,
}

const GRAY8: Input = Input {
    stem: "gray8_24x16",
    ext: "png",
    step: 1.0 / 255.0,
};
const GRAY16: Input = Input {
    stem: "gray16_24x16",
    ext: "png",
    step: 1.0 / 65535.0,
};
const GRAY8_NARROW: Input = Input {
    stem: "gray8_7x5",
    ext: "png",
    step: 1.0 / 255.0,
};
const GRAY16_NARROW: Input = Input {
    stem: "gray16_7x5",
    ext: "png",
    step: 1.0 / 65535.0,
};
const F32: Input = Input {
    stem: "rgbf32_16x10",
    ext: "tiff",
    step: 0.0,
};
const F32_NARROW: Input = Input {
    stem: "rgbf32_7x5",
    ext: "tiff",
    step: 0.0,
};
const ALL: [Input; 6] = [GRAY8, GRAY16, GRAY8_NARROW, GRAY16_NARROW, F32, F32_NARROW];

impl Input {
    fn path(&self) -> PathBuf {
        dir().join(format!("{}_in.{}", self.stem, self.ext))
    }

    /// The bound on |output - exact| in fractions of full scale.
    fn bound(&self) -> f64 {
        BUDGET + self.step / 2.0 + 0.5 / 65535.0
    }
}

/// Runs gblur on `input` with `args`; returns the output's samples as fractions.
fn blur(input: &Input, args: &[&str]) -> Vec<f64> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join(format!("out.{}", input.ext));
    gblur()
        .arg(input.path())
        .arg(&out)
        .args(["-q", "--max-memory", "2048"])
        .args(args)
        .assert()
        .success();
    fractions(&open(&out))
}

/// The golden blur in `file` for the `index`-th of the stacked sigmas, `len` samples each.
fn golden(file: &str, index: usize, len: usize) -> Vec<f64> {
    let all = fractions(&open(&dir().join(file)));
    all[index * len..(index + 1) * len].to_vec()
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Checks `input` under every mode at `sigmas` with `args`; returns the worst error per mode
/// (output rounding included), after asserting each is within the bound.
fn check_modes(input: &Input, sigmas: &[f64], args: &[&str]) -> Vec<f64> {
    MODES
        .iter()
        .map(|mode| {
            let name = mode.split('=').next().unwrap();
            let mut worst = 0.0f64;
            for &sigma in sigmas {
                let index = SIGMAS.iter().position(|&s| s == sigma).unwrap();
                let sigma_arg = sigma.to_string();
                let mut all = vec!["--sigma", &sigma_arg, "--edge", mode];
                all.extend_from_slice(args);
                let got = blur(input, &all);
                let want = golden(&format!("{}_{name}.png", input.stem), index, got.len());
                let err = max_diff(&got, &want);
                assert!(
                    err <= input.bound(),
                    "{} {}: {err:.3e} of full scale over {:.3e}",
                    input.stem,
                    all.join(" "),
                    input.bound()
                );
                worst = worst.max(err);
            }
            eprintln!(
                "{:>14} {:<12} {:?}: max {worst:.2e}",
                input.stem, name, args
            );
            worst
        })
        .collect()
}

/// The OpenCL paths run too, on the test device, which must exist (`common::require_opencl`).
fn opencl() -> bool {
    common::require_opencl();
    true
}

#[test]
fn every_mode_matches_scipy_on_the_rust_path() {
    for input in &ALL {
        check_modes(input, &SIGMAS, &["--device", "rust"]);
    }
}

#[test]
fn every_mode_matches_scipy_with_the_fir_on_the_rust_path() {
    // The FIR's cost grows with sigma; 20 already reaches far past both images.
    let sigmas = [0.5, 1.5, 3.0, 20.0];
    for input in &ALL {
        check_modes(input, &sigmas, &["--device", "rust", "--method", "fir"]);
    }
}

#[test]
fn every_mode_matches_scipy_on_every_opencl_pipeline() {
    common::require_opencl();
    let pipelines = ["direct", "transpose", "blocked", "carried", "overlap"];
    for pipeline in pipelines {
        for input in [&GRAY8, &GRAY16_NARROW, &F32_NARROW] {
            let args = ["--device", "cpu", "--pipeline", pipeline];
            check_modes(input, &[3.0, 60.0], &args);
        }
    }
}

#[test]
fn every_mode_matches_scipy_with_the_fir_on_opencl() {
    common::require_opencl();
    for input in [&GRAY8_NARROW, &GRAY16, &F32] {
        check_modes(input, &[0.5, 3.0], &["--device", "cpu", "--method", "fir"]);
    }
}

/// Per-axis modes land on their own axis: each output matches its golden, and is far from
/// the golden with the axes' modes swapped.
#[test]
fn per_axis_modes_apply_to_their_axis() {
    let cases = [
        (
            "wrap",
            "constant=0.2",
            "x-wrap_y-constant",
            "x-constant_y-wrap",
        ),
        (
            "constant=0.2",
            "wrap",
            "x-constant_y-wrap",
            "x-wrap_y-constant",
        ),
        ("reflect101", "reflect", "x-reflect101_y-reflect", ""),
    ];
    let mut devices = vec![
        vec!["--device", "rust"],
        vec!["--device", "rust", "--method", "fir"],
    ];
    if opencl() {
        devices.push(vec!["--device", "cpu", "--pipeline", "direct"]);
        devices.push(vec!["--device", "cpu", "--pipeline", "blocked"]);
    }
    for (x, y, file, swapped) in cases {
        for device in &devices {
            let mut args = vec!["--sigma-x", "3", "--sigma-y", "7", "--edge-x", x];
            args.extend(["--edge-y", y]);
            args.extend(device);
            let got = blur(&GRAY8, &args);
            let want = golden(&format!("gray8_24x16_{file}.png"), 0, got.len());
            let err = max_diff(&got, &want);
            assert!(err <= GRAY8.bound(), "{args:?}: {err:.3e}");
            if !swapped.is_empty() {
                let other = golden(&format!("gray8_24x16_{swapped}.png"), 0, got.len());
                let apart = max_diff(&got, &other);
                assert!(
                    apart > 0.05,
                    "{args:?}: only {apart:.3e} from the swapped modes"
                );
            }
        }
    }
    // --edge sets both axes; --edge-y overrides it along y only.
    let both = blur(
        &GRAY8,
        &[
            "--sigma-x",
            "3",
            "--sigma-y",
            "7",
            "--edge",
            "reflect101",
            "--edge-y",
            "reflect",
        ],
    );
    let want = golden("gray8_24x16_x-reflect101_y-reflect.png", 0, both.len());
    assert!(max_diff(&both, &want) <= GRAY8.bound());
}

#[test]
fn truncate_cuts_the_fir_where_scipy_does() {
    let args = ["--sigma", "2.5", "--method", "fir", "--edge", "reflect"];
    let mut cut = args.to_vec();
    cut.extend(["--truncate", "2"]);
    let mut devices = vec![vec!["--device", "rust"]];
    if opencl() {
        devices.push(vec!["--device", "cpu"]);
    }
    for device in devices {
        let got = blur(&GRAY8, &[cut.clone(), device.clone()].concat());
        let want = golden("gray8_24x16_reflect_sigma2.5_truncate2.png", 0, got.len());
        let err = max_diff(&got, &want);
        // The FIR is the sampled Gaussian itself: only f32 and the output's rounding remain.
        assert!(err <= 0.5 / 255.0 + 1e-5, "{device:?}: {err:.3e}");
        // Without --truncate the radius is ceil(5 sigma): 2.6 steps away somewhere (scipy).
        let full = blur(&GRAY8, &[args.to_vec(), device].concat());
        assert!(max_diff(&full, &want) > 1.5 / 255.0);
    }
}

#[test]
fn explicit_clamp_writes_the_same_bytes_as_the_default() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        gblur()
            .arg(GRAY16.path())
            .arg(&out)
            .args(["-q", "--sigma", "4", "--device", "rust"])
            .args(extra)
            .assert()
            .success();
        std::fs::read(out).unwrap()
    };
    let default = run("a.png", &[]);
    assert_eq!(default, run("b.png", &["--edge", "clamp"]));
    assert_eq!(
        default,
        run("c.png", &["--edge", "nearest", "--edge-x", "replicate"])
    );
    assert_ne!(default, run("d.png", &["--edge-y", "wrap"]));
}

#[test]
fn batch_takes_the_edge_modes() {
    let tmp = tempfile::tempdir().unwrap();
    let (in_dir, out_dir) = (tmp.path().join("in"), tmp.path().join("out"));
    std::fs::create_dir(&in_dir).unwrap();
    std::fs::copy(GRAY8.path(), in_dir.join("a.png")).unwrap();
    let args = [
        "-q",
        "--sigma",
        "7",
        "--edge-x",
        "wrap",
        "--edge-y",
        "constant=0.2",
    ];
    gblur()
        .arg("batch")
        .arg(&in_dir)
        .arg(&out_dir)
        .args(args)
        .args(["--device", "rust"])
        .assert()
        .success();
    let single = tmp.path().join("single.png");
    gblur()
        .arg(GRAY8.path())
        .arg(&single)
        .args(args)
        .args(["--device", "rust"])
        .assert()
        .success();
    let batch = std::fs::read(out_dir.join("a.png")).unwrap();
    assert_eq!(batch, std::fs::read(&single).unwrap());
    let got = fractions(&open(&single));
    let want = golden("gray8_24x16_wrap.png", 3, got.len());
    assert!(
        max_diff(&got, &want) > 0.05,
        "constant along y made no difference"
    );
}

#[test]
fn bad_edge_arguments_are_usage_errors() {
    let cases: [(&[&str], &str); 5] = [
        (&["--edge", "mirrored"], "'mirrored' is not an edge mode"),
        (&["--edge", "constant=1.5"], "a number from 0 to 1"),
        (&["--edge-y", "constant=x"], "a number from 0 to 1"),
        (&["--edge-x", "wrap=0.5"], "only constant takes a value"),
        (&["--truncate", "0"], "truncate must be a number above 0"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.png");
    for (args, message) in cases {
        gblur()
            .arg(GRAY8.path())
            .arg(&out)
            .args(["--sigma", "2"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicates::str::contains(message));
        assert!(!out.exists());
    }
}

#[test]
fn an_extension_over_the_memory_limit_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.png");
    gblur()
        .arg(GRAY8.path())
        .arg(&out)
        .args(["--sigma", "2000", "--edge", "wrap", "--max-memory", "1"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "gray8_24x16_in.png: --edge wrap extends the image",
        ))
        .stderr(predicates::str::contains("--max-memory"));
    assert!(!out.exists());
}
