//! The command as users run it: formats, channels, depth, alpha, orientation, ICC, sizes,
//! strategies, and the report (pipes in tests/it/pipes.rs).

use image::{DynamicImage, GenericImageView, ImageDecoder, ImageReader};
use predicates::prelude::*;
use std::path::Path;

use crate::common;
use common::{fixture, gblur};

fn open(p: &Path) -> DynamicImage {
    image::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn blurs_every_sample_keeping_channels_and_depth() {
    let dir = tempfile::tempdir().unwrap();
    for (sample, ext) in [
        ("samples/coffee.png", "png"),
        ("samples/chelsea.jpg", "jpg"),
        ("samples/rocket.jpg", "png"),
        ("samples/camera-gray.png", "png"),
        ("samples/chelsea-rgba.png", "png"),
        ("samples/coffee-16bit.png", "png"),
        ("tests/fixtures/gray16_7x5.png", "tif"),
    ] {
        let out = dir.path().join(format!("out.{ext}"));
        gblur()
            .arg(fixture(sample))
            .arg(&out)
            .args(["--sigma", "3", "-q"])
            .assert()
            .success()
            .stderr("");
        let (a, b) = (open(&fixture(sample)), open(&out));
        assert_eq!(a.dimensions(), b.dimensions(), "{sample}");
        assert_eq!(a.color(), b.color(), "{sample}");
        assert_ne!(a, b, "{sample} came out unblurred");
    }
}

fn json_report(extra: &[&str]) -> serde_json::Value {
    json_report_on("samples/coffee.png", extra)
}

fn json_report_on(sample: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let assert = gblur()
        .arg(fixture(sample))
        .arg(&out)
        .args(["--sigma", "5", "--json", "-q"])
        .args(extra)
        .assert()
        .success();
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

fn pass_names(v: &serde_json::Value) -> Vec<String> {
    v["passes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn json_report_names_every_pass() {
    let v = json_report(&[]);
    let names = pass_names(&v);
    for want in ["decode", "encode"] {
        assert!(names.iter().any(|n| n == want), "{names:?}");
    }
    assert_eq!(v["method"], "recursive");
    assert_eq!(v["input"]["width"], 600);
    for p in v["passes"].as_array().unwrap() {
        assert!(p["ms"].as_f64().unwrap() >= 0.0);
        assert!(["transfer", "filter", "transpose", "host", "setup"]
            .contains(&p["kind"].as_str().unwrap()));
    }
    // auto takes a GPU if there is one, else the banded Rust blur (faster than PoCL), and
    // the report names the passes of whichever ran.
    let auto = v["pipeline"].as_str().unwrap().to_string();
    if v["backend"] == "rust" {
        assert!(auto.starts_with("banded, in place"), "{auto}");
        for want in ["column summaries (y)", "columns (y)", "rows (x)"] {
            assert!(names.iter().any(|n| n == want), "{names:?}");
        }
    } else {
        assert_eq!(auto, "blocked");
    }
    common::require_opencl();
    for (args, pipeline, passes) in [
        (
            &["--pipeline", "transpose", "--transpose", "tile32-skewed"][..],
            "transpose/tile32-skewed",
            &[
                "upload",
                "column pass 1 (y)",
                "transpose 1",
                "column pass 2 (x)",
                "transpose 2",
                "download",
            ][..],
        ),
        (
            &["--transpose", "padded"][..],
            "transpose/padded",
            &["transpose 1", "transpose 2"][..],
        ),
        (
            &["--pipeline", "direct"][..],
            "direct",
            &["upload", "row pass (x)", "column pass (y)", "download"][..],
        ),
        (
            // An 8-bit RGB image: up and down as bytes, converted in the kernels; at sigma 5
            // its chunks overlap (`plan::overlap_pays`).
            &["--pipeline", "blocked"][..],
            "blocked, 8-bit in and out",
            &[
                "upload (8-bit)",
                "block overlap + transpose (y)",
                "block overlap + transpose (x)",
                "download (8-bit)",
            ][..],
        ),
        (
            &["--pipeline", "carried"][..],
            "blocked/carried, 8-bit in and out",
            &[
                "block summaries (y)",
                "block carries (y)",
                "block final + transpose (y)",
                "block final + transpose (x)",
            ][..],
        ),
        (
            &["--pipeline", "overlap", "--sigma-y", "40"][..],
            "blocked/overlap, 8-bit in and out",
            &[
                "block overlap + transpose (y)",
                "block overlap + transpose (x)",
            ][..],
        ),
    ] {
        let v = json_report(args);
        assert_eq!(v["pipeline"], pipeline);
        let names = pass_names(&v);
        for want in passes {
            assert!(names.iter().any(|n| n == want), "{pipeline}: {names:?}");
        }
        if pipeline == auto {
            assert_eq!(
                pass_names(&json_report(&[])),
                names.iter().map(|s| s.to_string()).collect::<Vec<_>>()
            );
        }
    }
}

/// `blocked` chooses how chunks start per image: overlapped for gray, RGB and RGBA at sigma
/// 5, carried for a long reach (`plan::overlap_pays`).
#[test]
fn blocked_overlaps_where_it_measured_faster() {
    common::require_opencl();
    for (sample, sigma, first) in [
        (
            "samples/camera-gray.png",
            "5",
            "block overlap + transpose (y)",
        ),
        ("samples/coffee.png", "5", "block overlap + transpose (y)"),
        (
            "samples/chelsea-rgba.png",
            "5",
            "block overlap + transpose (y)",
        ),
        ("samples/chelsea-rgba.png", "20", "block summaries (y)"),
        ("samples/camera-gray.png", "20", "block summaries (y)"),
    ] {
        let sigmas = ["--sigma-x", sigma, "--sigma-y", sigma];
        let v = json_report_on(sample, &[&["--pipeline", "blocked"][..], &sigmas].concat());
        let names = pass_names(&v);
        assert!(
            names.iter().any(|n| n == first),
            "{sample} σ{sigma}: {names:?}"
        );
    }
}

#[test]
fn table_goes_to_stderr_and_quiet_hides_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    gblur()
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma", "2"])
        .assert()
        .success()
        .stdout("")
        .stderr(predicate::str::contains("total (wall)").and(predicate::str::contains("decode")));
}

#[test]
fn small_sigma_switches_to_fir_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    gblur()
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma", "0.8"])
        .assert()
        .success()
        .stderr(predicate::str::contains("sigma 0.8, fir"));
    gblur()
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma-x", "0.8", "--sigma-y", "6"])
        .assert()
        .success()
        .stderr(predicate::str::contains("fir (x), recursive (y)"));
}

#[test]
fn every_strategy_and_device_gives_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        gblur()
            .arg(fixture("samples/chelsea-rgba.png"))
            .arg(&out)
            .args(["--sigma", "4", "-q"])
            .args(extra)
            .assert()
            .success();
        open(&out).to_rgba8()
    };
    let reference = run(&["--device", "rust"], "rust.png");
    let mut variants = vec![
        run(&["--pipeline", "direct"], "direct.png"),
        run(&["--pipeline", "blocked"], "blocked.png"),
        run(&["--pipeline", "overlap"], "overlap.png"),
        run(&["--pipeline", "carried"], "carried.png"),
    ];
    for t in [
        "naive",
        "local",
        "skewed",
        "padded",
        "padded-skewed",
        "tile32",
        "tile32-skewed",
    ] {
        variants.push(run(&["--transpose", t], &format!("{t}.png")));
    }
    for v in variants {
        let worst = v
            .as_raw()
            .iter()
            .zip(reference.as_raw())
            .map(|(a, b)| a.abs_diff(*b))
            .max()
            .unwrap();
        assert!(worst <= 1, "differs from the Rust path by {worst}");
    }
}

#[test]
fn every_png_compression_writes_the_same_pixels() {
    let dir = tempfile::tempdir().unwrap();
    let run = |level: &str| {
        let out = dir.path().join(format!("{level}.png"));
        gblur()
            .arg(fixture("samples/chelsea-rgba.png"))
            .arg(&out)
            .args([
                "--sigma",
                "3",
                "-q",
                "--device",
                "rust",
                "--png-compression",
                level,
            ])
            .assert()
            .success();
        (open(&out), std::fs::metadata(&out).unwrap().len())
    };
    let (fast, fast_size) = run("fast");
    for level in ["default", "small", "best"] {
        assert_eq!(run(level).0, fast, "--png-compression {level}");
    }
    // Effort shows in the size: zlib's level 6 writes less than the default fdeflate.
    assert!(run("small").1 < fast_size);
}

#[test]
fn transparent_pixels_make_no_dark_halo() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    gblur()
        .arg(fixture("tests/fixtures/rgba_halo_9x9.png"))
        .arg(&out)
        .args(["--sigma", "1.5", "-q"])
        .assert()
        .success();
    let img = open(&out).to_rgba8();
    for p in img.pixels().filter(|p| p[3] > 0) {
        assert!(
            p[0] >= 250 && p[1] >= 250 && p[2] >= 250,
            "{p:?}: colour darkened by transparent neighbours"
        );
    }
}

#[test]
fn exif_orientation_is_applied() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    // Stored 8×4 with its white block top-left; orientation 6 displays it 4×8, white on top.
    gblur()
        .arg(fixture("tests/fixtures/orientation6_8x4.jpg"))
        .arg(&out)
        .args(["--sigma", "0.5", "-q"])
        .assert()
        .success();
    let img = open(&out).to_luma8();
    assert_eq!(img.dimensions(), (4, 8));
    assert!(img.get_pixel(0, 0)[0] > 200 && img.get_pixel(3, 0)[0] > 200);
    assert!(img.get_pixel(0, 7)[0] < 50 && img.get_pixel(3, 7)[0] < 50);
}

#[test]
fn icc_profile_is_carried_over() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("tests/fixtures/icc_srgb_16x16.png");
    let icc = |p: &Path| {
        ImageReader::open(p)
            .unwrap()
            .into_decoder()
            .unwrap()
            .icc_profile()
            .unwrap()
    };
    let want = icc(&src).expect("fixture has a profile");
    for ext in ["png", "jpg", "webp"] {
        let out = dir.path().join(format!("o.{ext}"));
        gblur()
            .arg(&src)
            .arg(&out)
            .args(["--sigma", "2", "-q"])
            .assert()
            .success();
        assert_eq!(icc(&out).as_deref(), Some(&want[..]), "{ext}");
    }
    let out = dir.path().join("o.bmp");
    gblur()
        .arg(&src)
        .arg(&out)
        .args(["--sigma", "2"])
        .assert()
        .success()
        .stderr(predicate::str::contains("ICC"));
}

#[test]
fn content_decides_the_input_format() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    gblur()
        .arg(fixture("tests/fixtures/png_named.jpg"))
        .arg(&out)
        .args(["--sigma", "1", "-q"])
        .assert()
        .success();
    assert_eq!(open(&out).dimensions(), (12, 10));
}

#[test]
fn jpeg_output_says_what_it_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.jpg");
    gblur()
        .arg(fixture("samples/chelsea-rgba.png"))
        .arg(&out)
        .args(["--sigma", "2"])
        .assert()
        .success()
        .stderr(predicate::str::contains("alpha dropped"));
    assert_eq!(open(&out).color(), image::ColorType::Rgb8);
}

#[test]
fn any_size_and_any_sigma() {
    let dir = tempfile::tempdir().unwrap();
    for (w, h) in [(1, 1), (1, 29), (29, 1), (2, 2), (17, 13), (67, 1031)] {
        let src = dir.path().join(format!("in_{w}x{h}.png"));
        image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([(x * 37 % 256) as u8, (y * 11 % 256) as u8, 128])
        })
        .save(&src)
        .unwrap();
        for sigma in ["0.5", "3", "40", "5000"] {
            let out = dir.path().join("out.png");
            gblur()
                .arg(&src)
                .arg(&out)
                .args(["--sigma", sigma, "-q"])
                .assert()
                .success();
            assert_eq!(open(&out).dimensions(), (w, h));
        }
    }
}

#[test]
fn linear_light_brightens_a_black_white_edge() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("edge.png");
    image::GrayImage::from_fn(20, 3, |x, _| image::Luma([if x < 10 { 0 } else { 255 }]))
        .save(&src)
        .unwrap();
    let (a, b) = (dir.path().join("a.png"), dir.path().join("b.png"));
    gblur()
        .arg(&src)
        .arg(&a)
        .args(["--sigma", "3", "-q"])
        .assert()
        .success();
    gblur()
        .arg(&src)
        .arg(&b)
        .args(["--sigma", "3", "-q", "--linear"])
        .assert()
        .success();
    // At the edge the sRGB-space blur gives ~50% code value; linear light gives ~50% light,
    // which is a much higher code value (~188).
    let (pa, pb) = (
        open(&a).to_luma8().get_pixel(10, 1)[0],
        open(&b).to_luma8().get_pixel(10, 1)[0],
    );
    assert!(pb > pa + 30, "{pa} vs {pb}");
}

#[test]
fn devices_lists_the_rust_path() {
    gblur()
        .arg("devices")
        .assert()
        .success()
        .stdout(predicate::str::contains("rust"));
    let out = gblur().args(["devices", "--json"]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    common::require_opencl();
    assert!(!v.as_array().unwrap().is_empty());
}

#[test]
fn without_any_opencl_device_the_rust_path_runs_and_says_so() {
    // An ICD loader with no vendor registered finds no platform: the same outcome as a machine
    // without OpenCL, short of removing the loader itself.
    let empty = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    // With no GPU calibrated (an empty cache), auto decides before it looks for a driver.
    let assert = gblur()
        .env("OCL_ICD_VENDORS", empty.path())
        .env("GBLUR_CACHE_DIR", dir.path())
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma", "3", "--json", "-q"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(v["backend"], "rust");
    let why = v["why"].to_string();
    assert!(
        why.contains("no GPU calibrated") || why.contains("no GPU (no OpenCL device found)"),
        "{v}"
    );
    gblur()
        .env("OCL_ICD_VENDORS", empty.path())
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma", "3", "--device", "gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no OpenCL device matches --device gpu",
        ));
}

/// The completion scripts and the manual page are generated from the parser itself, so they
/// name every subcommand and option it takes.
#[test]
fn completions_and_the_manual_page_name_every_command() {
    for (shell, marker) in [
        ("bash", "_gblur()"),
        ("zsh", "#compdef gblur"),
        ("fish", "complete -c gblur"),
    ] {
        let out = gblur().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(marker), "{shell}: no {marker}");
        for word in [
            "batch",
            "batch-report",
            "bench",
            "devices",
            "--sigma",
            "--shard",
        ] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    let out = gblur().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8(out.stdout).unwrap();
    assert!(page.contains(".TH gblur 1"), "{page}");
    for word in ["\\-\\-sigma", "batch", "completions"] {
        assert!(page.contains(word), "man page lacks {word}");
    }
    // Every page the main one names as SEE ALSO can be printed, and written as a file.
    let batch = gblur().args(["man", "batch"]).assert().success();
    let batch = String::from_utf8(batch.get_output().stdout.clone()).unwrap();
    assert!(
        batch.contains(".TH gblur\\-batch 1") || batch.contains(".TH gblur-batch 1"),
        "{batch}"
    );
    assert!(
        batch.contains("\\-\\-shard"),
        "the batch page lacks --shard"
    );
    let blur = gblur().args(["man", "bench-blur"]).assert().success();
    assert!(String::from_utf8_lossy(&blur.get_output().stdout).contains("\\-\\-sizes"));
    gblur().args(["man", "nope"]).assert().code(2);
    let dir = tempfile::tempdir().unwrap();
    gblur()
        .args(["man", "--dir"])
        .arg(dir.path())
        .assert()
        .success();
    for name in [
        "gblur.1",
        "gblur-batch.1",
        "gblur-bench-blur.1",
        "gblur-man.1",
    ] {
        assert!(dir.path().join(name).is_file(), "{name} not written");
    }
    gblur()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("possible values"));
}

#[test]
fn short_help_shows_the_common_options_and_long_help_all_of_them_by_task() {
    let text = |flag: &str| {
        let out = gblur().arg(flag).assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let (short, long) = (text("-h"), text("--help"));
    for common in [
        "--sigma",
        "--device",
        "--quality",
        "--region",
        "--json",
        "--threads",
    ] {
        assert!(short.contains(common), "-h lacks {common}");
    }
    for rare in [
        "--transpose",
        "--pipeline",
        "--subsampling",
        "--feather",
        "--engine",
    ] {
        assert!(!short.contains(rare), "-h shows {rare}");
        assert!(long.contains(rare), "--help lacks {rare}");
    }
    assert!(short.lines().count() < long.lines().count() / 3);
    // --help groups by task, the blur's own settings first.
    let at = |heading: &str| long.find(&format!("\n{heading}:\n")).unwrap_or(usize::MAX);
    let order = [
        "Blur",
        "Device and speed",
        "Output",
        "Reporting",
        "Selection",
    ]
    .map(at);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
}

#[test]
fn quality_for_an_output_that_is_not_lossy_is_refused_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    for (out, says) in [("o.png", "--png-compression"), ("o.tif", "Tiff")] {
        gblur()
            .arg("samples/coffee.png")
            .arg(dir.path().join(out))
            .args(["--sigma", "2", "--quality", "50"])
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("--quality applies to JPEG, WebP, AVIF or HEIC output")
                    .and(predicate::str::contains(says)),
            );
        assert!(!dir.path().join(out).exists());
    }
    gblur()
        .arg("samples/coffee.png")
        .arg(dir.path().join("o.jpg"))
        .args(["--sigma", "2", "--quality", "50", "-q"])
        .assert()
        .success();
    gblur()
        .args([
            "batch",
            "samples",
            "--sigma",
            "2",
            "--format",
            "png",
            "--quality",
            "80",
        ])
        .arg(dir.path().join("batch"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--quality applies to JPEG, WebP, AVIF or HEIC output",
        ));
    // Stdout in the input's format, and a batch none of whose outputs is a JPEG.
    gblur()
        .args(["-", "-", "--sigma", "2", "--quality", "50"])
        .write_stdin(std::fs::read(fixture("samples/coffee.png")).unwrap())
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("stdout is Png"));
    gblur()
        .args([
            "batch",
            "samples",
            "--sigma",
            "2",
            "--quality",
            "80",
            "--include",
            "*.png",
        ])
        .arg(dir.path().join("pngs"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("none of the"));
    // A folder of both: it applies to the JPEGs, and the report says so.
    let mixed = gblur()
        .args([
            "batch",
            "samples",
            "--sigma",
            "2",
            "--quality",
            "80",
            "--json",
            "-q",
        ])
        .arg(dir.path().join("mixed"))
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&mixed.get_output().stdout).unwrap();
    assert!(
        v["notes"]
            .to_string()
            .contains("JPEG, WebP, AVIF or HEIC outputs"),
        "{v}"
    );
}

/// A thread count far above the cores is refused at once, in one line naming where it came
/// from (the option, or rayon's variable), not run on tens of thousands of threads.
#[test]
fn a_thread_count_over_sixteen_per_core_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let run = |extra: &[&str], var: Option<&str>| {
        let mut cmd = gblur();
        cmd.args(["samples/coffee.png", out.to_str().unwrap(), "--sigma", "1"])
            .args(extra)
            .env_remove("RAYON_NUM_THREADS")
            .timeout(std::time::Duration::from_secs(60));
        if let Some(v) = var {
            cmd.env("RAYON_NUM_THREADS", v);
        }
        let assert = cmd.assert().code(2).stdout("");
        String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
    };
    for (extra, var, names) in [
        (&["--threads", "65535"][..], None, "--threads 65535"),
        (&[][..], Some("65535"), "RAYON_NUM_THREADS=65535"),
    ] {
        let err = run(extra, var);
        assert!(
            err.starts_with(&format!("gblur: {names}: at most ")) && err.contains("16 for "),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists());
    }
}

/// The filter is checked once, where the command line is read: `--method fir` above its
/// largest sigma is refused in one line with exit 2, by the main command and by a batch,
/// before any image is read or written: before a missing input or IN_DIR is found missing.
#[test]
fn a_fir_over_its_largest_sigma_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let main = gblur()
        .arg(dir.path().join("missing.png"))
        .arg(&out)
        .args(["--sigma", "2000", "--method", "fir"])
        .assert()
        .code(2);
    let said = String::from_utf8_lossy(&main.get_output().stderr).to_string();
    assert!(
        said.contains("--method fir supports sigma up to 1000"),
        "{said}"
    );
    assert_eq!(said.trim_end().lines().count(), 1, "{said}");
    assert!(!out.exists());

    let output = dir.path().join("out");
    let batch = gblur()
        .arg("batch")
        .arg(dir.path().join("no such folder"))
        .arg(&output)
        .args(["--sigma", "2000", "--method", "fir", "--quiet"])
        .assert()
        .code(2);
    let said = String::from_utf8_lossy(&batch.get_output().stderr).to_string();
    assert!(
        said.contains("--method fir supports sigma up to 1000"),
        "{said}"
    );
    assert!(!output.exists());
}
