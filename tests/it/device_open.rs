//! A device that cannot be opened (`GBLUR_FAULT=open`: its context is refused) or found (a
//! device looked for as the batch starts): a batch goes on without it, as when its kernels do
//! not build, and says why; and a device found as the batch starts takes the images once open.

use crate::common::{self, gblur};
use serde_json::Value;

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

/// A batch's one device looked for on its worker's thread as the batch starts (as `--device
/// gpu` is where a GPU runtime is registered; the test hook does it for PoCL's device): the
/// codec lanes blur on the Rust path until the device is open, the device takes the rest, and
/// each file is what the path named in its record writes alone.
#[test]
fn a_device_looked_for_as_the_batch_starts_takes_the_images_once_open() {
    common::require_opencl();
    let input = common::gray_batch_input(12);
    let rust = common::rust_batch(input.path());
    let run = |hook: bool, out: &std::path::Path| {
        let mut cmd = gblur();
        if hook {
            cmd.env("GBLUR_FIND_AS_BATCH_STARTS", "1");
        }
        let o = cmd
            .arg("batch")
            .arg(input.path())
            .arg(out)
            .args(["--sigma", "2", "--json", "--device", "cpu"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    let (alone, late) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on_device = run(false, alone.path());
    let v = run(true, late.path());
    assert_eq!(v["blurred"], 12, "{v}");
    assert_eq!(
        v["devices"][0]["device"], on_device["device"],
        "named once found"
    );
    assert_eq!(v["devices"][0]["backend"], "opencl");
    assert!(v["devices"][0]["stopped"].is_null(), "{v}");
    // The lanes' own images name no worker, and a note counts them.
    let files = v["files"].as_array().unwrap();
    let warm_up = files.iter().filter(|f| f["worker"].is_null()).count();
    let notes = v["notes"].to_string();
    assert_eq!(
        warm_up > 0,
        notes.contains(&format!(
            "{warm_up} of 12 images were blurred on the built-in Rust path while"
        )),
        "{notes}"
    );
    for f in files {
        assert_eq!(
            f["worker"].is_null(),
            f["device"] != on_device["device"],
            "{f}"
        );
        let name = std::path::Path::new(f["output"].as_str().unwrap())
            .file_name()
            .unwrap()
            .to_owned();
        let want = match f["device"].as_str().unwrap() {
            d if Some(d) == on_device["device"].as_str() => alone.path().join(&name),
            _ => rust.path().join(&name),
        };
        assert!(
            std::fs::read(late.path().join(&name)).unwrap() == std::fs::read(want).unwrap(),
            "{f}"
        );
    }
}

/// A device looked for as the batch starts and not found: the batch blurs every image on the
/// Rust path, and the summary and stderr say why.
#[test]
fn a_device_looked_for_and_not_found_leaves_the_batch_to_the_rust_path() {
    let input = common::gray_batch_input(4);
    let rust = common::rust_batch(input.path());
    let out = tempfile::tempdir().unwrap();
    let o = gblur()
        .env("GBLUR_FIND_AS_BATCH_STARTS", "1")
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "2", "--json", "--device", "no-such-device"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["blurred"], 4, "{v}");
    let device = &v["devices"][0];
    assert_eq!(device["device"], "--device no-such-device");
    let stopped = device["stopped"].as_str().unwrap_or("");
    assert!(
        stopped.starts_with("no device was found")
            && stopped.ends_with("it blurred the rest of the batch on the built-in Rust path"),
        "{device}"
    );
    assert!(err.contains("no device was found"), "{err}");
    common::assert_same_files(out.path(), rust.path(), "--device not found");
}
