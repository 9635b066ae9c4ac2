//! Multi-page TIFF: every page blurred and written with its own tags, `--page N` taking one
//! page into any format, a format of one image refused with a line that names `--page`, and
//! `--sigma-z` blurring a stack as a volume, against the exactly sampled 3-D Gaussian.

use crate::common::gblur;
use predicates::prelude::*;
use std::path::Path;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::encoder::{colortype, TiffEncoder};
use tiff::tags::Tag;

/// A stack of 16-bit gray pages of `w`×`h`, each with its description where given.
fn stack(path: &Path, (w, h): (u32, u32), pages: &[(Vec<u16>, Option<&str>)]) {
    let mut e = TiffEncoder::new(std::fs::File::create(path).unwrap()).unwrap();
    for (samples, description) in pages {
        let mut image = e.new_image::<colortype::Gray16>(w, h).unwrap();
        if let Some(d) = description {
            image
                .encoder()
                .write_tag(Tag::ImageDescription, *d)
                .unwrap();
        }
        image.write_data(samples).unwrap();
    }
}

/// Page `seed`'s samples: a smooth ramp with a bright square and some noise.
fn page(w: usize, h: usize, seed: u64) -> Vec<u16> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..w * h)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (x, y) = (i % w, i / w);
            let square = (x / 8 + y / 8 + seed as usize).is_multiple_of(3);
            let v = 4000.0 + 300.0 * x as f64 + if square { 20000.0 } else { 0.0 };
            (v + (state % 2000) as f64) as u16
        })
        .collect()
}

/// Every page of a TIFF: its 16-bit samples and its description.
fn pages(path: &Path) -> Vec<(Vec<u16>, Option<String>)> {
    let mut d = Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    let mut out = Vec::new();
    loop {
        let description = d.get_tag_ascii_string(Tag::ImageDescription).ok();
        match d.read_image().unwrap() {
            DecodingResult::U16(v) => out.push((v, description)),
            other => panic!("{other:?}"),
        }
        if !d.more_images() {
            return out;
        }
        d.next_image().unwrap();
    }
}

#[test]
fn every_page_is_blurred_as_its_own_image_and_keeps_its_description() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (40, 30);
    let input = dir.path().join("stack.tif");
    let described = [Some("first page"), None, Some("third page"), None];
    let source: Vec<_> = (0..4)
        .map(|i| (page(w, h, i as u64 + 1), described[i]))
        .collect();
    stack(&input, (w as u32, h as u32), &source);
    let out = dir.path().join("out.tif");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "2", "--json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"pages\": 4"));
    let written = pages(&out);
    assert_eq!(written.len(), 4);
    for (i, (samples, description)) in written.iter().enumerate() {
        // Page i, taken alone by --page, is blurred to the same samples.
        let alone = dir.path().join(format!("page{i}.tif"));
        gblur()
            .arg(&input)
            .arg(&alone)
            .args(["-s", "2", "-q", "--page", &i.to_string()])
            .assert()
            .success();
        let single = pages(&alone);
        assert_eq!(single.len(), 1, "--page {i} writes one page");
        assert_eq!(&single[0].0, samples, "page {i}");
        assert_ne!(samples, &source[i].0, "page {i} is blurred");
        assert_eq!(
            description.as_deref(),
            described[i],
            "page {i}'s description"
        );
    }
}

#[test]
fn a_format_of_one_image_names_page_and_page_takes_one_into_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stack.tif");
    let source: Vec<_> = (0..3).map(|i| (page(16, 12, i + 1), None)).collect();
    stack(&input, (16, 12), &source);
    let png = dir.path().join("out.png");
    gblur()
        .arg(&input)
        .arg(&png)
        .args(["-s", "1"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("3 pages").and(predicate::str::contains("--page N (0 to 2)")),
        );
    assert!(!png.exists(), "nothing written");
    gblur()
        .arg(&input)
        .arg(&png)
        .args(["-s", "1", "-q", "--page", "2"])
        .assert()
        .success();
    let decoded = image::open(&png).unwrap().into_luma16();
    assert_eq!(decoded.dimensions(), (16, 12));
    for (args, says) in [
        (vec!["--page", "3"], "holds 3 pages"),
        (vec!["--page", "3", "--sigma-z", "1"], "cannot be used with"),
    ] {
        gblur()
            .arg(&input)
            .arg(dir.path().join("x.tif"))
            .args(["-s", "1"])
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    // Not a stack: --page 0 is the image itself; --sigma-z and other pages are refused.
    let single = dir.path().join("one.tif");
    stack(&single, (16, 12), &source[..1]);
    gblur()
        .arg(&single)
        .arg(dir.path().join("one-out.tif"))
        .args(["-s", "1", "-q", "--page", "0"])
        .assert()
        .success();
    gblur()
        .arg(&single)
        .arg(dir.path().join("x.tif"))
        .args(["-s", "1", "--sigma-z", "2"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("holds one page"));
    gblur()
        .arg(&png)
        .arg(dir.path().join("x.png"))
        .args(["-s", "1", "--page", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a TIFF"));
}

/// The exactly sampled Gaussian of `sigma` (radius 6 sigma), nearest (clamp) edges, along
/// `axis` of a (z, y, x) volume in f64.
pub(crate) fn exact_along(v: &[f64], shape: [usize; 3], axis: usize, sigma: f64) -> Vec<f64> {
    let r = (6.0 * sigma).ceil() as isize;
    let taps: Vec<f64> = (-r..=r)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let sum: f64 = taps.iter().sum();
    let strides = [shape[1] * shape[2], shape[2], 1];
    let mut out = vec![0.0; v.len()];
    for (i, o) in out.iter_mut().enumerate() {
        let at = (i / strides[axis]) % shape[axis];
        *o = taps
            .iter()
            .enumerate()
            .map(|(t, w)| {
                let j = (at as isize + t as isize - r).clamp(0, shape[axis] as isize - 1) as usize;
                w * v[i - at * strides[axis] + j * strides[axis]]
            })
            .sum::<f64>()
            / sum;
    }
    out
}

#[test]
fn sigma_z_blurs_the_stack_as_a_volume_within_1e_3_of_the_exact_gaussian() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h, n) = (36, 28, 9);
    let input = dir.path().join("stack.tif");
    let source: Vec<_> = (0..n)
        .map(|i| (page(w, h, i as u64 * 7 + 3), (i == 0).then_some("z-stack")))
        .collect();
    stack(&input, (w as u32, h as u32), &source);
    let out = dir.path().join("volume.tif");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "2.5", "--sigma-z", "2", "-q"])
        .assert()
        .success();
    let mut volume: Vec<f64> = source
        .iter()
        .flat_map(|(p, _)| p.iter().map(|&v| v as f64))
        .collect();
    let shape = [n, h, w];
    for (axis, sigma) in [(0, 2.0), (1, 2.5), (2, 2.5)] {
        volume = exact_along(&volume, shape, axis, sigma);
    }
    let written = pages(&out);
    assert_eq!(written.len(), n, "every page kept");
    assert_eq!(written[0].1.as_deref(), Some("z-stack"));
    let got: Vec<f64> = written
        .iter()
        .flat_map(|(p, _)| p.iter().map(|&v| v as f64))
        .collect();
    let (lo, hi) = volume
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    let worst = got
        .iter()
        .zip(&volume)
        .map(|(g, e)| (g - e).abs())
        .fold(0.0, f64::max);
    assert!(
        worst <= 1e-3 * (hi - lo),
        "worst error {worst} levels, range {}",
        hi - lo
    );
    // The z blur is real: page 4 differs from its own 2-D blur.
    let flat = dir.path().join("flat.tif");
    gblur()
        .arg(&input)
        .arg(&flat)
        .args(["-s", "2.5", "-q"])
        .assert()
        .success();
    assert_ne!(pages(&flat)[4].0, written[4].0);
}

#[test]
fn sigma_z_refuses_pages_of_different_sizes_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mixed.tif");
    let mut e = TiffEncoder::new(std::fs::File::create(&input).unwrap()).unwrap();
    e.write_image::<colortype::Gray8>(8, 8, &[10; 64]).unwrap();
    e.write_image::<colortype::Gray8>(4, 4, &[20; 16]).unwrap();
    drop(e);
    let out = dir.path().join("out.tif");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "1", "--sigma-z", "1"])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("page 1 is 4x4").and(predicate::str::contains("\n").count(1)),
        );
    assert!(!out.exists());
    // Blurred page by page, the two sizes are kept.
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "1", "-q"])
        .assert()
        .success();
    let mut d = Decoder::new(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(d.dimensions().unwrap(), (8, 8));
    d.next_image().unwrap();
    assert_eq!(d.dimensions().unwrap(), (4, 4));
}

/// A TIFF of 16-bit gray pages of `w`×`h`, each followed by its overviews as GDAL and libtiff
/// write them: half size with NewSubfileType 1 (a LONG), quarter size with the older
/// SubfileType 2 (a SHORT), both white.
fn with_overviews(path: &Path, (w, h): (u32, u32), pages: &[Vec<u16>]) {
    let mut e = TiffEncoder::new(std::fs::File::create(path).unwrap()).unwrap();
    for samples in pages {
        e.write_image::<colortype::Gray16>(w, h, samples).unwrap();
        let (hw, hh) = (w / 2, h / 2);
        let mut half = e.new_image::<colortype::Gray16>(hw, hh).unwrap();
        half.encoder().write_tag(Tag::NewSubfileType, 1u32).unwrap();
        half.write_data(&vec![u16::MAX; (hw * hh) as usize])
            .unwrap();
        let (qw, qh) = (w / 4, h / 4);
        let mut quarter = e.new_image::<colortype::Gray16>(qw, qh).unwrap();
        quarter.encoder().write_tag(Tag::SubfileType, 2u16).unwrap();
        quarter
            .write_data(&vec![u16::MAX; (qw * qh) as usize])
            .unwrap();
    }
}

/// Overviews (reduced-resolution images of a page) are no pages: a file of one page and its
/// overviews is one image, blurred into any format by either engine as the page alone is,
/// with a note that the overviews were not kept; a stack keeps its full-resolution pages.
#[test]
fn overviews_are_no_pages_and_are_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    let (w, h) = (32u32, 24u32);
    let first = page(w as usize, h as usize, 5);
    with_overviews(&d("overviews.tif"), (w, h), std::slice::from_ref(&first));
    stack(&d("alone.tif"), (w, h), &[(first.clone(), None)]);
    for engine in ["whole", "strips"] {
        let alone = d(&format!("alone-{engine}.tif"));
        gblur()
            .arg(d("alone.tif"))
            .arg(&alone)
            .args(["-s", "2", "-q", "--engine", engine])
            .assert()
            .success();
        let out = d(&format!("out-{engine}.tif"));
        gblur()
            .arg(d("overviews.tif"))
            .arg(&out)
            .args(["-s", "2", "--json", "--engine", engine])
            .assert()
            .success()
            .stdout(
                predicate::str::contains("2 reduced-resolution images (overviews)")
                    .and(predicate::str::contains("not kept")),
            );
        let (got, want) = (pages(&out), pages(&alone));
        assert_eq!(got.len(), 1, "{engine}: one page, no overviews");
        assert_eq!(got[0].0, want[0].0, "{engine}: blurred as the page alone");
    }
    // Into a format of one image, as the page alone.
    gblur()
        .arg(d("overviews.tif"))
        .arg(d("out.png"))
        .args(["-s", "2", "-q", "--engine", "whole"])
        .assert()
        .success();
    let png = image::open(d("out.png")).unwrap().into_luma16();
    assert_eq!(png.dimensions(), (w, h));
    assert_eq!(png.as_raw(), &pages(&d("alone-whole.tif"))[0].0);
    // A stack whose pages have overviews: two pages.
    let second = page(w as usize, h as usize, 6);
    with_overviews(&d("stack.tif"), (w, h), &[first, second]);
    gblur()
        .arg(d("stack.tif"))
        .arg(d("stack-out.tif"))
        .args(["-s", "2", "--json"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("\"pages\": 2").and(predicate::str::contains(
                "4 reduced-resolution images (overviews)",
            )),
        );
    let written = pages(&d("stack-out.tif"));
    assert_eq!(written.len(), 2);
    for (i, (samples, _)) in written.iter().enumerate() {
        let alone = d(&format!("stack-page{i}.tif"));
        gblur()
            .arg(d("stack.tif"))
            .arg(&alone)
            .args(["-s", "2", "-q", "--page", &i.to_string()])
            .assert()
            .success();
        assert_eq!(&pages(&alone)[0].0, samples, "page {i}");
    }
    gblur()
        .arg(d("stack.tif"))
        .arg(d("x.png"))
        .args(["-s", "2"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("2 pages").and(predicate::str::contains("--page N (0 to 1)")),
        );
}

/// Each page of a stack is turned by its own Orientation tag, as a one-page TIFF is.
#[test]
fn a_stack_s_pages_are_turned_by_their_orientation() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (6usize, 4usize);
    let input = dir.path().join("turned.tif");
    let sources: Vec<Vec<u16>> = (0..2).map(|i| page(w, h, i + 11)).collect();
    {
        let mut e = TiffEncoder::new(std::fs::File::create(&input).unwrap()).unwrap();
        for samples in &sources {
            let mut image = e
                .new_image::<colortype::Gray16>(w as u32, h as u32)
                .unwrap();
            image.encoder().write_tag(Tag::Orientation, 6u16).unwrap();
            image.write_data(samples).unwrap();
        }
    }
    let out = dir.path().join("out.tif");
    gblur()
        .arg(&input)
        .arg(&out)
        .args(["-s", "0", "-q"])
        .assert()
        .success();
    let mut d = Decoder::new(std::fs::File::open(&out).unwrap()).unwrap();
    for (i, stored) in sources.iter().enumerate() {
        // Orientation 6: the stored rows turned a quarter clockwise, h wide and w high.
        assert_eq!(d.dimensions().unwrap(), (h as u32, w as u32), "page {i}");
        let upright: Vec<u16> = (0..w)
            .flat_map(|y| (0..h).map(move |x| stored[(h - 1 - x) * w + y]))
            .collect();
        match d.read_image().unwrap() {
            DecodingResult::U16(v) => assert_eq!(v, upright, "page {i}"),
            other => panic!("{other:?}"),
        }
        if i + 1 < sources.len() {
            d.next_image().unwrap();
        }
    }
}

/// `--engine strips` with `--page` is refused for what it is: the page is taken out of the
/// stack in memory, and the strip engine streams a TIFF of one page (not because the input
/// were stdin, a pipe or a device). Without --engine, the page is blurred on the whole-image
/// path.
#[test]
fn engine_strips_with_page_says_the_page_is_taken_out_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("stack.tif");
    let source: Vec<_> = (0..3).map(|i| (page(16, 12, i + 1), None)).collect();
    stack(&input, (16, 12), &source);
    for out in ["one.tif", "one.png"] {
        let out = dir.path().join(out);
        let assert = gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "1", "--page", "1", "--engine", "strips"])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            err.contains("--engine strips: ")
                && err.contains(
                    "holds several pages (3), and --page 1 takes one out of it in memory"
                ),
            "{err}"
        );
        assert!(!err.contains("stdin"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(!out.exists(), "nothing written");
        gblur()
            .arg(&input)
            .arg(&out)
            .args(["-s", "1", "-q", "--page", "1"])
            .assert()
            .success();
    }
}
