//! One open: `gblur IN OUT` opens its input once, whatever reads it (the sniff, a TIFF's pages,
//! the CMYK check, the cost model's probe of the header, the decoder, the strip engine's rows
//! and its exact two-pass method's second read), traced with strace: JPEG, PNG, TIFF and HEIC
//! on the whole-image path, the first three on the strip engine, a CMYK JPEG, a TIFF stack.
//! `gblur batch` opens each file twice: once to plan it, once to blur it.

use crate::common::fixture;
use std::path::Path;
use std::process::Command;

/// The trace of `gblur ARGS` with `env` set, as strace writes it; the run must succeed.
/// strace must be installed (`.ci/run` installs it); where the system forbids tracing, there
/// is nothing to count, and None says so.
fn trace(args: &[&std::ffi::OsStr], env: &[(&str, &str)], at: &Path) -> Option<String> {
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat", "-o"])
        .arg(at)
        .arg(assert_cmd::cargo::cargo_bin("gblur"))
        .args(args)
        .args(["-s", "5", "-q"])
        .envs(env.iter().copied())
        .output()
        .expect(
            "strace is needed for this test (Debian: apt-get install strace; .ci/run installs it)",
        );
    let stderr = String::from_utf8_lossy(&traced.stderr);
    if !traced.status.success() && stderr.contains("ptrace") {
        eprintln!(
            "strace cannot trace here ({}): nothing to count",
            stderr.trim()
        );
        return None;
    }
    assert!(traced.status.success(), "{stderr}");
    Some(std::fs::read_to_string(at).unwrap())
}

/// How many of the trace's lines open `path`.
fn count(trace: &str, path: &Path) -> usize {
    let quoted = format!("\"{}\"", path.display());
    trace.lines().filter(|l| l.contains(&quoted)).count()
}

/// How many times `gblur INPUT OUT -s 5 ARGS` opens `input`, with `env` set (None: tracing
/// is not allowed here).
fn opens(input: &Path, out: &Path, args: &[&str], env: &[(&str, &str)]) -> Option<usize> {
    let mut all = vec![input.as_os_str(), out.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    let trace = trace(&all, env, &out.with_extension("trace"))?;
    Some(count(&trace, input))
}

/// `opens` must be one (or tracing is not allowed here).
fn assert_once(input: &Path, out: &Path, args: &[&str], env: &[(&str, &str)]) {
    if let Some(n) = opens(input, out, args, env) {
        assert_eq!(n, 1, "{} opened {n} times with {args:?}", input.display());
    }
}

#[test]
fn each_format_is_opened_once_on_the_whole_image_path_and_on_the_strip_engine() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    std::fs::copy(fixture("samples/chelsea.jpg"), d("in.jpg")).unwrap();
    std::fs::copy(fixture("samples/coffee.png"), d("in.png")).unwrap();
    image::open(d("in.png")).unwrap().save(d("in.tif")).unwrap();
    for input in ["in.jpg", "in.png", "in.tif"] {
        let out = d(&format!("whole-{input}"));
        assert_once(&d(input), &out, &["--engine", "whole"], &[]);
        let out = d(&format!("auto-{input}"));
        assert_once(&d(input), &out, &[], &[]);
        let out = d(&format!("strips-{input}"));
        assert_once(&d(input), &out, &["--engine", "strips"], &[]);
    }
    // The exact two-pass method reads the file twice, through the one handle.
    let two_pass = [("GBLUR_TWO_PASS", "1")];
    assert_once(
        &d("in.png"),
        &d("two-pass.png"),
        &["--engine", "strips"],
        &two_pass,
    );
    let heic = d("in.heic");
    std::fs::copy(fixture("tests/fixtures/heif/photo_exif.heic"), &heic).unwrap();
    assert_once(&heic, &d("heic.png"), &[], &[]);
}

#[test]
fn a_cmyk_jpeg_and_a_tiff_stack_are_opened_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    std::fs::copy(fixture("tests/fixtures/cmyk_64x48.jpg"), d("cmyk.jpg")).unwrap();
    assert_once(&d("cmyk.jpg"), &d("inks.jpg"), &[], &[]);
    let stack = d("stack.tif");
    let mut tiff = tiff::encoder::TiffEncoder::new(std::fs::File::create(&stack).unwrap()).unwrap();
    for page in 0..3u8 {
        let samples: Vec<u8> = (0..32 * 24).map(|i| (i % 251) as u8 ^ page).collect();
        tiff.write_image::<tiff::encoder::colortype::Gray8>(32, 24, &samples)
            .unwrap();
    }
    drop(tiff);
    assert_once(&stack, &d("pages.tif"), &[], &[]);
    assert_once(&stack, &d("page1.png"), &["--page", "1"], &[]);
    assert_once(&stack, &d("volume.tif"), &["--sigma-z", "1"], &[]);
}

/// A batch holds no file open between planning and its turn: each input is opened twice, once
/// when it is planned (recognised, and told a TIFF stack or a CMYK file there) and once when it
/// is blurred, whichever way it goes.
#[test]
fn a_batch_opens_each_file_twice() {
    let (input, output) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let traces = tempfile::tempdir().unwrap();
    let d = |name: &str| input.path().join(name);
    std::fs::copy(fixture("samples/chelsea.jpg"), d("photo.jpg")).unwrap();
    std::fs::copy(fixture("samples/coffee.png"), d("coffee.png")).unwrap();
    image::open(d("coffee.png"))
        .unwrap()
        .save(d("coffee.tif"))
        .unwrap();
    std::fs::copy(fixture("tests/fixtures/cmyk_64x48.jpg"), d("cmyk.jpg")).unwrap();
    let mut tiff =
        tiff::encoder::TiffEncoder::new(std::fs::File::create(d("stack.tif")).unwrap()).unwrap();
    for page in 0..3u8 {
        let samples: Vec<u8> = (0..32 * 24).map(|i| (i % 251) as u8 ^ page).collect();
        tiff.write_image::<tiff::encoder::colortype::Gray8>(32, 24, &samples)
            .unwrap();
    }
    drop(tiff);
    // The host's cores: a device that fails would decode its image again (a third open).
    let args = [
        std::ffi::OsStr::new("batch"),
        input.path().as_os_str(),
        output.path().as_os_str(),
        std::ffi::OsStr::new("--device"),
        std::ffi::OsStr::new("rust"),
    ];
    let Some(trace) = trace(&args, &[], &traces.path().join("batch.trace")) else {
        return;
    };
    for name in [
        "photo.jpg",
        "coffee.png",
        "coffee.tif",
        "cmyk.jpg",
        "stack.tif",
    ] {
        let n = count(&trace, &d(name));
        assert_eq!(n, 2, "{name} opened {n} times by the batch");
    }
    // The stack and the CMYK file went the whole-file way, told apart in the planning open:
    // every page kept, the inks kept.
    let pages =
        tiff::decoder::Decoder::new(std::fs::File::open(output.path().join("stack.tif")).unwrap())
            .unwrap();
    assert_eq!(pages_of(pages), 3);
    let jpeg = std::fs::read(output.path().join("cmyk.jpg")).unwrap();
    assert_eq!(jpeg_components(&jpeg), Some(4), "the inks are kept");
}

/// How many pages `decoder`'s TIFF holds.
fn pages_of<R: std::io::Read + std::io::Seek>(mut decoder: tiff::decoder::Decoder<R>) -> usize {
    let mut n = 1;
    while decoder.more_images() {
        decoder.next_image().unwrap();
        n += 1;
    }
    n
}

/// The component count in a JPEG's frame header (SOF0 to SOF2), walking its segments.
fn jpeg_components(jpeg: &[u8]) -> Option<u8> {
    let mut at = 2;
    loop {
        let head: [u8; 4] = jpeg.get(at..at + 4)?.try_into().ok()?;
        let [0xFF, marker, hi, lo] = head else {
            return None;
        };
        if (0xC0..=0xC2).contains(&marker) {
            return jpeg.get(at + 9).copied();
        }
        at += 2 + u16::from_be_bytes([hi, lo]) as usize;
    }
}
