//! `--device auto`'s choice as a user sees it without a GPU (PoCL's CPU device at most): the
//! Rust path, whatever the cost figures say, with the reason in the report and under
//! `--explain`; and `gblur calibrate` measuring PoCL. On a host with a GPU the commands see
//! the OpenCL runtimes without it (`without_gpus`), so the file holds there too.

use crate::common;

use common::{fixture, gblur};

/// Figures under which any GPU would win every image: auto must still see that PoCL is no GPU.
const DEVICE_ALWAYS_WINS: &str = "rust=1,open=0,compile=0,cached=0,up=1e15,down=1e15,kernel=1e15";

#[test]
fn auto_runs_the_rust_path_without_a_gpu_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let runtimes = without_gpus();
    let assert = gblur()
        .envs(runtimes.env())
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
        .envs(runtimes.env())
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

/// The ICD loader pointed at PoCL alone through OCL_ICD_VENDORS, which the shortcut for
/// PoCL-only installs does not trust: auto lists the devices, finds no GPU, and runs Rust.
#[test]
fn auto_lists_devices_and_still_finds_no_gpu() {
    let vendors = pocl_vendors();
    let dir = tempfile::tempdir().unwrap();
    let assert = gblur()
        .env("OCL_ICD_VENDORS", vendors.path())
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

/// The OpenCL runtimes of this host without any that could drive a GPU: as they are where
/// every registered runtime is PoCL (what CI has, where `auto` takes the PoCL-only shortcut),
/// else PoCL's alone (none, where it is not installed) through OCL_ICD_VENDORS.
struct Runtimes(Option<tempfile::TempDir>);

impl Runtimes {
    /// The environment a command needs to see these runtimes.
    fn env(&self) -> Vec<(&'static str, std::path::PathBuf)> {
        let folder = self.0.as_ref().map(|d| d.path().to_path_buf());
        folder.map(|f| ("OCL_ICD_VENDORS", f)).into_iter().collect()
    }
}

fn without_gpus() -> Runtimes {
    let icds: Vec<String> = std::fs::read_dir("/etc/OpenCL/vendors")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "icd"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    let pocl_only =
        !icds.is_empty() && icds.iter().all(|l| l.to_ascii_lowercase().contains("pocl"));
    Runtimes((!pocl_only).then(pocl_vendors))
}

/// A folder with PoCL alone registered through OCL_ICD_VENDORS (which the shortcut for
/// PoCL-only installs does not trust, as on a machine with a GPU); empty where PoCL is not
/// installed, as on a GPU host without it.
fn pocl_vendors() -> tempfile::TempDir {
    let vendors = tempfile::tempdir().unwrap();
    let pocl = std::fs::read_dir("/etc/OpenCL/vendors")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("pocl"));
    for icd in pocl {
        std::fs::copy(icd.path(), vendors.path().join(icd.file_name())).unwrap();
    }
    vendors
}

/// `gblur batch --device auto` where a GPU could be: the Rust path, without loading a driver
/// and whatever the cost figures say, with the reason in the summary.
#[test]
fn batch_auto_runs_the_rust_path_and_says_why() {
    let vendors = pocl_vendors();
    let input = tempfile::tempdir().unwrap();
    std::fs::copy(fixture("samples/coffee.png"), input.path().join("a.png")).unwrap();
    for figures in [None, Some(DEVICE_ALWAYS_WINS)] {
        let (cache, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut cmd = gblur();
        if let Some(figures) = figures {
            cmd.env("GBLUR_COST_FIGURES", figures);
        }
        let assert = cmd
            .env("OCL_ICD_VENDORS", vendors.path())
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
        .envs(runtimes.env())
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
