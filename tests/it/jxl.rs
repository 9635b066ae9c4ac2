//! JPEG XL input, through jxl-oxide. The files in tests/fixtures/jxl were written by libjxl's
//! cjxl (`make.py` there): the lossless ones are checked sample for sample against their
//! sources, the lossy one against libjxl's own decode (djxl), and the profile, EXIF and
//! gray float against what the file holds. A build without the `jxl` feature refuses them
//! in one line.

#[cfg(feature = "jxl")]
use crate::common::exif_make;
use crate::common::{fixture, gblur};
use predicates::prelude::*;
#[cfg(feature = "jxl")]
use std::path::Path;
use std::path::PathBuf;

fn jxl(name: &str) -> PathBuf {
    fixture(&format!("tests/fixtures/jxl/{name}"))
}

#[cfg(feature = "jxl")]
/// Decodes `name` with no blur (sigma 0 on both axes) into `out`.
fn decode_to(name: &str, out: &Path) {
    gblur()
        .arg(jxl(name))
        .arg(out)
        .args(["--sigma-x", "0", "--sigma-y", "0", "-q"])
        .assert()
        .success();
}

#[cfg(feature = "jxl")]
/// A PNG's pixels and ICC profile.
fn png(path: &Path) -> (image::DynamicImage, Option<Vec<u8>>) {
    use image::ImageDecoder;
    let reader = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut decoder = image::codecs::png::PngDecoder::new(reader).unwrap();
    let icc = decoder.icc_profile().unwrap();
    (image::DynamicImage::from_decoder(decoder).unwrap(), icc)
}

#[cfg(feature = "jxl")]
#[test]
fn lossless_files_decode_to_their_sources_sample_for_sample() {
    let dir = tempfile::tempdir().unwrap();
    for (file, source) in [
        ("alpha.jxl", "alpha.png"),
        ("gray16.jxl", "gray16.png"),
        ("tagged.jxl", "tagged.png"),
    ] {
        let out = dir.path().join(format!("{file}.png"));
        decode_to(file, &out);
        let ((ours, our_icc), (theirs, their_icc)) = (png(&out), png(&jxl(source)));
        assert_eq!(ours.color(), theirs.color(), "{file}");
        assert_eq!(
            our_icc, their_icc,
            "{file}: the profile the file carries, and none for sRGB"
        );
        if ours.color().has_alpha() {
            // Where nothing is covered the colour is undefined (gblur writes 0): compare the rest.
            let (a, b) = (ours.to_rgba8(), theirs.to_rgba8());
            for (p, q) in a.pixels().zip(b.pixels()) {
                assert_eq!(p[3], q[3], "{file}: alpha");
                if q[3] > 0 {
                    assert_eq!(p, q, "{file}");
                }
            }
        } else {
            assert_eq!(ours.as_bytes(), theirs.as_bytes(), "{file}");
        }
    }
}

#[cfg(feature = "jxl")]
#[test]
fn a_lossy_file_decodes_within_a_level_of_libjxl_and_keeps_its_exif() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("photo.png");
    decode_to("photo.jxl", &out);
    let ours = image::open(&out).unwrap().to_rgb8();
    let theirs = image::open(jxl("djxl_photo.png")).unwrap().to_rgb8();
    assert_eq!(ours.dimensions(), theirs.dimensions());
    let worst = ours
        .as_raw()
        .iter()
        .zip(theirs.as_raw())
        .map(|(a, b)| a.abs_diff(*b))
        .max()
        .unwrap();
    assert!(worst <= 1, "{worst} levels from libjxl's decode");

    let jpeg = dir.path().join("photo.jpg");
    gblur()
        .arg(jxl("photo.jxl"))
        .arg(&jpeg)
        .args(["-s", "1", "-q"])
        .assert()
        .success();
    assert_eq!(exif_make(&jpeg).as_deref(), Some("\"gblur test camera\""));
}

#[cfg(feature = "jxl")]
/// The red colorant's X of an ICC profile (its `rXYZ` tag), where it has one.
fn red_x(icc: &[u8]) -> Option<f64> {
    let count = u32::from_be_bytes(icc.get(128..132)?.try_into().ok()?) as usize;
    (0..count).find_map(|i| {
        let entry = icc.get(132 + 12 * i..144 + 12 * i)?;
        (&entry[..4] == b"rXYZ").then_some(())?;
        let at = u32::from_be_bytes(entry[4..8].try_into().ok()?) as usize;
        let x = i32::from_be_bytes(icc.get(at + 8..at + 12)?.try_into().ok()?);
        Some(x as f64 / 65536.0)
    })
}

#[cfg(feature = "jxl")]
#[test]
fn an_xyb_file_with_a_wide_gamut_profile_is_not_given_as_srgb() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("xyb.png");
    decode_to("xyb_tagged.jxl", &out);
    let (_, icc) = png(&out);
    let icc = icc.expect("a profile for the space the pixels were rendered in");
    // Adobe RGB's red is about X 0.61 (D50), sRGB's 0.44.
    let x = red_x(&icc).expect("an RGB matrix profile");
    assert!(x > 0.55, "red X {x}: not sRGB's primaries");
}

#[cfg(feature = "jxl")]
#[test]
fn gray_float_is_read_as_float_and_written_back_as_gray_float() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("float.tif");
    let report = gblur()
        .arg(jxl("float.jxl"))
        .arg(&out)
        .args(["--sigma-x", "0", "--sigma-y", "0", "--json"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&report.get_output().stdout).unwrap();
    assert_eq!(report["input"]["color"], "L32F", "{report}");
    let expected: Vec<f32> = std::fs::read(jxl("float.f32"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let mut decoder = tiff::decoder::Decoder::new(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(decoder.dimensions().unwrap(), (40, 24));
    let tiff::decoder::DecodingResult::F32(samples) = decoder.read_image().unwrap() else {
        panic!("not float samples");
    };
    assert_eq!(samples, expected, "lossless float, one channel");
}

#[cfg(feature = "jxl")]
#[test]
fn broken_files_and_jxl_outputs_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(jxl("alpha.jxl")).unwrap();
    let truncated = dir.path().join("truncated.jxl");
    std::fs::write(&truncated, &whole[..whole.len() / 3]).unwrap();
    let garbage = dir.path().join("garbage.jxl");
    std::fs::write(&garbage, [0xFF, 0x0A, 1, 2, 3, 4, 5, 6]).unwrap();
    for input in [&truncated, &garbage] {
        let out = dir.path().join("out.png");
        gblur()
            .arg(input)
            .arg(&out)
            .args(["-s", "2"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                input.file_name().unwrap().to_str().unwrap(),
            ))
            .stderr(predicate::function(|e: &str| e.lines().count() == 1));
        assert!(!out.exists(), "nothing written for {}", input.display());
    }
    gblur()
        .arg(jxl("alpha.jxl"))
        .arg(dir.path().join("out.jxl"))
        .args(["-s", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "reads JPEG XL but does not write it",
        ));
}

#[test]
fn the_formats_table_says_whether_this_build_reads_jpeg_xl() {
    let out = gblur().args(["formats", "--json"]).assert().success();
    let table: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let row = table
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["format"] == "JPEG XL")
        .expect("a JPEG XL row");
    assert_eq!(row["reads"], cfg!(feature = "jxl"));
    assert_eq!(row["writes"], serde_json::json!([]));
}

#[cfg(not(feature = "jxl"))]
#[test]
fn without_the_feature_a_jpeg_xl_input_is_refused_in_one_line_saying_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    gblur()
        .arg(jxl("photo.jxl"))
        .arg(&out)
        .args(["-s", "2"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("photo.jxl: a JPEG XL file"))
        .stderr(predicate::str::contains("--features jxl"))
        .stderr(predicate::function(|e: &str| e.lines().count() == 1));
    assert!(!out.exists());
}
