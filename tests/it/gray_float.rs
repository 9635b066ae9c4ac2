//! Gray 32-bit float TIFF (one channel, or gray and alpha), the common microscopy and
//! remote-sensing float format: blurred within 1e-3 of the exact Gaussian, written back as
//! gray float, bit for bit what the same samples give as RGB float with three equal channels;
//! gray of 16 or 8 bits in formats without float; every page of a stack, and a stack as a
//! volume.

use crate::common::{gblur, noise};
use crate::pages::exact_along;
use predicates::prelude::*;
use std::path::Path;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::encoder::{colortype, TiffEncoder};
use tiff::tags::Tag;

const W: usize = 48;
const H: usize = 36;

/// Samples of a float image: a ramp from -0.5 to 2.5 with a bright square and noise.
fn samples(seed: u64) -> Vec<f32> {
    let n = noise(W, H, 1, seed).data;
    (0..W * H)
        .map(|i| {
            let (x, y) = (i % W, i / W);
            let square = (10..22).contains(&x) && (8..20).contains(&y);
            -0.5 + 3.0 * x as f32 / W as f32 + if square { 1.5 } else { 0.0 } + 0.2 * n[i]
        })
        .collect()
}

/// Writes pages of float samples, `channels` a pixel (1: gray, 2: gray and alpha, 3: RGB).
fn write(path: &Path, pages: &[Vec<f32>], channels: usize) {
    let mut e = TiffEncoder::new(std::fs::File::create(path).unwrap()).unwrap();
    let (w, h) = (W as u32, H as u32);
    for p in pages {
        match channels {
            1 => e.write_image::<colortype::Gray32Float>(w, h, p).unwrap(),
            3 => e.write_image::<colortype::RGB32Float>(w, h, p).unwrap(),
            _ => {
                let mut image = e.new_image::<colortype::Gray32Float>(2 * w, h).unwrap();
                // Gray and alpha: the crate has no such colour type, so the layout tags are
                // set to two samples of half as many pixels.
                let enc = image.encoder();
                enc.write_tag(Tag::ImageWidth, w).unwrap();
                enc.write_tag(Tag::SamplesPerPixel, 2u16).unwrap();
                enc.write_tag(Tag::BitsPerSample, &[32u16, 32][..]).unwrap();
                enc.write_tag(Tag::SampleFormat, &[3u16, 3][..]).unwrap();
                enc.write_tag(Tag::ExtraSamples, 2u16).unwrap();
                image.write_data(p).unwrap();
            }
        }
    }
}

/// Every page of a TIFF as float samples, with its samples per pixel.
fn read(path: &Path) -> Vec<(Vec<f32>, u16)> {
    let mut d = Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    loop {
        let spp = d
            .find_tag_unsigned::<u16>(Tag::SamplesPerPixel)
            .unwrap()
            .unwrap_or(1);
        match d.read_image().unwrap() {
            DecodingResult::F32(v) => out.push((v, spp)),
            other => panic!("not float: {other:?}"),
        }
        if !d.more_images() {
            return out;
        }
        d.next_image().unwrap();
    }
}

fn blur(input: &Path, out: &Path, args: &[&str]) -> String {
    let r = gblur()
        .arg(input)
        .arg(out)
        .args(args)
        .args(["--json", "-q"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    String::from_utf8(r.stdout).unwrap()
}

#[test]
fn gray_float_is_blurred_within_1e_3_of_the_exact_gaussian_and_written_as_gray_float() {
    let dir = tempfile::tempdir().unwrap();
    let gray = samples(1);
    let input = dir.path().join("gray.tif");
    write(&input, std::slice::from_ref(&gray), 1);
    let rgb_in = dir.path().join("rgb.tif");
    let rgb: Vec<f32> = gray.iter().flat_map(|&g| [g, g, g]).collect();
    write(&rgb_in, &[rgb], 3);
    for device in ["rust", "auto"] {
        let out = dir.path().join(format!("out-{device}.tif"));
        let json = blur(&input, &out, &["-s", "2.5", "--device", device]);
        assert!(json.contains("\"color\": \"L32F\""), "{json}");
        let written = read(&out);
        assert_eq!(written.len(), 1);
        let (v, spp) = &written[0];
        assert_eq!((*spp, v.len()), (1, W * H));
        // The exact Gaussian, sampled, with clamped edges; the range is 4.5.
        let f64s: Vec<f64> = gray.iter().map(|&g| g as f64).collect();
        let exact = exact_along(&exact_along(&f64s, [1, H, W], 1, 2.5), [1, H, W], 2, 2.5);
        let worst = v
            .iter()
            .zip(&exact)
            .map(|(a, b)| (*a as f64 - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-3 * 4.5, "{device}: {worst}");
        // The same samples as RGB with three equal channels give the same gray, bit for bit.
        let rgb_out = dir.path().join(format!("rgb-{device}.tif"));
        blur(&rgb_in, &rgb_out, &["-s", "2.5", "--device", device]);
        let (rgb, _) = &read(&rgb_out)[0];
        let red: Vec<f32> = rgb.chunks_exact(3).map(|p| p[0]).collect();
        assert_eq!(&red, v, "{device}");
    }
}

#[test]
fn gray_and_alpha_float_keeps_its_alpha_and_blurs_as_rgba_float_does() {
    let dir = tempfile::tempdir().unwrap();
    let (gray, alpha) = (samples(2), noise(W, H, 1, 3).data);
    let ga: Vec<f32> = gray
        .iter()
        .zip(&alpha)
        .flat_map(|(&g, &a)| [g, a])
        .collect();
    let input = dir.path().join("ga.tif");
    write(&input, &[ga], 2);
    assert_eq!(read(&input)[0].1, 2, "gray and alpha in");
    let out = dir.path().join("out.tif");
    let json = blur(&input, &out, &["-s", "3"]);
    assert!(json.contains("\"color\": \"La32F\""), "{json}");
    let (v, spp) = read(&out).remove(0);
    assert_eq!((spp, v.len()), (2, 2 * W * H));
    // RGBA float with three equal colour channels: the same gray and alpha.
    let rgba: Vec<f32> = gray
        .iter()
        .zip(&alpha)
        .flat_map(|(&g, &a)| [g, g, g, a])
        .collect();
    let rgba_in = dir.path().join("rgba.tif");
    let mut e = TiffEncoder::new(std::fs::File::create(&rgba_in).unwrap()).unwrap();
    e.write_image::<colortype::RGBA32Float>(W as u32, H as u32, &rgba)
        .unwrap();
    let rgba_out = dir.path().join("rgba-out.tif");
    blur(&rgba_in, &rgba_out, &["-s", "3"]);
    let (back, _) = read(&rgba_out).remove(0);
    let expected: Vec<f32> = back.chunks_exact(4).flat_map(|p| [p[0], p[3]]).collect();
    assert_eq!(v, expected);
}

#[test]
fn gray_float_into_formats_without_float_is_gray_of_their_depth() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("gray.tif");
    write(&input, &[samples(4)], 1);
    for (ext, color) in [("png", "L16"), ("jpg", "L8")] {
        let out = dir.path().join(format!("out.{ext}"));
        let json = blur(&input, &out, &["-s", "2"]);
        assert!(
            json.contains(&format!("cannot hold L32F: wrote {color}")),
            "{json}"
        );
        assert!(json.contains(&format!("\"color\": \"{color}\"")), "{json}");
        let back = image::open(&out).unwrap();
        assert_eq!(format!("{:?}", back.color()), color);
    }
}

#[test]
fn a_gray_float_stack_keeps_every_page_and_blurs_as_a_volume() {
    let dir = tempfile::tempdir().unwrap();
    let pages: Vec<Vec<f32>> = (0..5).map(samples).collect();
    let input = dir.path().join("stack.tif");
    write(&input, &pages, 1);
    let out = dir.path().join("pages.tif");
    let json = blur(&input, &out, &["-s", "2"]);
    assert!(json.contains("\"pages\": 5"), "{json}");
    let written = read(&out);
    assert_eq!(written.len(), 5);
    assert!(written.iter().all(|(v, spp)| *spp == 1 && v.len() == W * H));
    // The volume, against the exact 3-D Gaussian; the range is 4.5.
    let volume = dir.path().join("volume.tif");
    blur(&input, &volume, &["-s", "2", "--sigma-z", "1.5"]);
    let got: Vec<f32> = read(&volume).into_iter().flat_map(|(v, _)| v).collect();
    let f64s: Vec<f64> = pages.iter().flatten().map(|&g| g as f64).collect();
    let shape = [5, H, W];
    let exact = exact_along(
        &exact_along(&exact_along(&f64s, shape, 0, 1.5), shape, 1, 2.0),
        shape,
        2,
        2.0,
    );
    let worst = got
        .iter()
        .zip(&exact)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-3 * 4.5, "{worst}");
}

#[test]
fn gray_float_is_not_streamed_and_says_so_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("gray.tif");
    write(&input, &[samples(5)], 1);
    let out = dir.path().join("out.tif");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "2", "--engine", "strips"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("gray float").and(predicate::str::contains("gray.tif")));
    assert!(!out.exists());
}
