//! `gblur batch` across devices: a device list spreads the images and writes what one device
//! writes, a Rust worker beside a device, `--device all`, and the refusals of lists.

use serde_json::Value;
use std::path::Path;

use crate::batch::{batch_with, blurred_inputs, photo_folder};
use crate::common;
use common::{files_under, fixture, gblur};

/// `photo_folder` with 10 more images, enough for every device worker to take some.
fn busy_folder() -> tempfile::TempDir {
    let dir = photo_folder();
    for i in 0..10 {
        let sample = ["samples/coffee.png", "samples/chelsea-rgba.png"][i % 2];
        std::fs::copy(fixture(sample), dir.path().join(format!("more{i}.png"))).unwrap();
    }
    dir
}

fn record<'a>(v: &'a Value, input: &str) -> &'a Value {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["input"] == input)
        .unwrap_or_else(|| panic!("no record for {input}"))
}

#[test]
fn a_device_list_spreads_the_images_and_writes_what_one_device_writes() {
    common::require_opencl();
    let input = busy_folder();
    let one = tempfile::tempdir().unwrap();
    let two = tempfile::tempdir().unwrap();
    let single = batch_with(
        &["--sigma", "3", "--device", "cpu"],
        input.path(),
        one.path(),
        1,
    );
    // The same device by kind and by index (its index in `gblur devices`).
    let cpu_index = {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
            .args(["devices", "--json"])
            .output()
            .unwrap();
        let list: Value = serde_json::from_slice(&o.stdout).unwrap();
        let cpu = list.as_array().unwrap().iter().find(|d| d["kind"] == "cpu");
        cpu.expect("an OpenCL CPU device (PoCL)")["index"].clone()
    };
    for list in ["cpu,cpu".to_string(), format!("{cpu_index},{cpu_index}")] {
        let list = list.as_str();
        let v = batch_with(
            &["--sigma", "3", "--device", list, "--overwrite"],
            input.path(),
            two.path(),
            1,
        );
        assert_eq!(
            (v["blurred"].as_u64(), v["failed"].as_u64()),
            (Some(15), Some(1))
        );
        assert_eq!(blurred_inputs(&v), blurred_inputs(&single), "{list}");
        // Every image exactly once: one record each, from one of the two workers.
        let files = v["files"].as_array().unwrap();
        assert_eq!(files.len(), 17, "{list}: one record per file");
        let devices = v["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 2, "{list}: {devices:?}");
        for (k, d) in devices.iter().enumerate() {
            assert_eq!(d["worker"], k);
            assert_eq!(d["backend"], "opencl");
            assert_eq!(d["device"], single["device"], "the same device twice");
            assert_eq!(d["rust_fallbacks"], 0);
            assert!(d["stopped"].is_null());
        }
        // Which worker takes which image is the scheduler's choice (one whose device started
        // late may find none left): together they blur each image once.
        let per_worker: u64 = devices.iter().map(|d| d["images"].as_u64().unwrap()).sum();
        assert_eq!(per_worker, 15, "{list}");
        let mp: f64 = devices
            .iter()
            .map(|d| d["megapixels"].as_f64().unwrap())
            .sum();
        let want: f64 = files
            .iter()
            .map(|f| f["megapixels"].as_f64().unwrap())
            .sum();
        assert!((mp - want).abs() < 1e-9, "{mp} {want}");
        for f in files.iter().filter(|f| f["outcome"] == "blurred") {
            let w = f["worker"].as_u64().unwrap() as usize;
            assert_eq!(f["device"], devices[w]["device"], "{f}");
        }
        assert!(files
            .iter()
            .filter(|f| f["outcome"] != "blurred")
            .all(|f| f["device"].is_null()));
        // Byte for byte what the single device wrote (JPEG and PNG outputs alike).
        assert_eq!(files_under(two.path()), files_under(one.path()));
        for name in files_under(one.path()) {
            assert!(
                std::fs::read(one.path().join(&name)).unwrap()
                    == std::fs::read(two.path().join(&name)).unwrap(),
                "{list}: {name} differs from the single-device output"
            );
        }
    }
}

#[test]
fn a_rust_worker_beside_a_device_writes_what_each_writes_alone() {
    common::require_opencl();
    let input = busy_folder();
    // Sigma 3 loads images for the in-place Rust path (the device worker converts its own);
    // sigma 1.5 takes the FIR, planar for both. Beside a device on the direct pipeline (PoCL's
    // default), which does not take JPEG planes, the Rust worker blurs JPEGs in RGB, so its
    // lone run is asked for that path; beside the blocked pipeline both blur planes.
    for (sigma, pipeline) in [("3", "auto"), ("1.5", "auto"), ("3", "blocked")] {
        let rust_path = match pipeline {
            "auto" => "rgb",
            _ => "auto",
        };
        let (dev, rust, mixed) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let on_dev = batch_with(
            &["--sigma", sigma, "--device", "0", "--pipeline", pipeline],
            input.path(),
            dev.path(),
            1,
        );
        let on_rust = batch_with(
            &[
                "--sigma",
                sigma,
                "--device",
                "rust",
                "--jpeg-path",
                rust_path,
            ],
            input.path(),
            rust.path(),
            1,
        );
        let v = batch_with(
            &[
                "--sigma",
                sigma,
                "--device",
                "0,rust",
                "--pipeline",
                pipeline,
            ],
            input.path(),
            mixed.path(),
            1,
        );
        assert_eq!(v["blurred"], 15, "sigma {sigma}");
        let devices = v["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0]["device"], on_dev["device"]);
        assert_eq!(devices[0]["backend"], "opencl");
        assert_eq!(devices[1]["device"], on_rust["device"]);
        assert_eq!(devices[1]["backend"], "rust");
        assert_eq!(
            v["device"],
            format!(
                "{} + {}",
                on_dev["device"].as_str().unwrap(),
                on_rust["device"].as_str().unwrap()
            )
        );
        // Which worker takes which image is the scheduler's choice (one whose device started
        // late may find none left): together they blur each image once.
        let per_worker: u64 = devices.iter().map(|d| d["images"].as_u64().unwrap()).sum();
        assert_eq!(per_worker, 15);
        assert_eq!(files_under(mixed.path()), files_under(dev.path()));
        for f in v["files"].as_array().unwrap() {
            if f["outcome"] != "blurred" {
                continue;
            }
            let input_path = f["input"].as_str().unwrap();
            let name = Path::new(f["output"].as_str().unwrap())
                .strip_prefix(mixed.path().canonicalize().unwrap())
                .unwrap()
                .to_path_buf();
            // Each file is what the worker that took it writes on its own.
            let (alone, alone_dir) = match f["worker"].as_u64() {
                Some(0) => (&on_dev, dev.path()),
                Some(1) => (&on_rust, rust.path()),
                w => panic!("{input_path}: worker {w:?}"),
            };
            assert_eq!(f["device"], alone["device"], "{input_path}");
            assert_eq!(record(alone, input_path)["outcome"], "blurred");
            assert!(
                std::fs::read(mixed.path().join(&name)).unwrap()
                    == std::fs::read(alone_dir.join(&name)).unwrap(),
                "sigma {sigma}: {} differs from what worker {} writes alone",
                name.display(),
                f["worker"]
            );
        }
    }
}

#[test]
fn device_all_takes_every_gpu_or_what_auto_picks() {
    let gpus = {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
            .args(["devices", "--json"])
            .output()
            .unwrap();
        let list: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        list.as_array()
            .map_or(0, |l| l.iter().filter(|d| d["kind"] == "gpu").count())
    };
    let input = tempfile::tempdir().unwrap();
    for i in 0..3 {
        std::fs::copy(
            fixture("samples/coffee.png"),
            input.path().join(format!("c{i}.png")),
        )
        .unwrap();
    }
    let out = tempfile::tempdir().unwrap();
    let v = batch_with(
        &["--sigma", "3", "--device", "all"],
        input.path(),
        out.path(),
        0,
    );
    assert_eq!(v["blurred"], 3);
    let devices = v["devices"].as_array().unwrap();
    if gpus == 0 {
        let auto = batch_with(
            &["--sigma", "3", "--overwrite"],
            input.path(),
            tempfile::tempdir().unwrap().path(),
            0,
        );
        assert_eq!(devices.len(), 1, "{devices:?}");
        assert_eq!(v["device"], auto["device"], "what auto picks");
        let notes = v["notes"].as_array().unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0]
                .as_str()
                .unwrap()
                .starts_with("--device all found no GPU"),
            "{notes:?}"
        );
        // Said once, in the summary, not on every file.
        assert!(!v["files"].to_string().contains("--device all"));
    } else {
        assert_eq!(devices.len(), gpus, "{devices:?}");
        assert!(devices.iter().all(|d| d["backend"] == "opencl"));
        assert_eq!(v["notes"].as_array().unwrap().len(), 0);
    }
    // Without --json, the note is on stderr, once.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "3", "--device", "all", "--overwrite"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.matches("--device all found no GPU").count(),
        usize::from(gpus == 0),
        "{err}"
    );
}

#[test]
fn the_main_command_refuses_all_and_lists() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    for device in ["all", "0,rust", "rust,rust"] {
        let o = gblur()
            .arg(fixture("samples/coffee.png"))
            .arg(&out)
            .args(["--sigma", "2", "--device", device])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{device}: {err}");
        assert_eq!(err.lines().count(), 1, "{device}: one line: {err}");
        assert!(
            err.starts_with(&format!("gblur: --device {device}: ")) && err.contains("gblur batch"),
            "{err}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn an_unknown_device_in_a_list_is_a_one_line_usage_error() {
    let input = photo_folder();
    let parent = tempfile::tempdir().unwrap();
    let out = parent.path().join("out");
    for (device, names) in [("0,nosuchdevice", "nosuchdevice"), ("rust,99", "99")] {
        let o = gblur()
            .arg("batch")
            .arg(input.path())
            .arg(&out)
            .args(["--sigma", "2", "--device", device])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{device}: {err}");
        assert_eq!(err.lines().count(), 1, "{device}: one line: {err}");
        common::require_opencl();
        assert!(
            err.contains(&format!("no OpenCL device matches --device {names} ")),
            "{err}"
        );
        assert!(!out.exists(), "{device}: nothing is created");
    }
    // Lists that name nothing are refused by the parser.
    for (device, says) in [
        ("0,,1", "empty entry"),
        ("0,auto", "'auto' cannot be part of a list"),
        ("all,rust", "'all' cannot be part of a list"),
    ] {
        gblur()
            .arg("batch")
            .arg(input.path())
            .arg(&out)
            .args(["--sigma", "2", "--device", device])
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}
