//! CMYK kept as CMYK: a CMYK JPEG or TIFF written as a JPEG or TIFF has its four inks blurred
//! as four channels (within a level of the exact Gaussian of each), keeps its ICC profile and
//! stays CMYK, in the main command and in a batch; the options that need colour, and outputs
//! without CMYK, convert it to sRGB instead.

use crate::common::{fixture, gblur, noise};
use crate::pages::exact_along;
use std::path::{Path, PathBuf};
use tiff::decoder::{Decoder, DecodingResult};
use tiff::encoder::{colortype, TiffEncoder};
use tiff::tags::Tag;

const W: usize = 40;
const H: usize = 30;

fn profile() -> Vec<u8> {
    std::fs::read(fixture("tests/fixtures/cmyk/tinted.icc")).unwrap()
}

/// Inks with edges and noise, 8-bit.
fn inks() -> Vec<u8> {
    let n = noise(W, H, 4, 11).data;
    (0..W * H * 4)
        .map(|i| {
            let (p, c) = (i / 4, i % 4);
            let (x, y) = (p % W, p / W);
            let square = (8..24).contains(&x) && (6..20).contains(&y);
            let v = 40.0 + 30.0 * c as f32 + if square { 120.0 } else { 0.0 } + 20.0 * n[i];
            v.clamp(0.0, 255.0) as u8
        })
        .collect()
}

/// A CMYK TIFF of `samples` (8- or 16-bit) carrying the test profile.
fn write_cmyk_tiff(path: &Path, samples: &DecodingResult) {
    let mut e = TiffEncoder::new(std::fs::File::create(path).unwrap()).unwrap();
    let icc = profile();
    match samples {
        DecodingResult::U8(v) => {
            let mut image = e.new_image::<colortype::CMYK8>(W as u32, H as u32).unwrap();
            image
                .encoder()
                .write_tag(Tag::IccProfile, &icc[..])
                .unwrap();
            image.write_data(v).unwrap();
        }
        DecodingResult::U16(v) => {
            let mut image = e
                .new_image::<colortype::CMYK16>(W as u32, H as u32)
                .unwrap();
            image
                .encoder()
                .write_tag(Tag::IccProfile, &icc[..])
                .unwrap();
            image.write_data(v).unwrap();
        }
        _ => unreachable!(),
    }
}

/// A TIFF's photometric interpretation, samples (widened to f64) and ICC profile.
fn read_tiff(path: &Path) -> (u16, Vec<f64>, Option<Vec<u8>>) {
    let mut d = Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let photometric = d.get_tag_u32(Tag::PhotometricInterpretation).unwrap() as u16;
    let icc = d.get_tag_u8_vec(Tag::IccProfile).ok();
    let samples = match d.read_image().unwrap() {
        DecodingResult::U8(v) => v.into_iter().map(f64::from).collect(),
        DecodingResult::U16(v) => v.into_iter().map(f64::from).collect(),
        _ => panic!("not 8- or 16-bit"),
    };
    (photometric, samples, icc)
}

/// Each of the four channels of `inks` (H × W × 4) blurred by the exact Gaussian, clamped edges.
fn exact_per_channel(inks: &[f64], sigma: f64) -> Vec<f64> {
    let mut out = vec![0.0; inks.len()];
    for c in 0..4 {
        let plane: Vec<f64> = inks.iter().skip(c).step_by(4).copied().collect();
        let blurred = exact_along(
            &exact_along(&plane, [1, H, W], 1, sigma),
            [1, H, W],
            2,
            sigma,
        );
        for (i, v) in blurred.into_iter().enumerate() {
            out[i * 4 + c] = v;
        }
    }
    out
}

fn worst(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// Blurs `input` at `sigma` into a JPEG (at `quality`) and a TIFF in `dir`; returns both.
fn into_jpeg_and_tiff(input: &Path, dir: &Path, sigma: &str, quality: &str) -> (PathBuf, PathBuf) {
    let (jpeg, tiff) = (dir.join("out.jpg"), dir.join("out.tif"));
    for (out, extra) in [(&jpeg, &["--quality", quality][..]), (&tiff, &[][..])] {
        gblur()
            .arg(input)
            .arg(out)
            .args(["-s", sigma, "-q"])
            .args(extra)
            .assert()
            .success();
    }
    (jpeg, tiff)
}

/// A CMYK JPEG's inks as gblur reads them (into a TIFF, unblurred).
fn inks_of(jpeg: &Path, dir: &Path) -> Vec<f64> {
    let back = dir.join("back.tif");
    gblur()
        .arg(jpeg)
        .arg(&back)
        .args(["--sigma-x", "0", "--sigma-y", "0", "-q"])
        .assert()
        .success();
    read_tiff(&back).1
}

/// Whether the JPEG at `path` is coded as CMYK, and its ICC profile.
fn cmyk_jpeg(path: &Path) -> (bool, Option<Vec<u8>>) {
    let bytes = std::fs::read(path).unwrap();
    let mut decoder = zune_jpeg::JpegDecoder::new(zune_core::bytestream::ZCursor::new(&bytes[..]));
    decoder.decode_headers().unwrap();
    let cmyk = decoder.input_colorspace() == Some(zune_core::colorspace::ColorSpace::CMYK);
    (cmyk, decoder.icc_profile())
}

#[test]
fn a_cmyk_tiff_keeps_its_inks_within_a_level_of_the_exact_blur_of_each_and_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let eight = inks();
    let sixteen: Vec<u16> = eight.iter().map(|&v| v as u16 * 257 + 100).collect();
    for (samples, full) in [
        (DecodingResult::U8(eight.clone()), 255.0),
        (DecodingResult::U16(sixteen), 65535.0),
    ] {
        let input = dir.path().join("in.tif");
        let out = dir.path().join("out.tif");
        write_cmyk_tiff(&input, &samples);
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "2", "-q"])
            .assert()
            .success();
        let (_, source, _) = read_tiff(&input);
        let (photometric, got, icc) = read_tiff(&out);
        assert_eq!(photometric, 5, "written as CMYK (Separated)");
        assert_eq!(icc, Some(profile()), "the profile kept");
        let exact = exact_per_channel(&source, 2.0);
        let off = worst(&got, &exact);
        // A level at 8 bits; at 16, the filter's error (5.6e-4 of the range) and rounding.
        let allowed = if full > 255.0 { 40.0 } else { 1.0 };
        assert!(
            off <= allowed,
            "{off} from the exact blur of each ink ({full})"
        );
    }
}

#[test]
fn a_cmyk_jpeg_into_a_jpeg_stays_cmyk_with_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("tests/fixtures/cmyk/profiled.jpg");
    let (jpeg, tiff) = into_jpeg_and_tiff(&input, dir.path(), "2", "95");
    assert_eq!(
        cmyk_jpeg(&jpeg),
        (true, Some(profile())),
        "CMYK, the profile kept"
    );
    // Its inks, read back through gblur (which keeps them), against the same blur into a TIFF:
    // what the JPEG coding lost at quality 95.
    let (a, b) = (inks_of(&jpeg, dir.path()), read_tiff(&tiff).1);
    let mean = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64;
    assert!(
        mean < 1.0 && worst(&a, &b) <= 6.0,
        "mean {mean}, worst {}",
        worst(&a, &b)
    );
}

#[test]
fn options_that_need_colour_and_outputs_without_cmyk_convert_to_srgb() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("tests/fixtures/cmyk/profiled.tif");
    for (out, extra) in [
        ("a.png", &[][..]),
        ("b.tif", &["--to-srgb"][..]),
        ("c.tif", &["--linear"][..]),
    ] {
        let out = dir.path().join(out);
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "2", "-q"])
            .args(extra)
            .assert()
            .success();
        let image = image::open(&out).unwrap();
        assert_eq!(image.color(), image::ColorType::Rgb8, "{}", out.display());
    }
}

#[test]
fn a_batch_keeps_cmyk_files_cmyk_beside_rgb_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(
        fixture("tests/fixtures/cmyk/profiled.jpg"),
        input.join("print.jpg"),
    )
    .unwrap();
    std::fs::copy(
        fixture("tests/fixtures/cmyk/profiled.tif"),
        input.join("print.tif"),
    )
    .unwrap();
    std::fs::copy(fixture("samples/chelsea.jpg"), input.join("photo.jpg")).unwrap();
    gblur()
        .arg("batch")
        .arg(&input)
        .arg(&out)
        .args(["-s", "2", "-q"])
        .assert()
        .success();
    let (photometric, _, icc) = read_tiff(&out.join("print.tif"));
    assert_eq!((photometric, icc), (5, Some(profile())));
    assert!(cmyk_jpeg(&out.join("print.jpg")).0, "print.jpg kept CMYK");
    assert_eq!(
        image::open(out.join("photo.jpg")).unwrap().color(),
        image::ColorType::Rgb8
    );
}

#[test]
fn a_tall_cmyk_jpeg_is_written_in_stripes_that_decode_as_one() {
    // Over 128 rows: the encoder's stripes are joined under one header by restart markers.
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (96u32, 300u32);
    let samples: Vec<u8> = (0..w * h * 4)
        .map(|i| ((i / 4 % w) * 2 + (i / 4 / w) + (i % 4) * 40) as u8)
        .collect();
    let input = dir.path().join("tall.tif");
    let mut e = TiffEncoder::new(std::fs::File::create(&input).unwrap()).unwrap();
    e.write_image::<colortype::CMYK8>(w, h, &samples).unwrap();
    let (jpeg, tiff) = into_jpeg_and_tiff(&input, dir.path(), "1.5", "100");
    let (a, b) = (inks_of(&jpeg, dir.path()), read_tiff(&tiff).1);
    assert_eq!(a.len(), (w * h * 4) as usize);
    let mean = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64;
    assert!(
        mean < 0.8 && worst(&a, &b) <= 4.0,
        "mean {mean}, worst {}",
        worst(&a, &b)
    );
}

#[test]
fn options_the_inks_cannot_take_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("tests/fixtures/cmyk/profiled.jpg");
    for (extra, says) in [
        (
            &["--subsampling", "420"][..],
            "--subsampling: a CMYK input is written as a CMYK JPEG at full resolution",
        ),
        (
            &["--engine", "strips"][..],
            "--engine strips: a CMYK input kept as CMYK is blurred whole",
        ),
    ] {
        let out = dir.path().join("out.jpg");
        let assert = gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "2"])
            .args(extra)
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(err.contains(says), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists());
    }
}
