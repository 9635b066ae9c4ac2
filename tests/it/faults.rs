//! Fault drills: a full disk, permission denied, decompression bombs, empty and
//! truncated files, symbolic links, device faults, NaN/Inf samples, outputs that would leave
//! OUT_DIR, inputs that must never be opened for writing. Each fault ends in one clear line,
//! a documented exit code, the previous output intact and no temporary file left.
//!
//! Symbolic links and OUT_DIR are drilled in tests/it/links.rs, OpenCL device faults in
//! tests/it/device_faults.rs; Ctrl-C in the middle of a batch in tests/it/batch.rs
//! (`ctrl_c_stops_cleanly_leaving_only_complete_outputs`); corrupt, truncated PNG and
//! over-the-limit inputs of the main command in tests/it/bad_inputs.rs.

use serde_json::Value;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::common;
use common::{chmod, files_under, fixture, gblur, shared_dir, unprivileged};

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_temp_files(dir: &Path) {
    let left: Vec<_> = files_under(dir)
        .into_iter()
        .filter(|f| f.contains(".gblur-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

/// A `side`×`side` RGB image of noise: its PNG is about 3 bytes a pixel, whatever the blur.
fn noise_png(path: &Path, side: u32, seed: u32) {
    let mut s = seed.wrapping_mul(2_654_435_761) | 1;
    let img = image::RgbImage::from_fn(side, side, |_, _| {
        let mut px = [0u8; 3];
        for v in &mut px {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            *v = (s >> 24) as u8;
        }
        image::Rgb(px)
    });
    img.save(path).unwrap();
}

/// Checks the failure every write fault must end in: exit 1, one line naming OUT and the
/// cause, the previous OUT unchanged, nothing else in its folder.
fn write_fault(out: &Output, out_path: &Path, cause: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    let name = out_path.display().to_string();
    let want = format!("{name}: cannot write: {cause}").to_lowercase();
    assert!(
        err.starts_with("gblur: ") && err.to_lowercase().contains(&want),
        "wanted '{want}' in: {err}"
    );
    assert_eq!(std::fs::read_to_string(out_path).unwrap(), "previous");
    let dir = out_path.parent().unwrap();
    assert_eq!(files_under(dir).len(), 1, "{:?}", files_under(dir));
}

// ---- A full disk ------------------------------------------------------------------------

/// A small tmpfs mounted for one test, unmounted when dropped. `None` where mounting is not
/// allowed (not root, or a container without CAP_SYS_ADMIN).
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(dir))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.0.path())
            .status();
    }
}

/// Runs gblur with `args` under a file-size limit of 64 KiB (RLIMIT_FSIZE) with SIGXFSZ
/// ignored, so that a write past it fails with EFBIG as the kernel reports it: the same code
/// path as a full disk, available to any user in any container.
fn gblur_with_file_size_limit(args: &[&std::ffi::OsStr]) -> Output {
    // `ulimit -f` counts 512-byte blocks in dash and 1024-byte blocks in bash: 64 KiB at most.
    std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"trap "" XFSZ; ulimit -f 64 && exec "$@""#)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_gblur"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn disk_full_keeps_the_previous_output_and_leaves_no_temp_file() {
    let src = tempfile::tempdir().unwrap();
    let input = src.path().join("noise.png");
    noise_png(&input, 512, 1); // ~790 KB of PNG to write
    match Tmpfs::mount("256k") {
        Some(disk) => {
            let out = disk.path().join("out.png");
            std::fs::write(&out, "previous").unwrap();
            let o = gblur()
                .arg(&input)
                .arg(&out)
                .args(["--sigma", "0.5", "--device", "rust"])
                .output()
                .unwrap();
            write_fault(&o, &out, "No space left on device");
        }
        None => {
            eprintln!("cannot mount a tmpfs here: drilling the full disk with RLIMIT_FSIZE");
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("out.png");
            std::fs::write(&out, "previous").unwrap();
            let o = gblur_with_file_size_limit(&[
                input.as_os_str(),
                out.as_os_str(),
                "--sigma".as_ref(),
                "0.5".as_ref(),
                "--device".as_ref(),
                "rust".as_ref(),
            ]);
            write_fault(&o, &out, "File too large");
        }
    }
}

#[test]
fn write_failing_midway_keeps_the_previous_output_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("noise.png");
    noise_png(&input, 512, 2);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("out.png");
    std::fs::write(&out, "previous").unwrap();
    let o = gblur_with_file_size_limit(&[
        input.as_os_str(),
        out.as_os_str(),
        "--sigma".as_ref(),
        "0.5".as_ref(),
        "--device".as_ref(),
        "rust".as_ref(),
    ]);
    write_fault(&o, &out, "File too large");
}

#[test]
fn batch_on_a_full_disk_reports_each_file_and_keeps_going() {
    let input = tempfile::tempdir().unwrap();
    for i in 0..3 {
        noise_png(&input.path().join(format!("big{i}.png")), 512, 10 + i);
    }
    std::fs::copy(
        fixture("tests/fixtures/rgba_halo_9x9.png"),
        input.path().join("small.png"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = gblur_with_file_size_limit(&[
        "batch".as_ref(),
        input.path().as_os_str(),
        out.path().as_os_str(),
        "--sigma".as_ref(),
        "0.5".as_ref(),
        "--device".as_ref(),
        "rust".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["blurred"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(3))
    );
    for f in v["files"].as_array().unwrap() {
        if f["outcome"] == "failed" {
            let e = f["error"].as_str().unwrap();
            assert!(e.contains("cannot write: File too large"), "{e}");
        }
    }
    assert_eq!(
        files_under(out.path()),
        BTreeSet::from(["small.png".to_string()]),
        "only the complete output, no temporary files"
    );
    image::open(out.path().join("small.png")).unwrap();
}

// ---- Permission denied --------------------------------------------------------------------

fn mkdir_mode(path: &Path, mode: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn permission_denied_keeps_the_previous_output() {
    let (dir, bin) = shared_dir();
    let input = dir.path().join("in.png");
    std::fs::copy(fixture("samples/camera-gray.png"), &input).unwrap();
    chmod(&input, 0o644);
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let out = locked.join("out.png");
    std::fs::write(&out, "previous").unwrap();
    chmod(&out, 0o666);
    chmod(&locked, 0o555);
    let o = unprivileged(&bin)
        .arg(&input)
        .arg(&out)
        .args(["--sigma", "2", "--device", "rust"])
        .output()
        .unwrap();
    chmod(&locked, 0o755);
    write_fault(&o, &out, "Permission denied");
}

#[test]
fn inputs_are_never_opened_for_writing() {
    // Read-only inputs in read-only folders, run by a user who may not write them: any open
    // for writing would fail. Outputs go to a folder that user may write.
    let (dir, bin) = shared_dir();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("sub")).unwrap();
    for (src, name) in [
        ("samples/camera-gray.png", "gray.png"),
        ("samples/chelsea.jpg", "sub/cat.jpg"),
        ("tests/fixtures/rgba_halo_9x9.png", "sub/halo.png"),
    ] {
        std::fs::copy(fixture(src), input.join(name)).unwrap();
        chmod(&input.join(name), 0o444);
    }
    chmod(&input.join("sub"), 0o555);
    chmod(&input, 0o555);
    let before: Vec<_> = ["gray.png", "sub/cat.jpg", "sub/halo.png"]
        .iter()
        .map(|n| {
            let p = input.join(n);
            (
                std::fs::read(&p).unwrap(),
                p.metadata().unwrap().modified().unwrap(),
            )
        })
        .collect();
    let out = dir.path().join("out");
    mkdir_mode(&out, 0o777);

    let main = unprivileged(&bin)
        .arg(input.join("gray.png"))
        .arg(out.join("gray.png"))
        .args(["--sigma", "2", "--device", "rust", "-q"])
        .output()
        .unwrap();
    assert!(main.status.success(), "{}", stderr(&main));
    let batch = unprivileged(&bin)
        .arg("batch")
        .arg(&input)
        .arg(out.join("batch"))
        .args(["--sigma", "2", "--device", "rust", "-q"])
        .output()
        .unwrap();
    assert!(batch.status.success(), "{}", stderr(&batch));
    assert_eq!(files_under(&out.join("batch")).len(), 3);

    chmod(&input, 0o755);
    chmod(&input.join("sub"), 0o755);
    let after: Vec<_> = ["gray.png", "sub/cat.jpg", "sub/halo.png"]
        .iter()
        .map(|n| {
            let p = input.join(n);
            (
                std::fs::read(&p).unwrap(),
                p.metadata().unwrap().modified().unwrap(),
            )
        })
        .collect();
    assert!(before == after, "an input changed");
}

#[test]
fn in_place_replaces_files_without_opening_them_for_writing() {
    // --in-place writes a temporary file and renames it over the original: the folder must be
    // writable, the original file need not be.
    let (dir, bin) = shared_dir();
    let folder = dir.path().join("photos");
    mkdir_mode(&folder, 0o777);
    let photo = folder.join("gray.png");
    std::fs::copy(fixture("samples/camera-gray.png"), &photo).unwrap();
    chmod(&photo, 0o444);
    let before = std::fs::read(&photo).unwrap();
    let o = unprivileged(&bin)
        .arg("batch")
        .arg(&folder)
        .arg(&folder)
        .args(["--sigma", "2", "--device", "rust", "--in-place", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(std::fs::read(&photo).unwrap(), before, "not replaced");
    assert_eq!(
        photo.metadata().unwrap().permissions().mode() & 0o777,
        0o444,
        "permissions kept"
    );
    // The photo and the run's journal of what it replaced.
    assert_eq!(files_under(&folder).len(), 2);
    assert!(folder.join(".gblur.in-place-1-of-1.journal").is_file());
    no_temp_files(&folder);
}

// ---- Decompression bombs, empty and truncated files ---------------------------------------

fn png_chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
    let mut crc_input = kind.to_vec();
    crc_input.extend_from_slice(data);
    let mut v = (data.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(&crc_input);
    v.extend_from_slice(&crc32(&crc_input).to_be_bytes());
    v
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// A 73-byte PNG whose header declares 100 000 × 100 000 RGBA8 pixels (40 GB decoded).
fn png_bomb() -> Vec<u8> {
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&100_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    // A stored (uncompressed) zlib stream of one filter byte and a few zero pixels.
    let idat = [
        0x78, 0x01, 0x01, 0x05, 0x00, 0xfa, 0xff, 0, 0, 0, 0, 0, 0, 0x05, 0x00, 0x01,
    ];
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    png.extend(png_chunk(b"IDAT", &idat));
    png.extend(png_chunk(b"IEND", &[]));
    png
}

/// A BMP header declaring 100 000 × 100 000 pixels at 24 bits, and no pixel data.
fn bmp_bomb() -> Vec<u8> {
    let mut b = b"BM".to_vec();
    b.extend_from_slice(&54u32.to_le_bytes()); // file size (a lie, as in a bomb)
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes()); // pixel data offset
    b.extend_from_slice(&40u32.to_le_bytes()); // BITMAPINFOHEADER
    b.extend_from_slice(&100_000i32.to_le_bytes());
    b.extend_from_slice(&100_000i32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    b
}

/// Runs gblur with its address space limited to 1 GiB: a bomb that made it allocate what its
/// header declares would abort instead of being refused.
fn gblur_with_bounded_memory(args: &[&std::ffi::OsStr]) -> Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 1048576 && exec "$@""#)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_gblur"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn decompression_bombs_are_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    // A PNG over the limit that the strip engine runs is streamed by `--engine auto`, in a
    // window of rows, and found to hold no such data; the whole-image path refuses its size.
    for (name, bytes, engine, refusal) in [
        (
            "bomb.png",
            png_bomb(),
            "whole",
            "decoding needs more than the memory limit of 512 MiB",
        ),
        (
            "bomb.png",
            png_bomb(),
            "auto",
            "cannot decode: IDAT or fDAT chunk does not have enough data",
        ),
        (
            "bomb.bmp",
            bmp_bomb(),
            "auto",
            "cannot decode: Format error decoding Bmp: Image too large",
        ),
    ] {
        let bomb = dir.path().join(name);
        std::fs::write(&bomb, bytes).unwrap();
        let out = dir.path().join("out.png");
        let o = gblur_with_bounded_memory(&[
            bomb.as_os_str(),
            out.as_os_str(),
            "--sigma".as_ref(),
            "2".as_ref(),
            "--device".as_ref(),
            "rust".as_ref(),
            "--engine".as_ref(),
            engine.as_ref(),
        ]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(&format!("{name}: {refusal}")), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn batch_skips_a_bomb_and_goes_on() {
    let input = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("bomb.png"), png_bomb()).unwrap();
    std::fs::copy(
        fixture("samples/camera-gray.png"),
        input.path().join("gray.png"),
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = gblur_with_bounded_memory(&[
        "batch".as_ref(),
        input.path().as_os_str(),
        out.path().as_os_str(),
        "--sigma".as_ref(),
        "2".as_ref(),
        "--device".as_ref(),
        "rust".as_ref(),
        "--json".as_ref(),
        "-q".as_ref(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["blurred"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(1))
    );
    let failed = &v["files"].as_array().unwrap()[0];
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("bomb.png: decoding needs more than the memory limit"),
        "{failed}"
    );
    assert_eq!(
        files_under(out.path()),
        BTreeSet::from(["gray.png".to_string()])
    );
}

#[test]
fn empty_file_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.jpg");
    std::fs::write(&empty, b"").unwrap();
    let out = dir.path().join("out.png");
    let o = gblur()
        .arg(&empty)
        .arg(&out)
        .args(["--sigma", "2", "--device", "rust"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("empty.jpg: cannot decode: the file is empty (0 bytes)"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());

    // In a batch it is skipped and named, even without -v.
    let input = tempfile::tempdir().unwrap();
    std::fs::write(input.path().join("empty.jpg"), b"").unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = gblur()
        .arg("batch")
        .arg(input.path())
        .arg(out.path())
        .args(["--sigma", "2", "--device", "rust"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("empty.jpg: empty file, skipped"),
        "{}",
        stderr(&o)
    );
    assert!(files_under(out.path()).is_empty());
}

#[test]
fn truncated_jpeg_is_refused() {
    // The JPEG decoder fills a truncated file's missing rows with gray and says nothing; gblur
    // must not write that as a blurred photo.
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(fixture("samples/rocket.jpg")).unwrap();
    let cut = dir.path().join("cut.jpg");
    std::fs::write(&cut, &whole[..whole.len() / 3]).unwrap();
    let out = dir.path().join("out.jpg");
    std::fs::write(&out, "previous").unwrap();
    let o = gblur()
        .arg(&cut)
        .arg(&out)
        .args(["--sigma", "2", "--device", "rust"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("cut.jpg: cannot decode: the file is truncated"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");

    // Bytes after the end-of-image marker (a motion photo's video, padding) are fine.
    let mut longer = whole.clone();
    longer.extend_from_slice(b"\0\0ftypmp42 trailing video data");
    let motion = dir.path().join("motion.jpg");
    std::fs::write(&motion, &longer).unwrap();
    gblur()
        .arg(&motion)
        .arg(dir.path().join("motion-out.jpg"))
        .args(["--sigma", "2", "--device", "rust", "-q"])
        .assert()
        .success();
}

#[test]
fn truncated_files_of_every_format_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for ext in [
        "png", "jpg", "tif", "webp", "gif", "bmp", "tga", "qoi", "exr", "hdr",
    ] {
        let whole = dir.path().join(format!("whole.{ext}"));
        gblur()
            .arg(fixture("samples/coffee.png"))
            .arg(&whole)
            .args(["--sigma", "0.5", "--device", "rust", "-q"])
            .assert()
            .success();
        let bytes = std::fs::read(&whole).unwrap();
        let cut = dir.path().join(format!("cut.{ext}"));
        std::fs::write(&cut, &bytes[..bytes.len() * 6 / 10]).unwrap();
        let out = dir.path().join("out.png");
        let o = gblur()
            .arg(&cut)
            .arg(&out)
            .args(["--sigma", "2", "--device", "rust"])
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{ext}: {err}");
        assert!(
            err.contains(&format!("cut.{ext}: cannot decode")),
            "{ext}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{ext}: {err}");
        assert!(!out.exists(), "{ext}");
    }
}

/// Runs the main command with `env` and returns its JSON report.
pub(crate) fn report(input: &Path, out: &Path, env: &[(&str, &str)], extra: &[&str]) -> Value {
    let mut c = gblur();
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c
        .arg(input)
        .arg(out)
        .args(["--sigma", "3", "--json", "-q"])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{env:?}: {}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

// ---- NaN and Inf in float inputs ----------------------------------------------------------

/// A 24×12 RGB f32 ramp.
fn float_ramp() -> image::Rgb32FImage {
    image::Rgb32FImage::from_fn(24, 12, |x, y| {
        image::Rgb([x as f32 / 24.0, y as f32 / 12.0, 0.5])
    })
}

fn read_f32(path: &Path) -> Vec<f32> {
    image::open(path).unwrap().to_rgb32f().into_raw()
}

#[test]
fn nan_and_inf_samples_become_zero_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = float_ramp();
    let mut zeroed = float_ramp();
    for (x, y, c, v) in [
        (3, 2, 0, f32::NAN),
        (10, 5, 1, f32::INFINITY),
        (0, 0, 2, f32::NEG_INFINITY),
        (23, 11, 0, f32::NAN),
    ] {
        bad.get_pixel_mut(x, y).0[c] = v;
        zeroed.get_pixel_mut(x, y).0[c] = 0.0;
    }
    common::require_opencl();
    let devices: &[&str] = &["rust", "auto"];
    for ext in ["tif", "exr"] {
        let bad_in = dir.path().join(format!("bad.{ext}"));
        let zero_in = dir.path().join(format!("zero.{ext}"));
        image::DynamicImage::ImageRgb32F(bad.clone())
            .save(&bad_in)
            .unwrap();
        image::DynamicImage::ImageRgb32F(zeroed.clone())
            .save(&zero_in)
            .unwrap();
        assert!(
            read_f32(&bad_in).iter().any(|v| v.is_nan()),
            "{ext} must carry the NaN to gblur"
        );
        for device in devices {
            let (bad_out, zero_out) = (
                dir.path().join(format!("bad-out-{device}.{ext}")),
                dir.path().join(format!("zero-out-{device}.{ext}")),
            );
            let v = report(&bad_in, &bad_out, &[], &["--device", device]);
            let notes = v["notes"].to_string();
            assert!(
                notes.contains("4 non-finite or out-of-range float samples"),
                "{ext} {device}: {notes}"
            );
            report(&zero_in, &zero_out, &[], &["--device", device]);
            let got = read_f32(&bad_out);
            assert!(got.iter().all(|v| v.is_finite()), "{ext} {device}");
            assert_eq!(
                got,
                read_f32(&zero_out),
                "{ext} {device}: not the zeroed image"
            );
        }
    }
}

#[test]
fn huge_float_samples_are_clamped_not_spread() {
    let dir = tempfile::tempdir().unwrap();
    let mut img = float_ramp();
    img.get_pixel_mut(5, 5).0[0] = 3.0e38;
    img.get_pixel_mut(6, 5).0[0] = -3.0e38;
    let input = dir.path().join("huge.tif");
    image::DynamicImage::ImageRgb32F(img).save(&input).unwrap();
    let out = dir.path().join("out.tif");
    let v = report(&input, &out, &[], &["--device", "rust"]);
    assert!(v["notes"]
        .to_string()
        .contains("2 non-finite or out-of-range"));
    let got = read_f32(&out);
    assert!(got.iter().all(|v| v.is_finite()));
    // Far from the clamped pair, the ramp is what it was.
    let far = got[(11 * 24 + 23) * 3 + 2];
    assert!((far - 0.5).abs() < 1e-4, "{far}");
}

// ---- Ctrl-C during the main command's write ---------------------------------------------

#[test]
fn ctrl_c_while_writing_removes_the_temporary_file() {
    // GBLUR_FAULT=slow-write holds the write once the temporary file exists, until a file
    // that is never made appears, so the SIGINT lands exactly then.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    std::fs::write(&out, "previous").unwrap();
    let never = tempfile::tempdir().unwrap();
    let go = never.path().join("go");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gblur"))
        .env("GBLUR_FAULT", "slow-write")
        .env("GBLUR_WRITE_GO", &go)
        .arg(fixture("samples/coffee.png"))
        .arg(&out)
        .args(["--sigma", "2", "--device", "rust", "-q"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let temp = || {
        files_under(dir.path())
            .into_iter()
            .find(|f| f.contains(".gblur-"))
    };
    crate::common::wait_for_a_held_write(&go, &mut child);
    let temp = dir
        .path()
        .join(temp().expect("the held write's temporary file"));
    // The write is held: the temporary file exists, nothing is in it yet, gblur still runs.
    assert_eq!(
        std::fs::metadata(&temp).unwrap().len(),
        0,
        "the write was not held"
    );
    assert!(child.try_wait().unwrap().is_none());
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    // Had gblur let the held write finish before honouring the interrupt, the blurred image
    // would have been renamed over OUT; it is still the previous file, and the temporary file
    // is gone.
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert_eq!(stderr(&o), "gblur: interrupted\n");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");
    assert_eq!(
        files_under(dir.path()).len(),
        1,
        "{:?}",
        files_under(dir.path())
    );
}
