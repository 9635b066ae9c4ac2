//! The command through pipes: `-` for stdin and stdout, the format from a prefix or the
//! input's content, the same bytes a file gets, and nothing on stdout when anything fails.

use image::{DynamicImage, GenericImageView};
use predicates::prelude::*;
use std::path::Path;

use crate::common;
use common::{fixture, gblur};

fn open(p: &Path) -> DynamicImage {
    image::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs gblur with `args`, `stdin` piped in, and returns its stdout (it must succeed).
fn piped(stdin: Vec<u8>, args: &[&str]) -> Vec<u8> {
    let assert = gblur()
        .args(args)
        .args(["--sigma", "3", "-q"])
        .write_stdin(stdin)
        .assert()
        .success()
        .stderr("");
    assert.get_output().stdout.clone()
}

fn decoded(bytes: &[u8], want: image::ImageFormat) -> DynamicImage {
    assert_eq!(image::guess_format(bytes).unwrap(), want);
    image::load_from_memory(bytes).unwrap()
}

#[test]
fn stdin_to_stdout_with_format() {
    let png = std::fs::read(fixture("samples/coffee.png")).unwrap();
    let out = piped(png, &["-", "-", "--format", "jpg"]);
    let img = decoded(&out, image::ImageFormat::Jpeg);
    assert_eq!(
        img.dimensions(),
        open(&fixture("samples/coffee.png")).dimensions()
    );
}

#[test]
fn stdout_prefix_picks_the_format() {
    let sample = fixture("samples/chelsea.jpg");
    for (out, want) in [
        ("png:-", image::ImageFormat::Png),
        ("jpeg:-", image::ImageFormat::Jpeg),
        ("tiff:-", image::ImageFormat::Tiff),
        ("webp:-", image::ImageFormat::WebP),
    ] {
        let bytes = piped(Vec::new(), &[sample.to_str().unwrap(), out]);
        let img = decoded(&bytes, want);
        assert_eq!(img.dimensions(), open(&sample).dimensions(), "{out}");
    }
}

#[test]
fn stdin_to_a_file_keeps_orientation() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.png");
    let jpg = std::fs::read(fixture("tests/fixtures/orientation6_8x4.jpg")).unwrap();
    piped(jpg, &["-", out.to_str().unwrap()]);
    assert_eq!(open(&out).dimensions(), (4, 8));
}

#[test]
fn a_prefix_forces_the_format_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.dat");
    let prefixed = format!("png:{}", out.display());
    piped(Vec::new(), &["samples/coffee.png", &prefixed]);
    decoded(&std::fs::read(&out).unwrap(), image::ImageFormat::Png);
}

#[test]
fn the_pipe_gives_the_bytes_the_file_gets() {
    let dir = tempfile::tempdir().unwrap();
    for (sample, ext) in [
        ("samples/coffee.png", "jpg"),
        ("samples/chelsea-rgba.png", "png"),
    ] {
        let out = dir.path().join(format!("o.{ext}"));
        piped(Vec::new(), &[sample, out.to_str().unwrap()]);
        let stdin = std::fs::read(fixture(sample)).unwrap();
        let piped_out = piped(stdin, &["-", &format!("{ext}:-")]);
        assert!(
            std::fs::read(&out).unwrap() == piped_out,
            "{sample} → {ext}"
        );
    }
}

#[test]
fn a_truncated_stdin_writes_nothing_to_stdout() {
    for sample in ["samples/coffee.png", "samples/chelsea.jpg"] {
        let bytes = std::fs::read(fixture(sample)).unwrap();
        let half = bytes[..bytes.len() / 2].to_vec();
        let assert = gblur()
            .args(["-", "png:-", "--sigma", "3"])
            .write_stdin(half)
            .assert()
            .code(1)
            .stdout("");
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            stderr.starts_with("gblur: stdin: cannot decode"),
            "{stderr}"
        );
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
    gblur()
        .args(["-", "png:-", "--sigma", "3"])
        .write_stdin(Vec::new())
        .assert()
        .code(1)
        .stdout("")
        .stderr("gblur: stdin: cannot decode: the input is empty (0 bytes)\n");
}

#[test]
fn stdout_takes_the_inputs_format_and_no_json() {
    for (input, format) in [
        ("samples/coffee.png", "png"),
        ("samples/chelsea.jpg", "jpg"),
    ] {
        let out = gblur()
            .args([input, "-", "--sigma", "3", "-q"])
            .assert()
            .success();
        let bytes = &out.get_output().stdout;
        let got = image::guess_format(bytes).unwrap();
        assert_eq!(got.extensions_str()[0], format, "{input}");
    }
    // From stdin too; and an input gblur reads but does not write names --format.
    let out = gblur()
        .args(["-", "-", "--sigma", "2", "-q"])
        .write_stdin(std::fs::read(fixture("samples/chelsea.jpg")).unwrap())
        .assert()
        .success();
    assert_eq!(
        image::guess_format(&out.get_output().stdout).unwrap(),
        image::ImageFormat::Jpeg
    );
    gblur()
        .args(["-", "-", "--sigma", "2"])
        .write_stdin(b"P5 2 1 255\n\x10\x20".to_vec())
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("--format"));
    for (extra, says) in [
        (&["--json", "--format", "png"][..], "--json"),
        (&["--format", "jpg"][..], "disagree"),
    ] {
        let out = if extra.contains(&"jpg") { "png:-" } else { "-" };
        gblur()
            .args(["samples/coffee.png", out, "--sigma", "3"])
            .args(extra)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicate::str::contains(says));
    }
}
