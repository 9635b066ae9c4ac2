//! Colour profiles. CMYK inputs with their ICC profile: converted to sRGB through it (moxcms),
//! against what Little CMS makes of the same pixels (`tests/fixtures/cmyk/make.py` wrote the
//! fixtures and the references), before and after a blur; a profile the colour engine refuses
//! falls back to the formula, with a note that says so. `--to-srgb` against Adobe RGB's
//! published colorimetry, and `--linear`'s note on curves other than sRGB's.

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
            "its ICC profile could not be applied (the colour engine refused the profile",
        ))
        .stderr(predicate::str::contains(CONVERTED).not());
}

/// `rgb` written as a PNG at `path` carrying `profile`.
fn tagged(path: &Path, rgb: &image::RgbImage, profile: moxcms::ColorProfile) {
    let mut encoder = image::codecs::png::PngEncoder::new(std::fs::File::create(path).unwrap());
    image::ImageEncoder::set_icc_profile(&mut encoder, profile.encode().unwrap()).unwrap();
    let (w, h) = rgb.dimensions();
    image::ImageEncoder::write_image(encoder, rgb, w, h, image::ExtendedColorType::Rgb8).unwrap();
}

#[test]
fn linear_light_says_where_the_profile_has_another_curve_than_srgb() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = image::RgbImage::from_fn(64, 40, |x, y| {
        image::Rgb([(x * 4) as u8, (y * 6) as u8, 90])
    });
    let (adobe, srgb) = (dir.path().join("adobe.png"), dir.path().join("srgb.png"));
    tagged(&adobe, &rgb, moxcms::ColorProfile::new_adobe_rgb());
    tagged(&srgb, &rgb, moxcms::ColorProfile::new_srgb());
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

/// An Adobe RGB (1998) pixel in sRGB by the published matrices (both white points D65):
/// decoded with its gamma of 563/256, through XYZ, clipped, sRGB-encoded.
fn adobe_to_srgb(px: [u8; 3]) -> [f64; 3] {
    const ADOBE_TO_XYZ: [[f64; 3]; 3] = [
        [0.576_730_9, 0.185_554_0, 0.188_185_2],
        [0.297_376_9, 0.627_349_1, 0.075_274_1],
        [0.027_034_3, 0.070_687_2, 0.991_108_5],
    ];
    const XYZ_TO_SRGB: [[f64; 3]; 3] = [
        [3.240_454_2, -1.537_138_5, -0.498_531_4],
        [-0.969_266_0, 1.876_010_8, 0.041_556_0],
        [0.055_643_4, -0.204_025_9, 1.057_225_2],
    ];
    let lin = px.map(|v| (v as f64 / 255.0).powf(563.0 / 256.0));
    let mul = |m: &[[f64; 3]; 3], v: [f64; 3]| {
        [0, 1, 2].map(|r| m[r][0] * v[0] + m[r][1] * v[1] + m[r][2] * v[2])
    };
    mul(&XYZ_TO_SRGB, mul(&ADOBE_TO_XYZ, lin)).map(|v| {
        let v = v.clamp(0.0, 1.0);
        255.0
            * if v <= 0.003_130_8 {
                12.92 * v
            } else {
                1.055 * v.powf(1.0 / 2.4) - 0.055
            }
    })
}

#[test]
fn to_srgb_converts_adobe_rgb_by_its_colorimetry_and_leaves_srgb_alone() {
    let dir = tempfile::tempdir().unwrap();
    let colours = [
        [128, 128, 128],
        [200, 60, 30],
        [40, 180, 90],
        [20, 40, 220],
        [250, 250, 5],
    ];
    let rgb = image::RgbImage::from_fn(5, 1, |x, _| image::Rgb(colours[x as usize]));
    let (adobe, srgb) = (dir.path().join("adobe.png"), dir.path().join("srgb.png"));
    tagged(&adobe, &rgb, moxcms::ColorProfile::new_adobe_rgb());
    tagged(&srgb, &rgb, moxcms::ColorProfile::new_srgb());
    let out = dir.path().join("out.png");
    let run = |input: &Path| {
        gblur()
            .arg(input)
            .arg(&out)
            .args(["--sigma", "0", "--to-srgb"])
            .assert()
            .success()
    };
    run(&adobe).stderr(predicate::str::contains(
        "--to-srgb: converted from its ICC profile",
    ));
    let png = std::fs::read(&out).unwrap();
    assert!(
        !png.windows(4).any(|w| w == b"iCCP"),
        "a profile on the sRGB output"
    );
    let written = image::load_from_memory(&png).unwrap().to_rgb8();
    for (x, c) in colours.iter().enumerate() {
        let want = adobe_to_srgb(*c);
        let got = written.get_pixel(x as u32, 0).0;
        for k in 0..3 {
            assert!(
                (got[k] as f64 - want[k]).abs() <= 1.5,
                "{c:?}: {got:?}, want {want:?}"
            );
        }
    }
    // sRGB stays as it is, profile and all, without a word.
    run(&srgb).stderr(predicate::str::contains("--to-srgb").not());
    let png = std::fs::read(&out).unwrap();
    assert!(png.windows(4).any(|w| w == b"iCCP"));
    assert_eq!(image::load_from_memory(&png).unwrap().to_rgb8(), rgb);
    // The strip engine converts nothing: asked for, it says so; an sRGB input it streams.
    gblur()
        .arg(&adobe)
        .arg(&out)
        .args(["--sigma", "2", "--to-srgb", "--engine", "strips"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--to-srgb with a profile other than sRGB goes through the whole-image path",
        ));
    gblur()
        .arg(&srgb)
        .arg(&out)
        .args(["--sigma", "2", "--to-srgb", "--engine", "strips"])
        .assert()
        .success()
        .stderr(predicate::str::contains("strips of"));
}

#[test]
fn cmyk_pixels_with_a_profile_for_other_colours_go_without_it() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["jpg", "tif"] {
        // The fixture's profile relabelled as one for RGB: it no longer describes the inks.
        let mut bytes =
            std::fs::read(fixture(&format!("tests/fixtures/cmyk/profiled.{kind}"))).unwrap();
        let at = bytes
            .windows(12)
            .position(|w| w == b"prtrCMYKLab ")
            .unwrap();
        bytes[at + 4..at + 8].copy_from_slice(b"RGB ");
        let input = dir.path().join(format!("rgb-profile.{kind}"));
        std::fs::write(&input, &bytes).unwrap();
        let out = dir.path().join(format!("{kind}.png"));
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["--sigma", "1", "--to-srgb"])
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "is CMYK with an ICC profile for other colours (RGB)",
            ))
            .stderr(predicate::str::contains("--to-srgb").not());
        let png = std::fs::read(&out).unwrap();
        assert!(
            !png.windows(4).any(|w| w == b"iCCP"),
            "{kind}: the foreign profile written"
        );
    }
}

#[test]
fn cmyk_with_its_bits_reversed_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("fill-order-2.tif");
    let samples: Vec<u8> = (0..16 * 8 * 4).map(|i| (i * 37 % 256) as u8).collect();
    let mut tiff = tiff::encoder::TiffEncoder::new(std::fs::File::create(&input).unwrap()).unwrap();
    let mut image = tiff
        .new_image::<tiff::encoder::colortype::CMYK8>(16, 8)
        .unwrap();
    image
        .encoder()
        .write_tag(tiff::tags::Tag::FillOrder, 2u16)
        .unwrap();
    image.write_data(&samples).unwrap();
    gblur()
        .arg(&input)
        .arg(dir.path().join("out.png"))
        .args(["--sigma", "1"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "CMYK with its bits stored least significant first",
        ));
    assert!(!dir.path().join("out.png").exists());
}

#[test]
fn to_srgb_marks_the_exif_colour_space_as_srgb() {
    // A camera in Adobe RGB mode: the profile, and EXIF ColorSpace 0xFFFF (uncalibrated).
    let dir = tempfile::tempdir().unwrap();
    let rgb = image::RgbImage::from_fn(16, 8, |x, y| image::Rgb([x as u8 * 9, y as u8 * 20, 70]));
    let plain = dir.path().join("plain.png");
    tagged(&plain, &rgb, moxcms::ColorProfile::new_adobe_rgb());
    let mut exif = b"II*\0\x08\0\0\0\x01\0\x69\x87\x04\0\x01\0\0\0\x1a\0\0\0\0\0\0\0".to_vec();
    exif.extend_from_slice(b"\x01\0\x01\xa0\x03\0\x01\0\0\0\xff\xff\0\0\0\0\0\0");
    let mut chunk = (exif.len() as u32).to_be_bytes().to_vec();
    let body = [&b"eXIf"[..], &exif].concat();
    chunk.extend_from_slice(&body);
    chunk.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    let png = std::fs::read(&plain).unwrap();
    let input = dir.path().join("camera.png");
    std::fs::write(&input, [&png[..33], &chunk, &png[33..]].concat()).unwrap();
    let colour_space = |jpeg: &Path| {
        let file = std::fs::File::open(jpeg).unwrap();
        let exif = exif::Reader::new()
            .read_from_container(&mut std::io::BufReader::new(file))
            .unwrap();
        let field = exif
            .get_field(exif::Tag::ColorSpace, exif::In::PRIMARY)
            .unwrap();
        field.value.get_uint(0).unwrap()
    };
    let (kept, converted) = (dir.path().join("kept.jpg"), dir.path().join("srgb.jpg"));
    gblur()
        .arg(&input)
        .arg(&kept)
        .args(["-s", "1", "-q"])
        .assert()
        .success();
    assert_eq!(colour_space(&kept), 0xFFFF);
    gblur()
        .arg(&input)
        .arg(&converted)
        .args(["-s", "1", "-q", "--to-srgb"])
        .assert()
        .success();
    assert_eq!(colour_space(&converted), 1);
}

#[test]
fn to_srgb_keeps_the_ycbcr_planes_for_jpegs_it_leaves_alone() {
    let dir = tempfile::tempdir().unwrap();
    let rgb = image::RgbImage::from_fn(64, 48, |x, y| image::Rgb([x as u8 * 3, y as u8 * 5, 99]));
    let jpeg = |name: &str, profile: Option<moxcms::ColorProfile>| {
        let path = dir.path().join(name);
        let file = std::fs::File::create(&path).unwrap();
        let mut encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(file, 90);
        if let Some(p) = profile {
            image::ImageEncoder::set_icc_profile(&mut encoder, p.encode().unwrap()).unwrap();
        }
        image::ImageEncoder::write_image(encoder, &rgb, 64, 48, image::ExtendedColorType::Rgb8)
            .unwrap();
        path
    };
    let out = dir.path().join("out.jpg");
    let blurred = |input: &Path| {
        let run = gblur()
            .arg(input)
            .arg(&out)
            .args(["-s", "2", "--to-srgb", "--device", "rust"])
            .assert()
            .success();
        String::from_utf8(run.get_output().stderr.clone()).unwrap()
    };
    let plain = blurred(&jpeg("plain.jpg", None));
    assert!(
        plain.contains("YCbCr") && !plain.contains("--to-srgb:"),
        "{plain}"
    );
    let adobe = blurred(&jpeg(
        "adobe.jpg",
        Some(moxcms::ColorProfile::new_adobe_rgb()),
    ));
    assert!(
        adobe.contains("--to-srgb: converted") && !adobe.contains("YCbCr"),
        "{adobe}"
    );
}

#[test]
fn an_rgb_profile_is_not_written_over_gray_samples() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("gray.png");
    let gray = image::GrayImage::from_fn(24, 16, |x, y| image::Luma([(x * 10 + y) as u8]));
    let mut encoder = image::codecs::png::PngEncoder::new(std::fs::File::create(&input).unwrap());
    let profile = moxcms::ColorProfile::new_adobe_rgb().encode().unwrap();
    image::ImageEncoder::set_icc_profile(&mut encoder, profile).unwrap();
    image::ImageEncoder::write_image(encoder, &gray, 24, 16, image::ExtendedColorType::L8).unwrap();
    for (out, engine) in [
        ("gray.png", "whole"),
        ("gray.jpg", "whole"),
        ("gray.tif", "whole"),
        ("streamed.png", "strips"),
    ] {
        let out = dir.path().join(format!("out-{out}"));
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "2", "--engine", engine])
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "the input's ICC profile is for RGB, and the output holds gray: it was not written",
            ));
        assert!(!image::open(&out).unwrap().color().has_color());
    }
}
