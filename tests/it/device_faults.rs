//! OpenCL device faults (PoCL with injected failures): a single image and a batch fall back to
//! the Rust path with a note, an image over the device's allocation limit runs on the host,
//! and a batch over several devices survives a broken one.

use serde_json::Value;

use crate::common;
use crate::faults::{report, stderr};
use common::{files_under, fixture, gblur};

/// The OpenCL CPU device (PoCL), which is on every machine the suite runs on.
const ON_DEVICE: &[&str] = &["--device", "cpu"];

#[test]
fn device_faults_fall_back_to_the_rust_path_with_a_note() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/coffee.png");
    let rust = dir.path().join("rust.png");
    report(&input, &rust, &[], &["--device", "rust"]);
    // `auto` prefers the Rust path to a CPU OpenCL device: the drills name the device.
    let device = report(&input, &dir.path().join("device.png"), &[], ON_DEVICE);
    assert_eq!(
        device["backend"], "opencl",
        "the drill needs the device path"
    );
    for (fault, says) in [
        ("build", "building recursive_gaussian.cl"),
        ("enqueue", "failed to enqueue"),
        ("alloc", "CL_MEM_OBJECT_ALLOCATION_FAILURE"),
    ] {
        let out = dir.path().join(format!("{fault}.png"));
        let v = report(&input, &out, &[("GBLUR_FAULT", fault)], ON_DEVICE);
        assert_eq!(v["backend"], "rust", "{fault}: {v}");
        let notes = v["notes"].to_string();
        assert!(
            notes.contains("the OpenCL device failed") && notes.contains(says),
            "{fault}: {notes}"
        );
        assert!(!notes.contains("compiler log"), "{notes}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(&rust).unwrap(),
            "{fault}"
        );
    }
}

#[test]
fn an_image_over_the_device_allocation_limit_runs_on_the_rust_path() {
    common::require_opencl();
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/coffee.png"); // 600×400×3 f32 = 2.75 MiB per buffer
    let rust = dir.path().join("rust.png");
    report(&input, &rust, &[], &["--device", "rust"]);
    let out = dir.path().join("big.png");
    let v = report(&input, &out, &[("GBLUR_MAX_ALLOC_MIB", "1")], ON_DEVICE);
    assert_eq!(v["backend"], "rust", "{v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("needs 3 MiB per device buffer") && notes.contains("allows 1 MiB"),
        "{notes}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&rust).unwrap());
    // With room for it, the same image runs on the device.
    let v = report(&input, &out, &[("GBLUR_MAX_ALLOC_MIB", "4")], ON_DEVICE);
    assert_eq!(v["backend"], "opencl", "{v}");
}

#[test]
fn batch_survives_device_faults() {
    common::require_opencl();
    let input = tempfile::tempdir().unwrap();
    for name in ["a.png", "b.png", "c.png"] {
        std::fs::copy(fixture("samples/camera-gray.png"), input.path().join(name)).unwrap();
    }
    for (fault, says) in [
        ("build", "building"),
        ("enqueue", "failed to enqueue"),
        ("alloc", "CL_MEM_OBJECT_ALLOCATION_FAILURE"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let o = gblur()
            .env("GBLUR_FAULT", fault)
            .arg("batch")
            .arg(input.path())
            .arg(out.path())
            .args(["--sigma", "2", "--json", "-q"])
            .args(ON_DEVICE)
            .output()
            .unwrap();
        assert!(o.status.success(), "{fault}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["blurred"], 3, "{fault}");
        let notes = v["files"].to_string();
        assert!(
            notes.contains("the OpenCL device failed") && notes.contains(says),
            "{fault}: {notes}"
        );
        assert_eq!(files_under(out.path()).len(), 3);
    }
}

/// Several device workers (`--device cpu,cpu`, `cpu,rust`) when the kernels never build: a
/// broken device stops taking images while another worker still blurs, the last one standing
/// finishes on the Rust path, and every file is written as `--device rust` writes it.
#[test]
fn batch_on_several_devices_survives_a_broken_one() {
    common::require_opencl();
    let input = common::gray_batch_input(6);
    let rust = common::rust_batch(input.path());
    for list in ["cpu,cpu", "cpu,rust"] {
        let out = tempfile::tempdir().unwrap();
        let o = gblur()
            .env("GBLUR_FAULT", "build")
            .arg("batch")
            .arg(input.path())
            .arg(out.path())
            .args(["--sigma", "2", "--json", "--device", list])
            .output()
            .unwrap();
        assert!(o.status.success(), "{list}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["blurred"], 6, "{list}");
        let devices = v["devices"].as_array().unwrap();
        let images = |k: usize| devices[k]["images"].as_u64().unwrap();
        let stopped = |k: usize| devices[k]["stopped"].as_str().unwrap_or("").to_string();
        assert_eq!(images(0) + images(1), 6, "{list}: {devices:?}");
        if list == "cpu,cpu" {
            // Both devices break on their first image; one leaves after it, the other, the
            // last standing, blurs the rest on the Rust path.
            let (left, stayed) = if stopped(0).contains("took no more images") {
                (0, 1)
            } else {
                (1, 0)
            };
            assert!(stopped(left).contains("took no more images"), "{devices:?}");
            assert_eq!(images(left), 1, "{devices:?}");
            assert!(
                stopped(stayed).contains("blurred the rest of the batch on the built-in Rust path"),
                "{devices:?}"
            );
            for k in 0..2 {
                assert_eq!(
                    devices[k]["rust_fallbacks"], devices[k]["images"],
                    "{devices:?}"
                );
            }
        } else {
            // The device leaves after the one image it broke on (if it took any); the Rust
            // worker blurs the rest and never stops.
            assert!(images(0) <= 1, "{devices:?}");
            if images(0) == 1 {
                assert!(stopped(0).contains("took no more images"), "{devices:?}");
            }
            assert!(devices[1]["stopped"].is_null());
            assert_eq!(devices[1]["rust_fallbacks"], 0);
        }
        let err = stderr(&o);
        if images(0) > 0 {
            assert!(err.contains("the kernels did not build"), "{err}");
        }
        common::assert_same_files(out.path(), rust.path(), list);
    }
}
