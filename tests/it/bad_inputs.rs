//! Every bad input gets one line naming the file and the cause, a non-zero exit, and loses
//! nothing: no partial output, no existing file destroyed, no temporary file left behind.

use assert_cmd::Command;
use predicates::prelude::*;
use std::path::Path;

use crate::common;
use common::{chmod, fixture, gblur, shared_dir, unprivileged};

/// Runs a failing blur into `dir/out.png`, which holds "previous" beforehand, and checks the
/// exit code, the one-line message, and that nothing else changed in `dir`.
fn fails(input: &Path, extra: &[&str], code: i32, message: &str) {
    fails_as(gblur(), input, extra, code, message)
}

/// `fails` for the gblur run by `cmd` (another user's, say). `dir` is open to every user, so
/// only the input's own permissions can stop that user.
fn fails_as(mut cmd: Command, input: &Path, extra: &[&str], code: i32, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o777);
    let out = dir.path().join("out.png");
    std::fs::write(&out, "previous").unwrap();
    let assert = cmd
        .arg(input)
        .arg(&out)
        .args(["--sigma", "2"])
        .args(extra)
        .assert()
        .code(code);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.starts_with("gblur: "), "{stderr}");
    assert!(stderr.contains(message), "wanted '{message}' in: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "not one line: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "files left behind: {left:?}");
}

#[test]
fn missing_input() {
    let p = fixture("tests/fixtures/does_not_exist.png");
    fails(&p, &[], 1, "does_not_exist.png: cannot read");
}

#[test]
fn not_an_image() {
    fails(
        &fixture("tests/fixtures/not_an_image.png"),
        &[],
        1,
        "not_an_image.png: gblur does not read this image (the content matches no known image format)",
    );
}

#[test]
fn truncated_file() {
    fails(
        &fixture("tests/fixtures/truncated.png"),
        &[],
        1,
        "truncated.png: cannot decode",
    );
}

#[test]
fn input_is_a_directory() {
    fails(&fixture("tests/fixtures"), &[], 1, "is a directory");
}

#[test]
fn over_the_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.png");
    image::GrayImage::new(2000, 1500).save(&big).unwrap();
    // The whole-image path refuses it; `--engine auto` would stream it (tests/it/stream.rs).
    let args = ["--max-memory", "1", "--engine", "whole"];
    fails(&big, &args, 1, "memory limit of 1 MiB");
}

#[test]
fn unreadable_input() {
    // Root reads any file, so as root the blur runs as `nobody` (common::unprivileged).
    let (dir, bin) = shared_dir();
    let p = dir.path().join("secret.png");
    std::fs::copy(fixture("tests/fixtures/gray16_7x5.png"), &p).unwrap();
    chmod(&p, 0o000);
    let cmd = Command::from_std(unprivileged(&bin));
    fails_as(
        cmd,
        &p,
        &[],
        1,
        "secret.png: cannot read: Permission denied",
    );
}

#[test]
fn bad_sigma_is_a_usage_error() {
    // 0 is scipy's "no blur along that axis" (tests/it/one_axis.rs); these are not sigmas.
    for s in ["0.0001", "-1", "nan", "inf", "abc", "2e6"] {
        gblur()
            .args([
                fixture("samples/coffee.png").to_str().unwrap(),
                "/tmp/x.png",
                "--sigma",
                s,
            ])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("sigma").or(predicate::str::contains("number")));
    }
    gblur()
        .args(["a.png", "b.png"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--sigma"));
}

#[test]
fn output_folder_missing() {
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg("/nonexistent-folder/out.png")
        .args(["--sigma", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "out.png: the output folder /nonexistent-folder does not exist",
        ));
}

#[test]
fn output_is_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("same.png");
    std::fs::copy(fixture("samples/camera-gray.png"), &p).unwrap();
    let before = std::fs::read(&p).unwrap();
    let alias = dir.path().join(".").join("same.png");
    gblur()
        .arg(&p)
        .arg(&alias)
        .args(["--sigma", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is the input file"));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn unknown_output_format() {
    let dir = tempfile::tempdir().unwrap();
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("out.xyz"))
        .args(["--sigma", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "out.xyz: unknown or unwritable output format",
        ));
}

#[test]
fn no_such_device() {
    let dir = tempfile::tempdir().unwrap();
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "2", "--device", "no-such-gpu"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--device no-such-gpu"));
    assert!(!dir.path().join("o.png").exists());
}

#[test]
fn existing_output_is_replaced_whole_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    std::fs::write(&out, "previous").unwrap();
    gblur()
        .arg(fixture("samples/camera-gray.png"))
        .arg(&out)
        .args(["--sigma", "2", "-q"])
        .assert()
        .success();
    assert!(image::open(&out).is_ok());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn no_clobber_keeps_an_existing_output() {
    let sample = fixture("samples/camera-gray.png");
    fails(
        &sample,
        &["--no-clobber"],
        2,
        "out.png: the output exists, and --no-clobber keeps it",
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("new.png");
    gblur()
        .arg(&sample)
        .arg(&out)
        .args(["--sigma", "2", "-q", "--no-clobber"])
        .assert()
        .success();
    assert!(image::open(&out).is_ok());
}
