//! CMYK inputs with their ICC profile: converted to sRGB through it (moxcms), against what
//! Little CMS makes of the same pixels (`tests/fixtures/cmyk/make.py` wrote the fixtures and
//! the references), before and after a blur; a profile the colour engine refuses falls back
//! to the formula, with a note that says so.

use crate::common::{fixture, gblur, mean_abs_diff};
use predicates::prelude::*;
use std::path::Path;

const CONVERTED: &str = "the input is CMYK: converted to sRGB through its ICC profile";

fn rgb8(path: &Path) -> Vec<u8> {
    image::open(path).unwrap().to_rgb8().into_raw()
}

fn max_diff(a: &[u8], b: &[u8]) -> u8 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)).max().unwrap()
}

fn converted(input: &Path, out: &Path, sigma: &str) {
    gblur()
        .arg(input)
        .arg(out)
        .args(["--sigma", sigma])
        .assert()
        .success()
        .stderr(predicate::str::contains(CONVERTED))
        .stderr(predicate::str::contains("by formula").not());
}

#[test]
fn cmyk_jpeg_and_tiff_convert_through_their_profile_as_little_cms_does() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["jpg", "tif"] {
        let out = dir.path().join(format!("{kind}.png"));
        converted(
            &fixture(&format!("tests/fixtures/cmyk/profiled.{kind}")),
            &out,
            "0",
        );
        let lcms = rgb8(&fixture(&format!(
            "tests/fixtures/cmyk/profiled_{kind}_lcms.png"
        )));
        let ours = rgb8(&out);
        // Two engines interpolating one 7-point table: a level or two apart, here and there
        // three; the formula (R = (1-C)(1-K), ...) is 10 levels off on average, 38 at most.
        assert!(
            max_diff(&ours, &lcms) <= 3,
            "{kind}: max {}",
            max_diff(&ours, &lcms)
        );
        assert!(
            mean_abs_diff(&ours, &lcms) < 1.0,
            "{kind}: mean {}",
            mean_abs_diff(&ours, &lcms)
        );
        let png: &[u8] = &std::fs::read(&out).unwrap();
        assert!(
            !png.windows(4).any(|w| w == b"iCCP"),
            "{kind}: a CMYK profile on RGB"
        );
    }
}

#[test]
fn a_blurred_cmyk_tiff_is_the_blur_of_its_srgb_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.png");
    converted(&fixture("tests/fixtures/cmyk/profiled.tif"), &ours, "2");
    let theirs = dir.path().join("theirs.png");
    gblur()
        .arg(fixture("tests/fixtures/cmyk/profiled_tif_lcms.png"))
        .arg(&theirs)
        .args(["--sigma", "2", "-q"])
        .assert()
        .success();
    let (ours, theirs) = (rgb8(&ours), rgb8(&theirs));
    assert!(
        max_diff(&ours, &theirs) <= 2,
        "max {}",
        max_diff(&ours, &theirs)
    );
}

#[test]
fn a_profile_the_colour_engine_refuses_falls_back_to_the_formula_with_a_note() {
    // The profile's lookup tables renamed: a CMYK profile with nothing to convert through.
    let mut bytes = std::fs::read(fixture("tests/fixtures/cmyk/profiled.jpg")).unwrap();
    let mut renamed = 0;
    for i in 0..bytes.len() - 4 {
        if &bytes[i..i + 4] == b"mft2" {
            bytes[i..i + 4].copy_from_slice(b"zzzz");
            renamed += 1;
        }
    }
    assert_eq!(renamed, 2, "the fixture's A2B0 and B2A0");
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("broken-profile.jpg");
    std::fs::write(&input, &bytes).unwrap();
    gblur()
        .arg(&input)
        .arg(dir.path().join("out.png"))
        .args(["--sigma", "1"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "its colours were converted to RGB without the profile (approximate)",
        ))
        .stderr(predicate::str::contains(CONVERTED).not());
}

#[test]
fn linear_light_says_where_the_profile_has_another_curve_than_srgb() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = image::RgbImage::from_fn(64, 40, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 6) as u8, 90])
    });
    let tagged = |name: &str, profile: moxcms::ColorProfile| {
        let path = dir.path().join(name);
        let mut encoder =
            image::codecs::png::PngEncoder::new(std::fs::File::create(&path).unwrap());
        image::ImageEncoder::set_icc_profile(&mut encoder, profile.encode().unwrap()).unwrap();
        image::ImageEncoder::write_image(encoder, &rgb, 64, 40, image::ExtendedColorType::Rgb8)
            .unwrap();
        path
    };
    let adobe = tagged("adobe.png", moxcms::ColorProfile::new_adobe_rgb());
    let srgb = tagged("srgb.png", moxcms::ColorProfile::new_srgb());
    for engine in ["whole", "strips"] {
        let run = |input: &Path| {
            gblur()
                .arg(input)
                .arg(dir.path().join("out.png"))
                .args(["--sigma", "2", "--linear", "--engine", engine])
                .assert()
                .success()
        };
        run(&adobe).stderr(predicate::str::contains(
            "--linear decoded the samples with sRGB's transfer curve, but their ICC profile",
        ));
        run(&srgb).stderr(predicate::str::contains("--linear decoded").not());
    }
}
