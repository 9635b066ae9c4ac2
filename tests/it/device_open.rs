//! A device that cannot be opened (`GBLUR_FAULT=open`: its context is refused): a batch goes
//! on without it, as when its kernels do not build, and says why.

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
