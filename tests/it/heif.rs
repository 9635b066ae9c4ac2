//! HEIF input (HEIC and AVIF through libheif, loaded at run time), the formats table, and
//! inputs gblur reads but cannot write back in their own format. The HEIF files are small ones
//! libvips wrote through libheif (tests/fixtures/heif); `vips_*.png` are libvips's own decodes
//! of them, against which gblur's is compared. CI installs libheif (`.ci/run`).

use crate::common::{blur_to, fixture, gblur};
use image::GenericImageView;
use predicates::prelude::*;
use std::path::Path;

fn heif(name: &str) -> String {
    fixture(&format!("tests/fixtures/heif/{name}"))
        .to_string_lossy()
        .into_owned()
}

/// The file's samples (8- or 16-bit, widened to u16), channel count and size.
fn samples(path: &Path) -> (Vec<u16>, usize, (u32, u32)) {
    let img = image::open(path).unwrap();
    let (dims, color) = ((img.width(), img.height()), img.color());
    let channels = color.channel_count() as usize;
    let values = match (color.bytes_per_pixel() as usize / channels, channels) {
        (1, _) => img.as_bytes().iter().map(|&v| v as u16).collect(),
        (_, 3) => img.into_rgb16().into_raw(),
        _ => img.into_rgba16().into_raw(),
    };
    (values, channels, dims)
}

/// `input` decoded into the PNG `out` as it is (sigma 0 on both axes), with `GBLUR_FAULT`
/// set to `fault` (empty: none).
fn decode_as_is(input: &str, out: &Path, fault: &str) {
    gblur()
        .env("GBLUR_FAULT", fault)
        .args([
            input,
            out.to_str().unwrap(),
            "--sigma-x",
            "0",
            "--sigma-y",
            "0",
            "-q",
        ])
        .assert()
        .success();
}

#[test]
fn heic_and_avif_decode_as_libheif_decodes_them_in_libvips() {
    let dir = tempfile::tempdir().unwrap();
    // (file, libvips's decode, bits per sample in the file)
    let cases = [
        ("photo_exif.heic", "vips_photo_exif.png", 8),
        ("alpha.avif", "vips_alpha.png", 8),
        ("deep10.heic", "vips_deep10.png", 10),
        ("deep12.avif", "vips_deep12.png", 12),
    ];
    for (file, reference, bits) in cases {
        let out = dir.path().join(format!("{file}.png"));
        decode_as_is(&heif(file), &out, "");
        let (ours, channels, dims) = samples(&out);
        let reference = fixture(&format!("tests/fixtures/heif/{reference}"));
        let (theirs, their_channels, their_dims) = samples(&reference);
        assert_eq!((dims, channels), (their_dims, their_channels), "{file}");
        // libvips shifts deeper samples up to 16 bits; gblur scales them to the full range.
        let max = ((1u32 << bits) - 1) as f64;
        let theirs: Vec<u16> = match bits {
            8 => theirs,
            _ => theirs
                .iter()
                .map(|&v| ((v >> (16 - bits)) as f64 * 65535.0 / max).round() as u16)
                .collect(),
        };
        let worst = ours
            .chunks(channels)
            .zip(theirs.chunks(channels))
            // A pixel of alpha 0 has no colour once blurred premultiplied: only alpha counts.
            .flat_map(|(a, b)| {
                let transparent = channels == 4 && b[3] == 0;
                a.iter()
                    .zip(b)
                    .enumerate()
                    .filter(move |(c, _)| !transparent || *c == 3)
                    .map(|(_, (x, y))| x.abs_diff(*y))
            })
            .max()
            .unwrap();
        assert!(worst <= 1, "{file}: {worst} levels from libvips's decode");
    }
}

#[test]
fn hevc_on_every_core_decodes_what_libheifs_own_decoder_does() {
    // A 700 × 500 picture of blurred noise written as HEIC by x265 (wavefront rows, which libde265's
    // worker threads share), then each HEIC decoded through gblur's libde265 plugin and
    // through libheif's own decoder (GBLUR_FAULT=libheif-hevc): the same samples.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("noise.png");
    let noise = crate::common::noise(700, 500, 3, 7).data;
    let samples = noise.iter().map(|v| (v * 255.0) as u8).collect();
    image::RgbImage::from_raw(700, 500, samples)
        .unwrap()
        .save(&png)
        .unwrap();
    let made = dir.path().join("noise.heic");
    blur_to(&png, &made, &["--quality", "70"]);
    for input in [
        made.to_str().unwrap().to_string(),
        heif("photo_exif.heic"),
        heif("deep10.heic"),
    ] {
        let decoded = |fault: &str| {
            let out = dir.path().join("decoded.png");
            decode_as_is(&input, &out, fault);
            image::open(&out).unwrap()
        };
        let (threaded, own) = (decoded(""), decoded("libheif-hevc"));
        assert_eq!(threaded.dimensions(), own.dimensions(), "{input}");
        assert!(
            threaded.as_bytes() == own.as_bytes(),
            "{input}: the decodes differ"
        );
    }
    let table = |fault: &str| {
        let out = gblur()
            .env("GBLUR_FAULT", fault)
            .arg("formats")
            .assert()
            .success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    assert!(table("").contains("HEVC on every core, libde265 "));
    assert!(table("libheif-hevc").contains("HEVC on one core: turned off"));
}

#[test]
fn a_heic_cut_short_is_one_line_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(heif("photo_exif.heic")).unwrap();
    for keep in [300, whole.len() / 2] {
        let cut = dir.path().join("cut.heic");
        std::fs::write(&cut, &whole[..keep]).unwrap();
        let out = dir.path().join("out.png");
        let assert = gblur()
            .arg(&cut)
            .arg(&out)
            .args(["-s", "2"])
            .assert()
            .code(1);
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("cut.heic: cannot decode"), "{stderr}");
        assert!(
            stderr.contains("damaged or cut short"),
            "{keep} bytes: {stderr}"
        );
        assert!(!out.exists());
    }
}

#[test]
fn heic_metadata_is_kept_and_the_picture_is_not_turned_twice() {
    // The file's EXIF says orientation 6, but a HEIF file turns its pixels in the container
    // (libheif applies it), so the picture stays 64 × 48 and the written EXIF says 1.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("photo.jpg");
    let json = gblur()
        .args([
            &heif("photo_exif.heic"),
            out.to_str().unwrap(),
            "-s",
            "1.5",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(report["input"]["format"], "Heif");
    assert_eq!(
        (
            report["output"]["width"].as_u64(),
            report["output"]["height"].as_u64()
        ),
        (Some(64), Some(48))
    );
    let bytes = std::fs::read(&out).unwrap();
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(&bytes))
        .expect("EXIF kept");
    let field = |tag| {
        exif.get_field(tag, exif::In::PRIMARY)
            .map(|f| f.display_value().to_string())
    };
    assert_eq!(field(exif::Tag::Make).as_deref(), Some("\"gblur-test\""));
    assert_eq!(
        field(exif::Tag::Orientation).as_deref(),
        Some("row 0 at top and column 0 at left")
    );
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("heif test"), "XMP kept");
    assert_eq!(image::open(&out).unwrap().width(), 64);
}

#[test]
fn without_libheif_a_heif_input_is_one_line_naming_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jpg");
    let assert = gblur()
        .env("GBLUR_FAULT", "no-libheif")
        .args([&heif("photo_exif.heic"), out.to_str().unwrap(), "-s", "2"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("photo_exif.heic"))
        .stderr(predicate::str::contains("apt-get install libheif1"));
    assert_eq!(
        String::from_utf8_lossy(&assert.get_output().stderr)
            .lines()
            .count(),
        1
    );
    assert!(!out.exists());
    gblur()
        .env("GBLUR_FAULT", "no-libheif")
        .arg("formats")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^Heif +heic heif avif +no ").unwrap())
        .stdout(predicate::str::contains("apt-get install libheif1"));
}

#[test]
fn the_formats_table_says_what_this_build_reads_and_writes() {
    gblur()
        .arg("formats")
        .assert()
        .success()
        .stdout(
            predicate::str::is_match(
                r"(?m)^Heif +heic heif avif +yes +RGB 8/10, RGBA 8/10 +ICC, EXIF, XMP$",
            )
            .unwrap(),
        )
        .stdout(
            predicate::str::is_match(
                r"(?m)^Jpeg +jpg jpeg +yes +gray 8, RGB 8, CMYK 8 +ICC, EXIF, XMP$",
            )
            .unwrap(),
        );
    let json = gblur()
        .args(["formats", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let rows: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let tiff = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["format"] == "Tiff")
        .unwrap();
    assert!(tiff["writes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w == "RGBA 32f"));
    let heif = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["format"] == "Heif")
        .unwrap();
    assert_eq!(heif["reads"], true);
    assert_eq!(
        heif["writes"],
        serde_json::json!(["RGB 8", "RGBA 8", "RGB 10", "RGBA 10"]),
        "AVIF"
    );
}

#[test]
fn a_batch_input_in_a_format_gblur_does_not_write_fails_alone_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("in"), dir.path().join("out"));
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(
        fixture("tests/fixtures/jxl/photo.jxl"),
        input.join("phone.jxl"),
    )
    .unwrap();
    image::RgbImage::from_pixel(8, 6, image::Rgb([10, 20, 30]))
        .save(input.join("scan.ppm"))
        .unwrap();
    std::fs::copy(
        fixture("tests/fixtures/icc_srgb_16x16.png"),
        input.join("web.png"),
    )
    .unwrap();
    gblur()
        .args([
            "batch",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "-s",
            "1",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("1 blurred"))
        .stderr(predicate::str::contains("2 failed"))
        .stderr(predicate::str::contains(
            "phone.jxl: gblur does not write JPEG XL, the input's format: give --format jpg",
        ))
        .stderr(predicate::str::contains(
            "scan.ppm: gblur does not write Pnm",
        ));
    assert!(out.join("web.png").exists());
    assert!(!out.join("phone.jxl").exists() && !out.join("scan.ppm").exists());
    let with_format = gblur()
        .args([
            "batch",
            input.to_str().unwrap(),
            out.to_str().unwrap(),
            "-s",
            "1",
            "--format",
            "jpg",
        ])
        .assert();
    // A build without JPEG XL input fails that file alone, saying how to build with it.
    let jxl = cfg!(feature = "jxl");
    match jxl {
        true => with_format.success(),
        false => with_format
            .code(1)
            .stderr(predicate::str::contains("--features jxl")),
    };
    for name in ["scan.jpg", "web.jpg"]
        .into_iter()
        .chain(jxl.then_some("phone.jpg"))
    {
        assert!(out.join(name).exists(), "{name}");
    }
}

#[test]
fn a_cmyk_jpeg_says_its_colours_were_converted_by_formula() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmyk.png");
    gblur()
        .args([
            fixture("tests/fixtures/cmyk_64x48.jpg").to_str().unwrap(),
            out.to_str().unwrap(),
            "-s",
            "1",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the JPEG is CMYK without an ICC profile: its colours were converted to RGB by formula",
        ));
    let cmyk_tiff = dir.path().join("cmyk.tif");
    let samples: Vec<u8> = (0..16 * 8 * 4).map(|i| (i * 37 % 256) as u8).collect();
    tiff::encoder::TiffEncoder::new(std::fs::File::create(&cmyk_tiff).unwrap())
        .unwrap()
        .write_image::<tiff::encoder::colortype::CMYK8>(16, 8, &samples)
        .unwrap();
    gblur()
        .arg(&cmyk_tiff)
        .arg(dir.path().join("cmyk-tiff.png"))
        .args(["-s", "1"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the TIFF is CMYK without an ICC profile: its colours were converted to RGB by formula",
        ));
}

#[test]
fn the_readme_shows_the_formats_table_gblur_prints() {
    let readme = std::fs::read_to_string(fixture("README.md")).unwrap();
    let printed = gblur()
        .arg("formats")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let printed = String::from_utf8(printed).unwrap();
    // The rows above the notes; the notes name this machine's libheif version. The README shows
    // a build with every feature: a plain build's JPEG XL row says `no`.
    let rows = printed.lines().take_while(|l| !l.is_empty());
    for line in rows.filter(|l| cfg!(feature = "jxl") || !l.starts_with("JPEG XL")) {
        assert!(readme.contains(line.trim_end()), "README.md lacks: {line}");
    }
}

#[test]
fn a_dry_run_without_libheif_says_the_heif_files_would_fail() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    std::fs::copy(heif("photo_exif.heic"), input.join("phone.heic")).unwrap();
    std::fs::copy(fixture("samples/coffee.png"), input.join("web.png")).unwrap();
    gblur()
        .env("GBLUR_FAULT", "no-libheif")
        .arg("batch")
        .arg(&input)
        .arg(dir.path().join("out"))
        .args(["-s", "2", "--format", "jpg", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("fail   phone.heic"))
        .stdout(predicate::str::contains("apt-get install libheif1"))
        .stdout(predicate::str::contains(
            "1 to write, 0 to redo, 0 to skip, 1 would fail",
        ));
    assert!(!dir.path().join("out").exists());
}
