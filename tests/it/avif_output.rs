//! AVIF and HEIC output through libheif's AV1 and HEVC encoders (loaded at run time; CI
//! installs libheif1): the picture within a few levels of the lossless result, `--quality`
//! honoured, alpha, the ICC profile, EXIF and XMP written into the file and read back; a batch
//! writes a HEIC input back as HEIC; without libheif an AVIF or HEIC output is a one-line
//! error naming the package.

use crate::common::{blur_to, exif_make, fixture, gblur, mean_abs_diff};
use predicates::prelude::*;
use std::path::Path;

fn heif(name: &str) -> std::path::PathBuf {
    fixture(&format!("tests/fixtures/heif/{name}"))
}

/// `avif` decoded by gblur (through libheif) into a PNG, as RGBA.
fn decoded(avif: &Path, dir: &Path) -> image::RgbaImage {
    let png = dir.join("back.png");
    gblur()
        .arg(avif)
        .arg(&png)
        .args(["-s", "0", "-q"])
        .assert()
        .success();
    image::open(&png).unwrap().to_rgba8()
}

#[test]
fn avif_is_written_at_its_quality_and_read_back_close_to_the_lossless_result() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/chelsea.jpg");
    let exact = image::load_from_memory(&blur_to(&input, &dir.path().join("exact.png"), &[]))
        .unwrap()
        .to_rgba8();
    let q30 = blur_to(&input, &dir.path().join("q30.avif"), &["--quality", "30"]);
    let q90 = blur_to(&input, &dir.path().join("q90.avif"), &["--quality", "90"]);
    assert_eq!(&q90[4..12], b"ftypavif", "an AVIF file");
    assert!(q30.len() < q90.len(), "{} {}", q30.len(), q90.len());
    let got = decoded(&dir.path().join("q90.avif"), dir.path());
    assert_eq!(got.dimensions(), exact.dimensions());
    let diff = mean_abs_diff(got.as_raw(), exact.as_raw());
    assert!(
        diff < 3.0,
        "quality 90: {diff} levels from the lossless result on average"
    );
    // The default quality (50) lies between.
    let default = blur_to(&input, &dir.path().join("default.avif"), &[]);
    assert!(q30.len() < default.len() && default.len() < q90.len());
    gblur()
        .arg(&input)
        .arg(dir.path().join("same.avif"))
        .args(["-s", "2", "--quality", "same"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("for AVIF and HEIC give 1 to 100"));
}

#[test]
fn avif_keeps_alpha_the_icc_profile_exif_and_xmp() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("alpha.avif");
    blur_to(&heif("alpha.avif"), &out, &["--quality", "90"]);
    let back = decoded(&out, dir.path());
    assert!(
        back.pixels().any(|p| p.0[3] < 128) && back.pixels().any(|p| p.0[3] > 128),
        "alpha kept"
    );
    let icc = blur_to(
        &fixture("tests/fixtures/icc_srgb_16x16.png"),
        &dir.path().join("icc.avif"),
        &[],
    );
    assert!(
        icc.windows(8).any(|w| w == b"colrprof"),
        "an ICC colour box"
    );
    // EXIF and XMP of a HEIC photo, into AVIF and back out into a JPEG.
    let avif = dir.path().join("photo.avif");
    let bytes = blur_to(&heif("photo_exif.heic"), &avif, &[]);
    assert!(
        String::from_utf8_lossy(&bytes).contains("heif test"),
        "XMP in the file"
    );
    let jpeg = dir.path().join("photo.jpg");
    blur_to(&avif, &jpeg, &[]);
    let again = std::fs::read(&jpeg).unwrap();
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(&again))
        .expect("EXIF kept");
    let make = exif
        .get_field(exif::Tag::Make, exif::In::PRIMARY)
        .map(|f| f.display_value().to_string());
    assert_eq!(make.as_deref(), Some("\"gblur-test\""));
    assert!(
        String::from_utf8_lossy(&again).contains("heif test"),
        "XMP read back"
    );
}

#[test]
fn a_batch_writes_heic_back_as_heic_and_heif_needs_libheif() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(heif("photo_exif.heic"), input.join("phone.heic")).unwrap();
    std::fs::copy(heif("alpha.avif"), input.join("web.avif")).unwrap();
    let out = dir.path().join("out");
    gblur()
        .arg("batch")
        .arg(&input)
        .arg(&out)
        .args(["-s", "1", "-q"])
        .assert()
        .success();
    let brand = |p: &Path| std::fs::read(p).unwrap()[8..12].to_vec();
    assert_eq!(brand(&out.join("phone.heic")), b"heic", "HEVC-coded");
    assert_eq!(brand(&out.join("web.avif")), b"avif");
    let to_avif = dir.path().join("to_avif");
    gblur()
        .arg("batch")
        .arg(&input)
        .arg(&to_avif)
        .args(["-s", "1", "--format", "avif", "-q"])
        .assert()
        .success();
    assert!(to_avif.join("phone.avif").exists() && to_avif.join("web.avif").exists());
    // Stdout takes an AVIF input's own format, not a HEIC's.
    gblur()
        .args(["-", "-", "-s", "1"])
        .write_stdin(std::fs::read(heif("photo_exif.heic")).unwrap())
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "a HEIC input is written as HEIC to a .heic file only: pass --format avif",
        ));
    let piped = gblur()
        .args(["-", "-", "-s", "1"])
        .write_stdin(std::fs::read(heif("alpha.avif")).unwrap())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert_eq!(&piped[4..12], b"ftypavif");
    // Without libheif: one line, exit 2, nothing written.
    for name in ["x.avif", "x.heic"] {
        let missing = dir.path().join(name);
        let assert = gblur()
            .env("GBLUR_FAULT", "no-libheif")
            .arg(fixture("samples/chelsea.jpg"))
            .arg(&missing)
            .args(["-s", "2"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("apt-get install libheif1"));
        assert_eq!(
            String::from_utf8_lossy(&assert.get_output().stderr)
                .lines()
                .count(),
            1
        );
        assert!(!missing.exists());
    }
}

#[test]
fn a_heic_output_is_coded_with_hevc_close_to_the_lossless_result_with_its_exif() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("tests/fixtures/phone_exif_xmp.jpg");
    let exact = image::load_from_memory(&blur_to(&input, &dir.path().join("exact.png"), &[]))
        .unwrap()
        .to_rgba8();
    let heic = blur_to(&input, &dir.path().join("out.heic"), &["--quality", "90"]);
    assert_eq!(&heic[4..12], b"ftypheic", "a HEIC file");
    let got = decoded(&dir.path().join("out.heic"), dir.path());
    assert_eq!(got.dimensions(), exact.dimensions());
    let diff = mean_abs_diff(got.as_raw(), exact.as_raw());
    assert!(diff < 3.0, "{diff} levels from the lossless result");
    let jpeg = dir.path().join("back.jpg");
    gblur()
        .arg(dir.path().join("out.heic"))
        .arg(&jpeg)
        .args(["-s", "0", "-q"])
        .assert()
        .success();
    assert!(exif_make(&jpeg).is_some(), "EXIF kept");
}

#[test]
fn heic_named_as_a_format_is_refused_in_one_line_pointing_at_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/coffee.png");
    for args in [&["heic:x.png"][..], &["x.png", "--format", "heic"][..]] {
        let assert = gblur()
            .current_dir(dir.path())
            .arg(&input)
            .args(args)
            .args(["-s", "2"])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            err.contains("HEIC is written where the output file is named .heic"),
            "{err}"
        );
        if args[0] == "heic:x.png" {
            // The prefix is read by gblur; --format's value by the argument parser, whose
            // usage errors add a line pointing at --help.
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing written"
    );
}

#[test]
fn a_16_bit_image_is_written_as_10_bit_heic_and_8_bit_avif() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (64u32, 48u32);
    let ramp = image::ImageBuffer::from_fn(w, h, |x, y| {
        image::Rgb([
            (x * 1000 + y * 7) as u16,
            (y * 1300 + x * 3) as u16,
            ((x * y * 17) % 65536) as u16,
        ])
    });
    let input = dir.path().join("deep.png");
    image::DynamicImage::ImageRgb16(ramp.clone())
        .save(&input)
        .unwrap();
    for (name, deep) in [("deep.heic", true), ("deep.avif", false)] {
        let out = dir.path().join(name);
        let report = gblur()
            .arg(&input)
            .arg(&out)
            .args([
                "--sigma-x",
                "0",
                "--sigma-y",
                "0",
                "--quality",
                "95",
                "--json",
            ])
            .assert()
            .success();
        let report: serde_json::Value =
            serde_json::from_slice(&report.get_output().stdout).unwrap();
        assert_eq!(
            report["output"]["color"],
            if deep { "Rgb16" } else { "Rgb8" },
            "{name}"
        );
        let back = dir.path().join(format!("{name}.png"));
        gblur()
            .arg(&out)
            .arg(&back)
            .args(["-s", "0", "-q"])
            .assert()
            .success();
        let got = image::open(&back).unwrap();
        if deep {
            let got = got.into_rgb16();
            // More than 8 bits came back (a 10-bit file decodes to 16 scaled to the full range)...
            assert!(got.as_raw().iter().any(|v| v % 257 != 0), "10-bit samples");
            // ...close to the input, in 8-bit levels.
            let mean = got
                .as_raw()
                .iter()
                .zip(ramp.as_raw())
                .map(|(a, b)| (*a as f64 - *b as f64).abs())
                .sum::<f64>()
                / got.as_raw().len() as f64
                / 257.0;
            assert!(mean < 2.0, "{mean} levels");
        } else {
            assert_eq!(got.color(), image::ColorType::Rgb8, "AVIF stays 8-bit here");
        }
    }
}
