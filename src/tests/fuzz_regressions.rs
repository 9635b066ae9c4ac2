//! Regression tests for what fuzzing found (fuzz/README.md), each named for what it proves,
//! and for the limits set while writing the fuzz targets. The inputs live in
//! tests/fixtures/fuzz/.

use predicates::prelude::*;

use super::common;
use common::{fixture, gblur};

/// decode_blur_encode, first run: an OpenEXR file (mutated from a seed) whose colour and
/// alpha samples are near 1e30. Both survived the clamp to ±1e30, and premultiplying colour
/// by alpha made +Inf, which the blur spread. Alpha is now clamped to [0, 1] as well.
#[test]
fn exr_with_huge_colour_and_alpha_blurs_to_finite_samples() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.tif");
    let input = fixture("tests/fixtures/fuzz/exr_alpha_1e30_times_colour_1e30.exr");
    for device in ["rust", "auto"] {
        let o = gblur()
            .arg(&input)
            .arg(&out)
            .args(["--sigma", "2", "--json", "-q", "--device", device])
            .assert()
            .success();
        let v: serde_json::Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
        assert!(
            v["notes"].to_string().contains("alpha outside [0, 1]"),
            "{v}"
        );
        let img = common::open_image(&out).into_rgba32f();
        assert!(img.as_raw().iter().all(|s| s.is_finite()), "{device}");
    }
}

/// The same fault built by hand: colour 1e30 with alpha 1e30 in an RGBA f32 image.
#[test]
fn float_alpha_above_one_is_clamped_before_premultiplying() {
    let mut img = image::Rgba32FImage::from_pixel(9, 9, image::Rgba([0.2, 0.4, 0.6, 1.0]));
    img.put_pixel(4, 4, image::Rgba([1e30, 1e30, 1e30, 1e30]));
    let mut dynamic = image::DynamicImage::ImageRgba32F(img);
    let note = crate::pixels::sanitize_image(&mut dynamic).unwrap();
    assert!(note.starts_with("1 "), "{note}");
    let (planar, _) = crate::pixels::to_planar(&dynamic, false);
    assert!(planar.data.iter().all(|v| v.is_finite()));
    let blur = crate::filter::Blur2d::new(crate::filter::Method::Recursive, 2.0, 2.0);
    let (out, _) = crate::cpu::reference::blur(&planar, &blur);
    assert!(out.data.iter().all(|v| v.is_finite()));
}

/// Seen while writing the filter target: far above 1e6 the design degenerates (r = e^(-b/σ)
/// rounds to 1.0 in f64 near σ = 1e17, and `eps`, 3.6e-38 at 1e19, leaves f32's normal
/// range). The command line now stops at 1e6, where every coefficient is a normal f32.
#[test]
fn sigma_above_a_million_is_a_usage_error() {
    for s in ["1000001", "1e19", "1e300"] {
        gblur()
            .arg(fixture("samples/camera-gray.png"))
            .arg("/tmp/never-written.png")
            .args(["--sigma-x", "2", "--sigma-y", s])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("from 0.001 to 1000000"));
    }
    let g = crate::filter::gaussian::RecursiveGaussian::new(1e6);
    assert!(g.to_f32_block().iter().all(|v| v.is_finite()));
    assert!(crate::filter::check_sigma(1e6).is_ok());
}

/// Seen while writing the filter target: `--method fir --sigma 1e18` asked for a 1e19-tap
/// kernel (a capacity overflow panic) and `--sigma 1e5` for hours of work. The FIR now
/// stops at sigma 1000, with a usage error that says what to use instead.
#[test]
fn fir_wider_than_sigma_1000_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for s in ["1001", "100000", "1000000"] {
        gblur()
            .arg(fixture("samples/camera-gray.png"))
            .arg(dir.path().join("o.png"))
            .args(["--sigma", s, "--method", "fir", "--device", "rust"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(
                "--method fir supports sigma up to 1000",
            ));
    }
    gblur()
        .arg("batch")
        .arg(fixture("tests/fixtures"))
        .arg(dir.path().join("b"))
        .args(["--sigma", "5000", "--method", "fir", "--device", "rust"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--method fir supports sigma"));
    assert!(!dir.path().join("o.png").exists());
    // Auto never picks the FIR above sigma 2, so large sigmas stay fine there.
    gblur()
        .arg(fixture("tests/fixtures/rgba_halo_9x9.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "1000000", "--device", "rust", "-q"])
        .assert()
        .success();
}

/// filter, second run: sigma 1e-300 (any sigma below ~1e-154, whose square is 0). The FIR's
/// centre tap was 0/0 = NaN, and `gblur in.png out.png --sigma 1e-200` wrote a black image.
/// A vanishing sigma is now the identity (and the command line stops at 0.001, see
/// `sigma_below_a_thousandth_is_a_usage_error`).
#[test]
fn vanishing_sigma_is_the_identity_not_a_black_image() {
    for sigma in [1e-300, 1e-200, 1e-160] {
        let taps = crate::filter::gaussian::fir_taps(sigma);
        assert_eq!(taps, vec![0.0, 1.0, 0.0], "sigma {sigma}");
        let img =
            crate::pixels::planar::Planar::from_fn(7, 5, 2, |x, y, c| (x * 3 + y * 5 + c) as f32);
        let blur = crate::filter::Blur2d::new(crate::filter::Method::Fir, sigma, sigma);
        let (out, _) = crate::cpu::reference::blur(&img, &blur);
        assert_eq!(out, img, "sigma {sigma}");
    }
}

/// decode_blur_encode, second run: a corrupt JPEG whose decoder message ends in a newline,
/// which put a blank line after gblur's one-line error.
#[test]
fn decoder_messages_stay_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let o = gblur()
        .arg(fixture(
            "tests/fixtures/fuzz/jpeg_error_message_with_newline.jpg",
        ))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "2", "--device", "rust"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&o.get_output().stderr).to_string();
    assert!(
        err.contains("jpeg_error_message_with_newline.jpg: cannot decode"),
        "{err}"
    );
    assert_eq!(err.matches('\n').count(), 1, "{err:?}");
    assert!(err.ends_with('\n') && !err.ends_with("\n\n"), "{err:?}");
}

/// filter, third run: sigma 1.4e-315, a subnormal the command line accepted. omega/sigma
/// overflowed to infinity and every recursive coefficient was NaN, so `--method recursive`
/// blurred to black. Sigma now starts at 0.001, already the identity.
#[test]
fn sigma_below_a_thousandth_is_a_usage_error() {
    for s in ["1.41662307e-315", "1e-300", "0.0009"] {
        gblur()
            .arg(fixture("samples/camera-gray.png"))
            .arg("/tmp/never-written.png")
            .args(["--sigma", s, "--method", "recursive"])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("from 0.001 to 1000000"));
    }
    let g = crate::filter::gaussian::RecursiveGaussian::new(crate::filter::MIN_SIGMA);
    assert!(g.to_f32_block().iter().all(|v| v.is_finite()));
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/camera-gray.png");
    let out = dir.path().join("o.png");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["--sigma", "0.001", "-q", "--device", "rust"])
        .assert()
        .success();
    assert!(common::open_image(&out).into_luma8() == common::open_image(&input).into_luma8());
}

/// decode_blur_encode: a 1720-byte GIF (mutated from a seed) declaring a
/// 6176 × 0 screen. The decoder handed over an image with no rows, and the planar split
/// panicked cutting planes of zero samples. Images without pixels are now refused at decode,
/// with one line, on every path and in batch.
#[test]
fn an_image_without_pixels_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("tests/fixtures/fuzz/gif_screen_6176_by_0.gif");
    for (sigma, out) in [("0.7", "out.exr"), ("5", "out.png")] {
        let out = dir.path().join(out);
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["--sigma", sigma, "--device", "rust"])
            .assert()
            .code(1)
            .stderr(predicate::str::contains(
                "cannot decode: the image has no pixels (6176 × 0)",
            ))
            .stderr(predicate::str::contains("panicked").not());
        assert!(!out.exists());
    }
    let (inn, outd) = (dir.path().join("in"), dir.path().join("outd"));
    std::fs::create_dir_all(&inn).unwrap();
    std::fs::copy(&input, inn.join("empty.gif")).unwrap();
    gblur()
        .arg("batch")
        .arg(&inn)
        .arg(&outd)
        .args(["--sigma", "2"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the image has no pixels"));
}

/// decode_blur_encode: a 32×24 OpenEXR written as JPEG at quality 7 came back 32×16. Below
/// about quality 25 the quantisation tables need 16 bits, the encoder writes an SOF1 header
/// instead of SOF0, and the stripes' joiner set the full height in SOF0 headers only.
#[test]
fn low_quality_jpeg_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jpg");
    let input = fixture("tests/fixtures/fuzz/exr_32x24_to_jpeg_quality_7.exr");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["--sigma", "5.5", "--quality", "7", "-q", "--device", "rust"])
        .assert()
        .success();
    let img = common::open_image(&out);
    assert_eq!((img.width(), img.height()), (32, 24));
}
