//! `--tiff-compression`: a TIFF input's compression kept by default (whole image and strip
//! engine alike), each compression written as asked and read back by another reader (the
//! `tiff` crate), and the option refused where no output is a TIFF.

use crate::common::{fixture, gblur, noise};
use predicates::prelude::*;
use std::path::Path;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::encoder::Compression;
use tiff::tags::Tag;

/// A noisy 8-bit RGB TIFF of `w`×`h` at `path`, compressed as `compression` says (written by
/// the `tiff` crate's own encoder).
fn tiff_in(path: &Path, (w, h): (u32, u32), compression: tiff::encoder::Compression) {
    use tiff::encoder::{colortype::RGB8, TiffEncoder};
    let samples: Vec<u8> = noise(w as usize, h as usize, 3, 7)
        .data
        .iter()
        .map(|v| (v * 255.0) as u8)
        .collect();
    let file = std::fs::File::create(path).unwrap();
    let mut e = TiffEncoder::new(file)
        .unwrap()
        .with_compression(compression);
    e.write_image::<RGB8>(w, h, &samples).unwrap();
}

/// The Compression and Predictor tags of a TIFF, and its samples.
fn read(path: &Path) -> (u32, Option<u32>, Vec<u8>) {
    let mut d = Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let compression = d.get_tag_u32(Tag::Compression).unwrap();
    let predictor = d
        .find_tag(Tag::Predictor)
        .unwrap()
        .map(|v| v.into_u32().unwrap());
    match d.read_image().unwrap() {
        DecodingResult::U8(v) => (compression, predictor, v),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tiff_keeps_its_compression_and_every_compression_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let (lzw, plain) = (dir.path().join("lzw.tif"), dir.path().join("plain.tif"));
    tiff_in(&lzw, (96, 64), Compression::Lzw);
    tiff_in(&plain, (96, 64), Compression::Uncompressed);
    let blur = |input: &Path, out: &str, extra: &[&str]| {
        let out = dir.path().join(out);
        gblur()
            .arg(input)
            .arg(&out)
            .args(["-s", "2", "-q"])
            .args(extra)
            .assert()
            .success();
        read(&out)
    };
    let (_, _, reference) = blur(&plain, "none.tif", &[]);
    // `same`, the default: LZW in, LZW out (with the predictor), on both engines.
    for engine in ["whole", "strips"] {
        let (c, p, samples) = blur(&lzw, &format!("same-{engine}.tif"), &["--engine", engine]);
        assert_eq!((c, p), (5, Some(2)), "{engine}");
        assert_eq!(samples, reference, "{engine}");
    }
    assert_eq!(
        read(&dir.path().join("none.tif")).0,
        1,
        "an uncompressed input stays so"
    );
    let zstd = cfg!(feature = "zstd").then_some(("zstd", 50000));
    for (name, tag) in [("lzw", 5), ("deflate", 8), ("none", 1)]
        .into_iter()
        .chain(zstd)
    {
        let (c, p, samples) = blur(
            &plain,
            &format!("{name}.tif"),
            &["--tiff-compression", name],
        );
        assert_eq!(c, tag, "{name}");
        assert_eq!(p, (tag != 1).then_some(2), "{name}");
        assert_eq!(samples, reference, "{name}");
    }
    // A PNG input has no compression to keep: none.
    let png = fixture("samples/coffee.png");
    assert_eq!(blur(&png, "from-png.tif", &[]).0, 1);
    // PackBits, which gblur reads but does not write: Deflate, and the report says so.
    let packbits = dir.path().join("packbits.tif");
    tiff_in(&packbits, (96, 64), Compression::Packbits);
    let out = dir.path().join("from-packbits.tif");
    gblur()
        .arg(&packbits)
        .arg(&out)
        .args(["-s", "2"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the input TIFF's compression (PackBits) is not one gblur writes: wrote Deflate",
        ));
    let (c, p, samples) = read(&out);
    assert_eq!((c, p, samples), (8, Some(2), reference));
}

#[test]
fn tiff_compression_for_an_output_that_is_not_a_tiff_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let png = fixture("samples/coffee.png");
    gblur()
        .arg(&png)
        .arg(dir.path().join("out.png"))
        .args(["-s", "2", "--tiff-compression", "lzw"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--tiff-compression applies to TIFF output: the output is Png",
        ));
    gblur()
        .arg(&png)
        .arg(dir.path().join("out.tif"))
        .args(["-s", "2", "--tiff-compression", "brotli"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "give none, lzw, deflate, zstd or same",
        ));
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(&png, input.join("a.png")).unwrap();
    gblur()
        .args(["batch", input.to_str().unwrap(), out.to_str().unwrap(), "-s", "2"])
        .args(["--tiff-compression", "deflate"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--tiff-compression applies to TIFF output, and none of the 1 outputs to write is a TIFF",
        ));
    tiff_in(&input.join("b.tif"), (16, 8), Compression::Uncompressed);
    gblur()
        .args([
            "batch",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "-s",
            "2",
        ])
        .args(["--tiff-compression", "deflate"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "--tiff-compression applied to the 1 TIFF outputs; the other 1 are not TIFF",
        ));
    assert_eq!(read(&out.join("b.tif")).0, 8);
}

#[test]
fn every_encoder_option_for_another_format_is_refused_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let png = fixture("samples/coffee.png");
    for (out, option, says) in [
        (
            "o.jpg",
            &["--png-compression", "best"][..],
            "--png-compression applies to PNG output: the output is Jpeg",
        ),
        (
            "o.png",
            &["--subsampling", "420"][..],
            "--subsampling applies to JPEG output: the output is Png",
        ),
        (
            "o.webp",
            &["--tiff-compression", "lzw"][..],
            "--tiff-compression applies to TIFF output: the output is WebP",
        ),
    ] {
        gblur()
            .arg(&png)
            .arg(dir.path().join(out))
            .args(["-s", "2"])
            .args(option)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
        assert!(!dir.path().join(out).exists());
    }
    // Where the format comes from the input (stdout), the check waits for it.
    gblur()
        .arg(&png)
        .arg("-")
        .args(["-s", "2", "--subsampling", "444"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--subsampling applies to JPEG output, and stdout is Png",
        ));
}

#[cfg(not(feature = "zstd"))]
#[test]
fn without_the_feature_zstd_output_is_refused_saying_how_to_build_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    gblur()
        .arg(fixture("samples/coffee.png"))
        .arg(&out)
        .args(["-s", "2", "--tiff-compression", "zstd"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--features zstd"));
    assert!(!out.exists());
}
