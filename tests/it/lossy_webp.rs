//! WebP written lossy (libwebp) at `--quality N`, and by default at 75 as libvips writes it;
//! lossless with `--quality lossless` or from a lossless WebP input: smaller at lower quality,
//! close to the lossless result, alpha kept exactly, the ICC profile and EXIF kept; `--quality
//! same`, which reads a JPEG input's tables, refused for WebP, `lossless` for other formats.

use crate::common::{blur_to, fixture, gblur, json_report, mean_abs_diff};

/// The RIFF chunks' names of a WebP file.
fn chunks(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        out.push(String::from_utf8_lossy(&bytes[at..at + 4]).into_owned());
        at += 8 + len.next_multiple_of(2);
    }
    out
}

#[test]
fn quality_writes_lossy_webp_close_to_the_lossless_result() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/chelsea.jpg");
    let lossless = blur_to(
        &input,
        &dir.path().join("lossless.webp"),
        &["--quality", "lossless"],
    );
    assert!(
        chunks(&lossless).contains(&"VP8L".into()),
        "{:?}",
        chunks(&lossless)
    );
    let q50 = blur_to(&input, &dir.path().join("q50.webp"), &["--quality", "50"]);
    let q90 = blur_to(&input, &dir.path().join("q90.webp"), &["--quality", "90"]);
    for lossy in [&q50, &q90] {
        assert!(
            chunks(lossy).contains(&"VP8 ".into()),
            "{:?}",
            chunks(lossy)
        );
    }
    assert!(
        q50.len() < q90.len() && q90.len() < lossless.len() / 2,
        "{} {} {}",
        q50.len(),
        q90.len(),
        lossless.len()
    );
    let exact = image::load_from_memory(&lossless).unwrap().to_rgb8();
    for (q, bytes, most) in [(50, &q50, 4.0), (90, &q90, 2.0)] {
        let got = image::load_from_memory(bytes).unwrap().to_rgb8();
        assert_eq!(got.dimensions(), exact.dimensions());
        let diff = mean_abs_diff(got.as_raw(), exact.as_raw());
        assert!(
            diff < most,
            "quality {q}: {diff} levels from the lossless result on average"
        );
    }
}

#[test]
fn without_quality_a_webp_is_lossy_at_75_unless_the_input_was_a_lossless_webp() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("samples/chelsea.jpg");
    let at = |name: &str, args: &[&str]| blur_to(&input, &dir.path().join(name), args);
    let default = at("default.webp", &[]);
    assert_eq!(
        default,
        at("q75.webp", &["--quality", "75"]),
        "the default is quality 75"
    );
    let lossless = at("lossless.webp", &["--quality", "lossless"]);
    assert!(
        default.len() * 5 < lossless.len(),
        "{} {}",
        default.len(),
        lossless.len()
    );
    // A lossless WebP input stays lossless, a lossy one lossy; a number still decides.
    let again = |from: &str, to: &str, args: &[&str]| {
        blur_to(&dir.path().join(from), &dir.path().join(to), args)
    };
    assert!(chunks(&again("lossless.webp", "still.webp", &[])).contains(&"VP8L".into()));
    assert!(chunks(&again("default.webp", "lossy.webp", &[])).contains(&"VP8 ".into()));
    let asked = again("lossless.webp", "asked.webp", &["--quality", "60"]);
    assert!(chunks(&asked).contains(&"VP8 ".into()));
    // `lossless` is WebP's alone: refused for a JPEG, and a PNG is lossless anyway.
    let png = dir.path().join("o.png");
    gblur()
        .arg(&input)
        .arg(&png)
        .args(["-s", "2", "--quality", "lossless"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--quality applies to WebP output: PNG is lossless",
        ));
    let jpeg = dir.path().join("o.jpg");
    gblur()
        .arg(&input)
        .arg(&jpeg)
        .args(["-s", "2", "--quality", "lossless"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--quality lossless is WebP's lossless coding",
        ));
    assert!(!jpeg.exists());
}

#[test]
fn lossy_webp_keeps_alpha_exactly_and_the_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let rgba = fixture("samples/chelsea-rgba.png");
    let exact = blur_to(
        &rgba,
        &dir.path().join("a.webp"),
        &["--quality", "lossless"],
    );
    let exact = image::load_from_memory(&exact).unwrap().to_rgba8();
    let lossy_bytes = blur_to(&rgba, &dir.path().join("b.webp"), &["--quality", "60"]);
    assert!(
        chunks(&lossy_bytes).contains(&"ALPH".into()),
        "{:?}",
        chunks(&lossy_bytes)
    );
    let lossy = image::load_from_memory(&lossy_bytes).unwrap().to_rgba8();
    let alpha = |i: &image::RgbaImage| i.pixels().map(|p| p.0[3]).collect::<Vec<_>>();
    assert_eq!(alpha(&lossy), alpha(&exact));
    // The ICC profile in ICCP, and EXIF, in an extended file.
    let icc = fixture("tests/fixtures/icc_srgb_16x16.png");
    let with_icc = blur_to(&icc, &dir.path().join("icc.webp"), &["--quality", "80"]);
    assert_eq!(
        chunks(&with_icc)[..2],
        ["VP8X".to_string(), "ICCP".to_string()]
    );
    assert_ne!(with_icc[20] & 0x20, 0, "VP8X announces the profile");
    let phone = fixture("tests/fixtures/phone_exif_xmp.jpg");
    let with_exif = blur_to(&phone, &dir.path().join("exif.webp"), &["--quality", "80"]);
    let names = chunks(&with_exif);
    assert!(
        names.contains(&"EXIF".into()) && names.contains(&"XMP ".into()),
        "{names:?}"
    );
    image::load_from_memory(&with_exif).unwrap();
}

#[test]
fn quality_same_is_refused_for_webp_and_a_number_is_taken_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.webp");
    gblur()
        .arg(fixture("samples/chelsea.jpg"))
        .arg(&out)
        .args(["-s", "2", "--quality", "same"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("for WebP give 1 to 100"));
    assert!(!out.exists());
    // Stdout and a batch.
    let piped = gblur()
        .args(["-", "webp:-", "-s", "2", "--quality", "40"])
        .write_stdin(std::fs::read(fixture("samples/coffee.png")).unwrap())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(chunks(&piped).contains(&"VP8 ".into()));
    gblur()
        .args([
            "batch",
            "samples",
            "--include",
            "*.png",
            "--format",
            "webp",
            "-s",
            "2",
            "--quality",
            "40",
            "-q",
        ])
        .arg(dir.path().join("batch"))
        .assert()
        .success();
    let coffee = std::fs::read(dir.path().join("batch/coffee.webp")).unwrap();
    assert!(chunks(&coffee).contains(&"VP8 ".into()));
}

#[test]
fn the_library_takes_a_quality_for_jpeg_and_webp_and_refuses_it_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let options = gblur::FileOptions::new(gblur::Gaussian::new(2.0).unwrap())
        .device("rust")
        .quality(45)
        .unwrap();
    let input = fixture("samples/coffee.png");
    let out = dir.path().join("o.webp");
    gblur::blur_file(&input, &out, &options).unwrap();
    assert!(chunks(&std::fs::read(&out).unwrap()).contains(&"VP8 ".into()));
    let png = dir.path().join("o.png");
    let e = gblur::blur_file(&input, &png, &options)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--quality applies to JPEG, WebP, AVIF or HEIC output"),
        "{e}"
    );
    assert!(!png.exists());
    assert!(gblur::FileOptions::new(gblur::Gaussian::new(2.0).unwrap())
        .quality(0)
        .is_err());
}

#[test]
fn a_gray_profile_is_not_written_over_colour_samples() {
    let dir = tempfile::tempdir().unwrap();
    // A gray PNG tagged with a (minimal) gray profile: the data colour space field says GRAY.
    let mut profile = vec![0u8; 132];
    profile[..4].copy_from_slice(&132u32.to_be_bytes());
    profile[12..16].copy_from_slice(b"mntr");
    profile[16..20].copy_from_slice(b"GRAY");
    profile[20..24].copy_from_slice(b"XYZ ");
    profile[36..40].copy_from_slice(b"acsp");
    let gray = image::GrayImage::from_fn(32, 24, |x, y| image::Luma([(x * 7 + y * 3) as u8]));
    let input = dir.path().join("gray.png");
    {
        use image::ImageEncoder;
        let mut e = image::codecs::png::PngEncoder::new(std::fs::File::create(&input).unwrap());
        e.set_icc_profile(profile.clone()).unwrap();
        e.write_image(gray.as_raw(), 32, 24, image::ExtendedColorType::L8)
            .unwrap();
    }
    let out = dir.path().join("out.webp");
    let json = gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "1", "--quality", "80", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    assert!(String::from_utf8_lossy(&json).contains("the input's ICC profile is for gray"));
    assert!(!chunks(&std::fs::read(&out).unwrap()).contains(&"ICCP".into()));
    // Gray stays gray in a PNG, and keeps it.
    let png = dir.path().join("out.png");
    blur_to(&input, &png, &[]);
    let mut d = image::ImageReader::open(&png)
        .unwrap()
        .into_decoder()
        .unwrap();
    use image::ImageDecoder;
    assert_eq!(d.icc_profile().unwrap(), Some(profile));
}

#[test]
fn without_libwebp_lossy_output_is_refused_in_one_line_and_the_default_is_lossless() {
    let dir = tempfile::tempdir().unwrap();
    let png = fixture("samples/coffee.png");
    let lossy = dir.path().join("lossy.webp");
    gblur()
        .env("GBLUR_FAULT", "no-libwebp")
        .arg(&png)
        .arg(&lossy)
        .args(["-s", "2", "--quality", "80", "-q"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("lossy.webp"))
        .stderr(predicates::str::contains("apt-get install libwebp7"))
        .stderr(predicates::function::function(|e: &str| {
            e.lines().count() == 1
        }));
    assert!(!lossy.exists());
    // Without --quality the WebP is written lossless, and the report says why; WebP input
    // (through the image crate's decoder) needs no libwebp.
    let lossless = dir.path().join("lossless.webp");
    let report = gblur()
        .env("GBLUR_FAULT", "no-libwebp")
        .arg(&png)
        .arg(&lossless)
        .args(["-s", "2", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report = String::from_utf8_lossy(&report);
    assert!(
        report.contains("so the WebP was written lossless"),
        "{report}"
    );
    assert!(chunks(&std::fs::read(&lossless).unwrap()).contains(&"VP8L".into()));
    let back = dir.path().join("back.png");
    gblur()
        .env("GBLUR_FAULT", "no-libwebp")
        .arg(&lossless)
        .arg(&back)
        .args(["--sigma-x", "0", "--sigma-y", "0", "-q"])
        .assert()
        .success();
    assert_eq!(
        image::open(&back).unwrap().to_rgb8(),
        image::open(&lossless).unwrap().to_rgb8()
    );
}

#[test]
fn a_batch_writes_its_webp_outputs_lossless_and_the_others_at_their_default() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir(&input).unwrap();
    let jpeg = fixture("samples/chelsea.jpg");
    std::fs::copy(&jpeg, input.join("a.jpg")).unwrap();
    blur_to(&jpeg, &input.join("b.webp"), &[]);
    let v = json_report(gblur().arg("batch").args([&input, &output]).args([
        "-s",
        "1.5",
        "--quality",
        "lossless",
        "--json",
        "-q",
    ]));
    assert_eq!(v["blurred"], 2, "{v}");
    assert!(
        v["notes"]
            .to_string()
            .contains("--quality applied to the 1 WebP outputs"),
        "{v}"
    );
    assert!(chunks(&std::fs::read(output.join("b.webp")).unwrap()).contains(&"VP8L".into()));
    // The JPEG at its default quality: as the main command writes it without --quality.
    let alone = blur_to(&input.join("a.jpg"), &dir.path().join("alone.jpg"), &[]);
    assert_eq!(std::fs::read(output.join("a.jpg")).unwrap(), alone);
}
