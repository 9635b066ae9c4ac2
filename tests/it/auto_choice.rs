//! `--device auto`'s choice as a user sees it without a GPU (PoCL's CPU device at most): the
//! Rust path, whatever the cost figures say, with the reason in the report and under
//! `--explain`; and `gblur calibrate` measuring the first OpenCL device. On a host with a GPU
//! the commands that must see none are shown PoCL's runtime alone (`without_gpus`), so the
//! file holds there too.

use crate::common;

use common::{fixture, gblur};

/// Figures under which any GPU would win every image: auto must still see that PoCL is no GPU.
const DEVICE_ALWAYS_WINS: &str = "rust=1,open=0,compile=0,cached=0,up=1e15,down=1e15,kernel=1e15";

#[test]
fn auto_runs_the_rust_path_without_a_gpu_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let runtimes = without_gpus();
    let env = || runtimes.iter().flat_map(PoclAlone::env);
    let assert = gblur()
        .envs(env())
        .env("GBLUR_CACHE_DIR", dir.path())
        .env("GBLUR_COST_FIGURES", DEVICE_ALWAYS_WINS)
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5", "--explain", "--json"])
        .assert()
        .success();
    let out = assert.get_output();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["backend"], "rust");
    let why = report["why"].as_str().unwrap();
    assert!(why.contains("Rust path"), "{why}");
    // With --json the report is the JSON alone: the explanation still comes, the table not.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("explain: --device auto:"), "{stderr}");
    assert!(!stderr.contains("chosen "), "{stderr}");
    let table = gblur()
        .envs(env())
        .env("GBLUR_CACHE_DIR", dir.path())
        .env("GBLUR_COST_FIGURES", DEVICE_ALWAYS_WINS)
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&table.get_output().stderr);
    assert!(stderr.contains(&format!("chosen   {why}")), "{stderr}");
}

/// The ICD loader pointed at PoCL alone (`pocl_alone`), which the shortcut for PoCL-only
/// installs does not trust: auto lists the devices, finds no GPU, and runs Rust.
#[test]
fn auto_lists_devices_and_still_finds_no_gpu() {
    let pocl = pocl_alone();
    let dir = tempfile::tempdir().unwrap();
    let assert = gblur()
        .envs(pocl.env())
        .env("GBLUR_CACHE_DIR", dir.path())
        .env("GBLUR_COST_FIGURES", DEVICE_ALWAYS_WINS)
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5", "--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert_eq!(report["backend"], "rust");
    assert!(
        report["why"].as_str().unwrap().starts_with("no GPU"),
        "{report}"
    );
}

/// The OpenCL runtimes a command is shown: PoCL's alone (none, where it is not installed:
/// then a library that does not exist),
/// through OCL_ICD_VENDORS (ocl-icd's loader) and OCL_ICD_FILENAMES (the Khronos loader
/// CUDA installs reads this one alone). Neither is trusted by `auto`'s shortcut for PoCL-only
/// installs, as on a machine with a GPU.
struct PoclAlone {
    vendors: tempfile::TempDir,
    libraries: String,
}

impl PoclAlone {
    fn env(&self) -> [(&'static str, std::ffi::OsString); 2] {
        [
            ("OCL_ICD_VENDORS", self.vendors.path().into()),
            ("OCL_ICD_FILENAMES", self.libraries.clone().into()),
        ]
    }
}

/// The registered ICD files, with the library each names.
fn registered() -> Vec<(std::path::PathBuf, String)> {
    std::fs::read_dir("/etc/OpenCL/vendors")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "icd"))
        .map(|p| {
            let library = std::fs::read_to_string(&p).unwrap_or_default();
            (p, library.trim().to_string())
        })
        .collect()
}

fn pocl_alone() -> PoclAlone {
    let vendors = tempfile::tempdir().unwrap();
    let mut libraries = Vec::new();
    for (icd, library) in registered() {
        if library.to_ascii_lowercase().contains("pocl") {
            std::fs::copy(&icd, vendors.path().join(icd.file_name().unwrap())).unwrap();
            libraries.push(library);
        }
    }
    if libraries.is_empty() {
        // An empty list is no list to a loader: name a library that is not there.
        libraries.push(vendors.path().join("none.so").display().to_string());
    }
    let libraries = libraries.join(":");
    PoclAlone { vendors, libraries }
}

/// The environment that shows a command this host's OpenCL runtimes without any that could
/// drive a GPU: none needed where every registered runtime is PoCL (what CI has, where `auto`
/// takes the PoCL-only shortcut), else `pocl_alone`.
fn without_gpus() -> Option<PoclAlone> {
    let icds = registered();
    let pocl_only = !icds.is_empty()
        && icds
            .iter()
            .all(|(_, l)| l.to_ascii_lowercase().contains("pocl"));
    (!pocl_only).then(pocl_alone)
}

/// `gblur batch --device auto` where a GPU could be: the Rust path, without loading a driver
/// and whatever the cost figures say, with the reason in the summary.
#[test]
fn batch_auto_runs_the_rust_path_and_says_why() {
    let pocl = pocl_alone();
    let input = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("samples/coffee.png"), input.path().join("a.png")).unwrap();
    for figures in [None, Some(DEVICE_ALWAYS_WINS)] {
        let (cache, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut cmd = gblur();
        if let Some(figures) = figures {
            cmd.env("GBLUR_COST_FIGURES", figures);
        }
        let assert = cmd
            .envs(pocl.env())
            .env("GBLUR_CACHE_DIR", cache.path())
            .arg("batch")
            .args([input.path(), out.path()])
            .args(["--sigma", "3", "--json", "-q"])
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
        assert_eq!(v["blurred"], 1, "{v}");
        assert_eq!(v["devices"][0]["backend"], "rust", "{v}");
        let notes = v["notes"].as_array().unwrap();
        assert!(
            notes.len() == 1 && notes[0].as_str().unwrap().contains("--device gpu runs"),
            "{figures:?}: {v}"
        );
    }
}

#[test]
fn a_named_device_runs_and_explain_says_it_was_named() {
    // Device 0: the first OpenCL device (PoCL's CPU device in CI, the GPU on a GPU host).
    let dir = tempfile::tempdir().unwrap();
    let assert = gblur()
        .env("GBLUR_CACHE_DIR", dir.path())
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5", "--device", "0", "--explain", "--json"])
        .assert()
        .success();
    let out = assert.get_output();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["backend"], "opencl");
    assert!(report["why"].is_null(), "{report}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--device 0 names the path"), "{stderr}");
}

/// Without a GPU nothing is weighed, so the figures are never read: even malformed ones (a
/// set-up error where a GPU makes auto read them) leave the run alone.
#[test]
fn cost_figures_are_not_read_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let runtimes = without_gpus();
    gblur()
        .envs(runtimes.iter().flat_map(PoclAlone::env))
        .env("GBLUR_CACHE_DIR", dir.path())
        .env("GBLUR_COST_FIGURES", "rust=fast")
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5", "-q"])
        .assert()
        .success();
}

#[test]
fn calibrate_measures_the_first_opencl_device_and_keeps_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let assert = gblur()
        .env("GBLUR_CACHE_DIR", dir.path())
        .args(["calibrate", "--device", "0", "--json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    assert!(v["rust"]["samples_per_s_per_thread"].as_f64().unwrap() > 0.0);
    for key in [
        "open_ms",
        "compile_ms",
        "cached_build_ms",
        "upload_bytes_per_s",
        "download_bytes_per_s",
        "kernel_samples_per_s",
    ] {
        let value = v["device_figures"][key].as_f64().unwrap();
        assert!(value.is_finite() && value > 0.0, "{key}: {v}");
    }
    let kept: Vec<String> = std::fs::read_dir(dir.path().join("calibration"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(kept.contains(&"rust.json".to_string()), "{kept:?}");
    assert!(kept.iter().any(|n| n.starts_with("device-")), "{kept:?}");
    // Calibrating compiles in a scratch cache: the user's programs are left alone.
    assert!(!dir.path().join("programs").exists());
}
