//! A tiny sweep of each bench command on the OpenCL device: structure and verification only
//! (timings are never asserted).

use serde_json::Value;

use crate::common;
use common::gblur;

fn bench(args: &[&str]) -> Vec<Value> {
    let out = gblur()
        .arg("bench")
        .args(args)
        .args(["--runs", "2", "--json", "-q"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    v.as_array().unwrap().clone()
}

fn check_timed(r: &Value) {
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["runs"], 2);
    let (lo, med, hi) = (
        r["min_ms"].as_f64().unwrap(),
        r["median_ms"].as_f64().unwrap(),
        r["max_ms"].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi, "{r}");
    assert!(r["gbps"].as_f64().unwrap() > 0.0 && r["mpps"].as_f64().unwrap() > 0.0);
    assert!(r["device"].as_str().unwrap().len() > 3);
    assert!(r["build_options"].as_str().unwrap().contains("-cl-std"));
}

#[test]
fn peak_measures_every_kernel() {
    common::require_opencl();
    let recs = bench(&["peak", "--sizes", "64"]);
    let names: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(&names[..3], ["copy float", "copy float4", "copy + 3 mad"]);
    assert_eq!(recs.len(), 8);
    for r in &recs {
        check_timed(r);
        assert!(r["pct_of_copy"].as_f64().is_some());
    }
    assert!(recs.iter().any(|r| r["build_options"]
        .as_str()
        .unwrap()
        .contains("-DMAD_COUNT=24")));
}

#[test]
fn transpose_covers_every_strategy_at_odd_sizes() {
    common::require_opencl();
    let recs = bench(&["transpose", "--sizes", "33x17,16"]);
    assert_eq!(recs.len(), 2 * 8);
    for r in &recs {
        check_timed(r);
    }
    for s in [
        "naive",
        "local",
        "skewed",
        "padded",
        "padded-skewed",
        "tile32",
        "tile32-skewed",
    ] {
        assert!(
            recs.iter().any(|r| r["name"] == s && r["size"] == "33x17"),
            "{s}"
        );
    }
}

/// `bench blur` on a 40×24 image at `sigma` for `channels`, then `extra`.
fn bench_blur_40x24(sigma: &str, channels: &str, extra: &[&str]) -> Vec<Value> {
    let args = [
        "blur",
        "--sizes",
        "40x24",
        "--sigma",
        sigma,
        "--channels",
        channels,
    ];
    bench(&[&args[..], extra].concat())
}

/// `--only` keeps the named rows and the copy rows they are measured against.
#[test]
fn blur_only_runs_the_named_rows_and_their_yardsticks() {
    common::require_opencl();
    let recs = bench_blur_40x24("3", "4", &["--only", "overlapped"]);
    let names: Vec<&str> = recs.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "copy float4",
            "recursive, overlapped c64 (fused transpose)",
            "recursive, overlapped c128 (fused transpose)",
            "recursive, overlapped c256 (fused transpose)",
            "copy RGBA8 (float4)",
            "recursive, overlapped c64, RGBA8 in/out",
            "recursive, overlapped c128, RGBA8 in/out",
            "recursive, overlapped c256, RGBA8 in/out",
        ]
    );
    for r in &recs {
        assert_eq!(r["status"], "ok", "{r}");
    }
    // The overlapped rows name the defines block_overlap was built with.
    for r in recs
        .iter()
        .filter(|r| r["name"].as_str().unwrap().contains("overlapped"))
    {
        let options = r["build_options"].as_str().unwrap();
        assert!(options.contains("-DREACH="), "{r}");
        let rgba8 = r["name"].as_str().unwrap().contains("RGBA8");
        assert_eq!(options.contains("-DSAMPLES"), rgba8, "{r}");
    }
}

#[test]
fn blur_table_rows_are_checked_and_estimated() {
    common::require_opencl();
    let recs = bench_blur_40x24("1.5", "1,4", &[]);
    // 17 rows per channel count, and with 4 channels the RGBA8 copy and six RGBA8 rows.
    assert_eq!(recs.len(), 2 * 17 + 7);
    for name in [
        "recursive, blocked c64 (fused transpose)",
        "recursive, overlapped c128 (fused transpose)",
        "recursive, overlapped c64, RGBA8 in/out",
    ] {
        let row = recs.iter().find(|r| r["name"] == name).expect(name);
        assert_eq!(row["status"], "ok", "{row}");
    }
    let rgba8 = recs
        .iter()
        .find(|r| r["name"] == "recursive, blocked c32, RGBA8 in/out")
        .expect("an RGBA8 row");
    assert_eq!(rgba8["status"], "ok", "{rgba8}");
    assert!(rgba8["pct_of_copy"].as_f64().unwrap() > 0.0);
    for r in &recs {
        check_timed(r);
        assert!(r["estimate_mpps"].as_f64().unwrap() > 0.0);
        assert!(r["accesses_per_pixel"].as_f64().unwrap() >= 2.0);
    }
    let conv = recs.iter().find(|r| r["name"] == "2D convolution").unwrap();
    // radius ceil(3 * 1.5) = 5: (2 * 5 + 1)^2 taps + 1 write
    assert_eq!(conv["accesses_per_pixel"], 122.0);
}

#[test]
fn writes_csv_markdown_and_plot() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let (csv, md, svg) = (
        dir.path().join("t.csv"),
        dir.path().join("t.md"),
        dir.path().join("t.svg"),
    );
    gblur()
        .args([
            "bench",
            "transpose",
            "--sizes",
            "32,48",
            "--runs",
            "1",
            "-q",
        ])
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .arg("--plot")
        .arg(&svg)
        .assert()
        .success()
        .stdout(predicates::str::contains("tile32-skewed"));
    let csv = std::fs::read_to_string(csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 16);
    assert!(csv.starts_with("bench,name,size"));
    assert!(std::fs::read_to_string(md)
        .unwrap()
        .contains("| size | strategy |"));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.contains("<svg") && svg.contains("padded-skewed"));
    let png = dir.path().join("t.png");
    gblur()
        .args([
            "bench",
            "transpose",
            "--sizes",
            "32,48",
            "--runs",
            "1",
            "-q",
            "--json",
            "--plot",
        ])
        .arg(&png)
        .assert()
        .success();
    let img = image::open(&png).unwrap();
    assert_eq!((img.width(), img.height()), (1200, 640));
    gblur()
        .args(["bench", "transpose", "--sizes", "32", "--plot", "x.gif"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "x.gif: plots are written as .svg or .png",
        ));
}

#[test]
fn bad_bench_arguments_are_usage_errors() {
    gblur()
        .args(["bench", "transpose", "--sizes", "0"])
        .assert()
        .code(2);
    gblur()
        .args(["bench", "blur", "--channels", "5"])
        .assert()
        .code(2);
}

/// A timed matmul or reduce row: the times and the verification, whatever its rate columns.
fn check_verified(r: &Value) {
    assert_eq!(r["verified"], true, "{r}");
    let (lo, med, hi) = (
        r["min_ms"].as_f64().unwrap(),
        r["median_ms"].as_f64().unwrap(),
        r["max_ms"].as_f64().unwrap(),
    );
    assert!(lo <= med && med <= hi, "{r}");
}

#[test]
fn matmul_runs_every_rung_at_odd_shapes() {
    common::require_opencl();
    for ty in ["f32", "i32"] {
        let recs = bench(&["matmul", "--sizes", "17x33x9,16", "--type", ty]);
        // 2 CPU baselines, rungs 1-8, float4 and float8, one rung-10 preset on a CPU device
        // (every preset on a GPU).
        assert!(recs.len() >= 2 * 13, "{}", recs.len());
        for r in &recs {
            check_verified(r);
            assert_eq!(r["status"], "ok", "{r}");
            assert!(r["gflops"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["speedup_over_cpu"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["pct_of_best"].as_f64().unwrap() > 0.0, "{r}");
        }
        for n in 1..=10 {
            let prefix = format!("{n:>2} ");
            assert!(
                recs.iter()
                    .any(|r| r["name"].as_str().unwrap().starts_with(&prefix)
                        && r["size"] == "17x33x9"),
                "rung {n}"
            );
        }
        assert!(recs
            .iter()
            .any(|r| r["name"] == "CPU blocked, rayon (all cores)"));
        let best = recs
            .iter()
            .filter(|r| r["size"] == "16³")
            .filter_map(|r| r["pct_of_best"].as_f64())
            .fold(0.0, f64::max);
        assert!(best >= 100.0);
    }
}

#[test]
fn matmul_skips_what_is_over_budget_and_says_so() {
    common::require_opencl();
    let recs = bench(&[
        "matmul",
        "--sizes",
        "2x3x4",
        "--rungs",
        "10",
        "--presets",
        "32x32x8-4x4,all",
        "--no-cpu",
    ]);
    assert!(recs
        .iter()
        .any(|r| r["name"] == "10 register blocking 32x32x8-4x4"));
    assert!(recs
        .iter()
        .all(|r| !r["name"].as_str().unwrap().starts_with("CPU")));
    // On CPU devices rungs 1-6 have a budget of 1e8 flop per run, and the naive CPU loop is
    // timed whole up to 3e8: 512x512x1024 is 5.4e8.
    let gpu = recs[0]["device"].as_str().unwrap().contains("NVIDIA");
    if !gpu {
        let recs = bench(&["matmul", "--sizes", "512x512x1024", "--rungs", "1"]);
        let naive = recs
            .iter()
            .find(|r| r["name"] == " 1 naive (row per dim 0)")
            .unwrap();
        assert!(
            naive["status"].as_str().unwrap().starts_with("skipped:"),
            "{naive}"
        );
        assert_eq!(naive["verified"], false);
        assert!(naive["median_ms"].is_null());
        // The naive CPU loop is timed on its first rows only, and says so.
        let cpu = recs
            .iter()
            .find(|r| r["name"] == "CPU naive triple loop (1 thread)")
            .unwrap();
        assert!(
            cpu["status"]
                .as_str()
                .unwrap()
                .starts_with("estimated: first"),
            "{cpu}"
        );
    }
}

#[test]
fn reduce_checks_every_rung_against_copy() {
    common::require_opencl();
    let recs = bench(&["reduce", "--sizes", "1001,2^12"]);
    assert_eq!(recs.len(), 2 * 4);
    assert_eq!(recs[4]["size"], "2^12");
    for r in &recs {
        check_verified(r);
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["gbps"].as_f64().unwrap() > 0.0);
        assert!(r["pct_of_copy"].as_f64().unwrap() > 0.0);
    }
    assert!(recs
        .iter()
        .any(|r| r["name"] == "3 on device: float4 x many per item, 2 stages"));
}

#[test]
fn bad_ladder_arguments_are_usage_errors() {
    for args in [
        &["matmul", "--sizes", "3x4"][..],
        &["matmul", "--presets", "3x3x3-3x3"],
        &["matmul", "--rungs", "11"],
        &["matmul", "--type", "f64"],
        &["reduce", "--sizes", "2^40"],
        &["reduce", "--sizes", "0"],
    ] {
        gblur().arg("bench").args(args).assert().code(2);
    }
}
