//! The strip engine on JPEG (`--engine strips`): JPEG in a scanline at a time, JPEG out in the
//! restart stripes the whole-image encoder writes. The same pixels as the whole-image path
//! within one step (PNG out) and the same file but for those steps (JPEG out, against the
//! whole-image path's RGB route); the quality, layout and metadata it writes; a one-line
//! error for a damaged file with no output left; and refusals (`stream_memory.rs`: a large
//! JPEG within `--max-memory`).

use crate::common;
use crate::support::strips;
use common::gblur;
use image::DynamicImage;
use std::path::Path;
use strips::{
    assert_refused, check_metadata_like_the_whole_image, image, max_steps, metadata_of, run,
};

/// `img` as a JPEG at `quality` (the `image` crate's encoder: 4:2:0 colour).
fn save_jpeg(img: &DynamicImage, path: &Path, quality: u8) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(file, quality);
    img.write_with_encoder(encoder).unwrap();
}

/// The mean absolute difference between two images' 8-bit samples.
fn mean_steps(a: &DynamicImage, b: &DynamicImage) -> f64 {
    let (a, b) = (a.to_rgb8(), b.to_rgb8());
    let sum: u64 = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| x.abs_diff(*y) as u64)
        .sum();
    sum as f64 / a.len() as f64
}

/// The largest difference, in steps, between the whole-image path's decoding of `jpeg`
/// (`libjpeg-turbo-rs`: the command at sigma 0.001, the identity, into PNG) and the strip
/// engine's (libjpeg, through `mozjpeg`).
fn decoder_spread(jpeg: &Path) -> u32 {
    let bytes = std::fs::read(jpeg).unwrap();
    let decoded = jpeg.with_extension("decoded.png");
    gblur()
        .arg(jpeg)
        .arg(&decoded)
        .args([
            "--sigma", "0.001", "--engine", "whole", "--device", "rust", "-q",
        ])
        .assert()
        .success();
    let whole = image::open(&decoded).unwrap();
    let d = mozjpeg::Decompress::new_mem(&bytes).unwrap();
    let (w, h) = (d.width() as u32, d.height() as u32);
    let strips: DynamicImage = match whole.color().channel_count() {
        1 => {
            let mut d = d.grayscale().unwrap();
            image::GrayImage::from_raw(w, h, d.read_scanlines().unwrap())
                .unwrap()
                .into()
        }
        _ => {
            let mut d = d.rgb().unwrap();
            image::RgbImage::from_raw(w, h, d.read_scanlines().unwrap())
                .unwrap()
                .into()
        }
    };
    max_steps(&whole, &strips)
}

#[test]
fn jpeg_strips_match_the_whole_image() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let (jpeg, png) = (path("in.jpg"), path("in.png"));
    let sizes = [(37, 29), (1, 70), (61, 1), (130, 301)];
    let mut cases = 0;
    for (i, &(w, h)) in sizes.iter().enumerate() {
        for channels in [1, 3] {
            let img = image(w, h, channels, false, i as u64);
            save_jpeg(&img, &jpeg, 90);
            img.save(&png).unwrap();
            let spread = decoder_spread(&jpeg);
            assert!(spread <= 4, "the decoders are {spread} steps apart");
            for sigma in [0.5, 3.0, 20.0, 100.0] {
                let rows = [16, 48, 256][cases % 3];
                cases += 1;
                let what = format!("{w}x{h}, {channels} channels, sigma {sigma}, strips of {rows}");
                // JPEG in: within one step of the whole image beyond the two paths'
                // decoders' spread (chroma upsampling and IDCT rounding).
                run(&jpeg, &path("whole.png"), "whole", sigma, rows, &[]);
                run(&jpeg, &path("strips.png"), "strips", sigma, rows, &[]);
                let whole = image::open(path("whole.png")).unwrap();
                let strips = image::open(path("strips.png")).unwrap();
                let d = max_steps(&whole, &strips);
                assert!(
                    d <= 1 + spread,
                    "{what}: {d} steps, decoders {spread} apart"
                );
                // JPEG out: the whole-image path's RGB route writes the same stripes, so the
                // files differ only around a sample that did.
                let rgb = ["--jpeg-path", "rgb"];
                run(&png, &path("whole.jpg"), "whole", sigma, rows, &rgb);
                run(&png, &path("strips.jpg"), "strips", sigma, rows, &[]);
                let whole = image::open(path("whole.jpg")).unwrap();
                let strips = image::open(path("strips.jpg")).unwrap();
                assert_eq!(whole.color(), strips.color(), "{what}");
                let (d, mean) = (max_steps(&whole, &strips), mean_steps(&whole, &strips));
                assert!(
                    d <= 4 && mean < 0.05,
                    "{what}: {d} steps, {mean} on average"
                );
            }
        }
    }
}

/// The bytes of every segment with `marker` in a JPEG's header.
fn segments(jpeg: &[u8], marker: u8) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    let mut at = 2;
    while at + 4 <= jpeg.len() && jpeg[at] == 0xFF && jpeg[at + 1] != 0xDA {
        let len = u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
        if jpeg[at + 1] == marker {
            found.push(jpeg[at..at + 2 + len].to_vec());
        }
        at += 2 + len;
    }
    found
}

#[test]
fn writes_the_quality_layout_and_metadata_the_whole_image_path_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    // --quality same and --subsampling same copy a 4:2:0 quality-70 input.
    save_jpeg(&image(300, 200, 3, false, 9), &path("in.jpg"), 70);
    let same = [
        "--quality",
        "same",
        "--subsampling",
        "same",
        "--jpeg-path",
        "rgb",
    ];
    run(&path("in.jpg"), &path("whole.jpg"), "whole", 4.0, 16, &same);
    run(
        &path("in.jpg"),
        &path("strips.jpg"),
        "strips",
        4.0,
        16,
        &same[..4],
    );
    let (whole, strips) = (
        std::fs::read(path("whole.jpg")).unwrap(),
        std::fs::read(path("strips.jpg")).unwrap(),
    );
    for marker in [0xDB, 0xC0, 0xDD] {
        let found = segments(&whole, marker);
        assert!(!found.is_empty(), "marker {marker:X}");
        assert_eq!(found, segments(&strips, marker), "marker {marker:X}");
    }
    // The ICC profile, EXIF and XMP of a PNG, into JPEG.
    check_metadata_like_the_whole_image(dir.path(), "jpg", |p| {
        metadata_of(p, image::codecs::jpeg::JpegDecoder::new)
    });
}

#[test]
fn a_damaged_jpeg_is_an_error_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jpg");
    save_jpeg(&image(300, 400, 3, false, 2), &input, 90);
    let bytes = std::fs::read(&input).unwrap();
    let sos = bytes.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    let mut corrupt = bytes.clone();
    corrupt[sos + 200..sos + 260].fill(0xFF);
    for (what, damaged) in [
        ("cut", bytes[..bytes.len() * 2 / 3].to_vec()),
        ("corrupt", corrupt),
    ] {
        std::fs::write(&input, &damaged).unwrap();
        let out = dir.path().join("out.jpg");
        let assert = gblur()
            .env("GBLUR_STRIP_ROWS", "16")
            .args([input.as_os_str(), out.as_os_str()])
            .args(["--sigma", "3", "--engine", "strips", "--device", "rust"])
            .assert()
            .failure()
            .code(1);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            err.contains("in.jpg") && err.contains("decode"),
            "{what}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{what}: only the input is left: {left:?}");
    }
}

#[test]
fn jpegs_it_does_not_stream_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    image(20, 20, 4, false, 1).save(path("rgba.png")).unwrap();
    image(20, 20, 3, true, 1).save(path("rgb16.png")).unwrap();
    let turned = common::fixture("tests/fixtures/orientation6_8x4.jpg");
    let cases = [
        (path("rgba.png"), "alpha go to JPEG"),
        (path("rgb16.png"), "16-bit samples"),
        (turned.clone(), "its EXIF orientation turns the image"),
    ];
    for (input, says) in &cases {
        assert_refused(input, &path("out.jpg"), &["--device", "rust"], says);
    }
    // auto leaves them to the whole-image path.
    let out = path("out.jpg");
    gblur()
        .args([turned.as_os_str(), out.as_os_str()])
        .args(["--sigma", "3", "--device", "rust", "--max-memory", "1"])
        .assert()
        .success();
}

/// A JPEG over the budget that the engine does not stream (its EXIF orientation turns it):
/// the error says so beside the budget, not the budget alone.
#[test]
fn an_over_budget_job_says_why_it_was_not_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("turned.jpg");
    std::fs::write(
        &input,
        crate::support::phone::phone_jpeg_sized(6, (1200, 600)),
    )
    .unwrap();
    let out = gblur()
        .arg(&input)
        .arg(dir.path().join("out.jpg"))
        .args(["--sigma", "3", "--max-memory", "1"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("memory limit of 1 MiB"), "{err}");
    assert!(
        err.contains("the strip engine") && err.contains("EXIF orientation"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
