//! A device that cannot be opened (`GBLUR_FAULT=open`: its context is refused) or found (a
//! device looked for as the batch starts): a batch goes on without it, as when its kernels do
//! not build, and says why; and a device found as the batch starts takes the images once open.

use crate::common::{self, gblur};
use serde_json::Value;
use std::path::Path;

/// The only device of a batch cannot be opened: every file is blurred on the Rust path,
/// written as `--device rust` writes it, and the summary and stderr name the reason.
#[test]
fn a_batch_whose_device_cannot_be_opened_runs_on_the_rust_path() {
    common::require_opencl();
    let input = common::gray_batch_input(4);
    let rust = common::rust_batch(input.path());
    let out = tempfile::tempdir().unwrap();
    let o = gblur()
        .env("GBLUR_FAULT", "open")
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "2", "--json", "--device", "cpu"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blurred"], 4, "{v}");
    let device = &v["devices"][0];
    let stopped = device["stopped"].as_str().unwrap_or("");
    assert!(
        stopped.starts_with("it could not be opened")
            && stopped.ends_with("it blurred the rest of the batch on the built-in Rust path"),
        "{device}"
    );
    assert!(err.contains("could not be opened"), "{err}");
    common::assert_same_files(out.path(), rust.path(), "--device cpu, not opened");
}

/// Gray PNGs and JPEGs (whose planes go to the device) for a batch, and the same blurred by
/// `gblur batch --sigma 2 --device rust`.
fn mixed_input() -> (tempfile::TempDir, tempfile::TempDir) {
    let input = common::gray_batch_input(8);
    for i in 0..4 {
        let to = input.path().join(format!("c{i}.jpg"));
        std::fs::copy(common::fixture("samples/chelsea.jpg"), to).unwrap();
    }
    let rust = common::rust_batch(input.path());
    (input, rust)
}

/// `gblur batch IN OUT --sigma 2 --json` with `args` and the environment `env`: its status,
/// summary and stderr.
fn batch(
    input: &Path,
    out: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (std::process::ExitStatus, Value, String) {
    let o = gblur()
        .envs(env.iter().copied())
        .arg("batch")
        .arg(input)
        .arg(out)
        .args(["--sigma", "2", "--json"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status, v, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// A batch's one device looked for on its worker's thread as the batch starts (as `--device
/// gpu` is where a GPU runtime is registered; the test hook does it for PoCL's device, the
/// codec lanes blurring exactly 3 images first): the lanes blur those on the Rust path, the
/// device the rest, and each file is what the path its record names writes alone.
#[test]
fn a_device_looked_for_as_the_batch_starts_takes_the_images_once_open() {
    common::require_opencl();
    let (input, rust) = mixed_input();
    let (alone, late) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let device = ["--device", "cpu", "--pipeline", "blocked"];
    let (status, on_device, err) = batch(input.path(), alone.path(), &device, &[]);
    assert!(status.success(), "{err}");
    let hook = [("GBLUR_FIND_AS_BATCH_STARTS", "3")];
    let (status, v, err) = batch(input.path(), late.path(), &device, &hook);
    assert!(status.success(), "{err}");
    assert_eq!(v["blurred"], 12, "{v}");
    assert_eq!(
        v["devices"][0]["device"], on_device["device"],
        "named once found"
    );
    assert_eq!(v["devices"][0]["backend"], "opencl");
    assert_eq!(v["devices"][0]["images"], 9, "{v}");
    assert!(v["devices"][0]["stopped"].is_null(), "{v}");
    let files = v["files"].as_array().unwrap();
    let warm_up = files.iter().filter(|f| f["worker"].is_null()).count();
    assert_eq!(warm_up, 3, "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("3 of 12 images were blurred on the built-in Rust path while"),
        "{notes}"
    );
    for f in files {
        assert_eq!(
            f["worker"].is_null(),
            f["device"] != on_device["device"],
            "{f}"
        );
        let name = Path::new(f["output"].as_str().unwrap())
            .file_name()
            .unwrap();
        let want = match f["worker"].is_null() {
            false => alone.path().join(name),
            true => rust.path().join(name),
        };
        assert!(
            std::fs::read(late.path().join(name)).unwrap() == std::fs::read(want).unwrap(),
            "{f}"
        );
    }
}

/// A device looked for as the batch starts and not found: the batch blurs every image on the
/// Rust path, and the summary and stderr say why; no note counts the lanes' own images.
#[test]
fn a_device_looked_for_and_not_found_leaves_the_batch_to_the_rust_path() {
    let (input, rust) = mixed_input();
    let out = tempfile::tempdir().unwrap();
    let device = ["--device", "no-such-device", "--pipeline", "blocked"];
    let hook = [("GBLUR_FIND_AS_BATCH_STARTS", "2")];
    let (status, v, err) = batch(input.path(), out.path(), &device, &hook);
    assert!(status.success(), "{err}");
    assert_eq!(v["blurred"], 12, "{v}");
    let device = &v["devices"][0];
    assert_eq!(device["device"], "--device no-such-device");
    let stopped = device["stopped"].as_str().unwrap_or("");
    assert!(
        stopped.starts_with("no device was found")
            && stopped.ends_with("it blurred the rest of the batch on the built-in Rust path"),
        "{device}"
    );
    assert_eq!(v["notes"], serde_json::json!([]), "{v}");
    assert!(err.contains("no device was found"), "{err}");
    common::assert_same_files(out.path(), rust.path(), "--device not found");
}

/// `--device gpu` in a batch, without a GPU runtime registered (an empty vendors folder) and
/// with one whose library is not there: the first is refused before OUT_DIR is made; the
/// second looks for the GPU as the batch starts, finds none, and runs on the Rust path.
#[test]
fn device_gpu_in_a_batch_is_refused_without_a_gpu_runtime_and_looked_for_with_one() {
    let (input, rust) = mixed_input();
    let vendors = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let refused = out.path().join("refused");
    let env = [("OCL_ICD_VENDORS", vendors.path().to_str().unwrap())];
    let (status, _, err) = batch(input.path(), &refused, &["--device", "gpu"], &env);
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(!refused.exists(), "OUT_DIR made before the refusal");
    std::fs::write(
        vendors.path().join("gone.icd"),
        "/nonexistent/libgone-opencl.so\n",
    )
    .unwrap();
    let looked = out.path().join("looked");
    let (status, v, err) = batch(input.path(), &looked, &["--device", "gpu"], &env);
    assert!(status.success(), "{err}");
    assert_eq!(v["blurred"], 12, "{v}");
    let stopped = v["devices"][0]["stopped"].as_str().unwrap_or("");
    assert!(stopped.starts_with("no device was found"), "{v}");
    // The codec lanes blurred every image themselves, none the worker's one thread.
    assert_eq!(v["devices"][0]["images"], 0, "{v}");
    common::assert_same_files(&looked, rust.path(), "--device gpu, no GPU found");
}
