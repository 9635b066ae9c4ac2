//! IPTC-IIM records (keywords, caption, credit) carried from input to output: a JPEG's
//! Photoshop resource 0x0404 in APP13 and a TIFF's tag 33723, both ways and on every path
//! (YCbCr planes, RGB, the strip engine, TIFF pages); a note where the output holds none;
//! `--strip` and `--keep` honoured by every engine.

use crate::common::{fixture, gblur};
use std::path::Path;
use tiff::decoder::Decoder;
use tiff::tags::Tag;

/// IPTC-IIM datasets: the record version and one keyword per word (record 2, datasets 0 and
/// 25).
fn records(words: &[&str]) -> Vec<u8> {
    let mut out = vec![0x1C, 2, 0, 0, 2, 0, 4];
    for w in words {
        out.extend_from_slice(&[0x1C, 2, 25, 0, w.len() as u8]);
        out.extend_from_slice(w.as_bytes());
    }
    out
}

/// An APP13 segment of Photoshop resources holding `records` as resource 0x0404.
fn iptc_segment(records: &[u8]) -> Vec<u8> {
    let mut body = b"Photoshop 3.0\0".to_vec();
    body.extend_from_slice(b"8BIM\x04\x04\0\0");
    body.extend_from_slice(&(records.len() as u32).to_be_bytes());
    body.extend_from_slice(records);
    if records.len() % 2 == 1 {
        body.push(0);
    }
    let mut segment = vec![0xFF, 0xED];
    segment.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    segment.extend_from_slice(&body);
    segment
}

/// An XMP APP1 segment naming a creator.
fn xmp_segment() -> Vec<u8> {
    let packet = br#"<x:xmpmet xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:dc="http://purl.org/dc/elements/1.1/" dc:source="gblur-test"/></rdf:RDF></x:xmpmet>"#;
    let mut body = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
    body.extend_from_slice(packet);
    let mut segment = vec![0xFF, 0xE1];
    segment.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    segment.extend_from_slice(&body);
    segment
}

/// An upright 48 × 32 JPEG (the strip engine streams no turned image) with XMP and `records`.
fn jpeg_with(records: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    image::RgbImage::from_fn(48, 32, |x, y| {
        image::Rgb([(x * 5) as u8, (y * 7) as u8, 90])
    })
    .write_to(
        &mut std::io::Cursor::new(&mut plain),
        image::ImageFormat::Jpeg,
    )
    .unwrap();
    let mut jpeg = plain[..2].to_vec();
    jpeg.extend_from_slice(&xmp_segment());
    jpeg.extend_from_slice(&iptc_segment(records));
    jpeg.extend_from_slice(&plain[2..]);
    jpeg
}

/// A JPEG's IPTC records: resource 0x0404 of its first APP13 segment.
fn jpeg_records(jpeg: &[u8]) -> Option<Vec<u8>> {
    let at = jpeg.windows(2).position(|w| w == [0xFF, 0xED])?;
    let body = &jpeg[at + 4..];
    let r = body.windows(6).position(|w| w == b"8BIM\x04\x04")? + 8;
    let size = u32::from_be_bytes(body[r..r + 4].try_into().unwrap()) as usize;
    Some(body[r + 4..r + 4 + size].to_vec())
}

/// A TIFF's tag 33723 on page `page`, as the bytes gblur's little-endian files hold.
fn tiff_records(path: &Path, page: usize) -> Option<Vec<u8>> {
    let mut d = Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
    for _ in 0..page {
        d.next_image().unwrap();
    }
    let value = d.find_tag(Tag::Unknown(33723)).unwrap()?;
    Some(
        value
            .into_u32_vec()
            .unwrap()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
    )
}

/// Blurs `input` into `out` with `extra`; returns the report's notes.
fn blur(input: &Path, out: &Path, extra: &[&str]) -> String {
    let json = gblur()
        .arg(input)
        .arg(out)
        .args(["-s", "3", "--json"])
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&json).unwrap();
    report["notes"].to_string()
}

const LOST: &str = "holds no IPTC-IIM records (keywords, caption, credit)";

#[test]
fn iptc_is_kept_in_jpeg_on_every_path_and_named_where_it_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let iptc = records(&["holiday", "beach"]);
    let input = dir.path().join("in.jpg");
    std::fs::write(&input, jpeg_with(&iptc)).unwrap();
    for (out, extra) in [
        ("planes.jpg", &[][..]),
        ("rgb.jpg", &["--jpeg-path", "rgb"][..]),
        ("strips.jpg", &["--engine", "strips"][..]),
    ] {
        let out = dir.path().join(out);
        let notes = blur(&input, &out, extra);
        assert!(!notes.contains("IPTC"), "{notes}");
        let written = std::fs::read(&out).unwrap();
        assert_eq!(
            jpeg_records(&written),
            Some(iptc.clone()),
            "{}",
            out.display()
        );
    }
    for (out, extra) in [
        ("out.png", &[][..]),
        ("strips.png", &["--engine", "strips"][..]),
    ] {
        let notes = blur(&input, &dir.path().join(out), extra);
        assert!(notes.contains(&format!("Png {LOST}")), "{out}: {notes}");
    }
    let notes = blur(&input, &dir.path().join("out.bmp"), &[]);
    assert!(
        notes.contains("cannot carry the input's XMP or IPTC"),
        "{notes}"
    );
    // A file without IPTC has no note about it.
    let notes = blur(
        &fixture("tests/fixtures/phone_exif_xmp.jpg"),
        &dir.path().join("none.png"),
        &[],
    );
    assert!(!notes.contains("IPTC"), "no IPTC, no note: {notes}");
}

#[test]
fn iptc_goes_from_jpeg_to_tiff_and_back_and_onto_every_page() {
    let dir = tempfile::tempdir().unwrap();
    // An odd length: the TIFF tag's LONGs are padded, and the padding is not read back.
    let iptc = records(&["harbour", "sea"]);
    assert_eq!(iptc.len() % 4, 3);
    let input = dir.path().join("in.jpg");
    std::fs::write(&input, jpeg_with(&iptc)).unwrap();
    let tif = dir.path().join("out.tif");
    blur(&input, &tif, &[]);
    let held = tiff_records(&tif, 0).expect("tag 33723");
    assert_eq!(&held[..iptc.len()], &iptc[..]);
    assert!(held[iptc.len()..].iter().all(|&b| b == 0) && held.len().is_multiple_of(4));
    let back = dir.path().join("back.jpg");
    assert!(!blur(&tif, &back, &[]).contains("IPTC"));
    assert_eq!(
        jpeg_records(&std::fs::read(&back).unwrap()),
        Some(iptc.clone())
    );
    // A stack's pages each keep their own (the same here: two pages of one source).
    let stack = dir.path().join("stack.tif");
    let one = image::open(&input).unwrap().to_rgb8();
    let mut e = tiff::encoder::TiffEncoder::new(std::fs::File::create(&stack).unwrap()).unwrap();
    for _ in 0..2 {
        let mut page = e
            .new_image::<tiff::encoder::colortype::RGB8>(48, 32)
            .unwrap();
        let padded: Vec<u32> = {
            let mut b = iptc.clone();
            b.resize(iptc.len().next_multiple_of(4), 0);
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        page.encoder()
            .write_tag(Tag::Unknown(33723), &padded[..])
            .unwrap();
        page.write_data(one.as_raw()).unwrap();
    }
    let pages = dir.path().join("pages.tif");
    blur(&stack, &pages, &[]);
    for page in 0..2 {
        let held = tiff_records(&pages, page).expect("tag 33723 on every page");
        assert_eq!(&held[..iptc.len()], &iptc[..], "page {page}");
    }
}

#[test]
fn strip_and_keep_leave_iptc_and_every_engine_honours_them() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jpg");
    std::fs::write(&input, jpeg_with(&records(&["private"]))).unwrap();
    for engine in ["whole", "strips"] {
        let args = ["--engine", engine];
        let stripped = dir.path().join(format!("stripped-{engine}.jpg"));
        let notes = blur(&input, &stripped, &[&args[..], &["--strip"]].concat());
        assert!(!notes.contains("IPTC"), "{notes}");
        let bytes = std::fs::read(&stripped).unwrap();
        assert_eq!(jpeg_records(&bytes), None, "{engine}");
        let xmp = bytes.windows(10).any(|w| w == b"gblur-test");
        assert!(!xmp, "{engine}: --strip leaves no XMP");
        let kept = dir.path().join(format!("xmp-{engine}.jpg"));
        blur(&input, &kept, &[&args[..], &["--keep", "xmp"]].concat());
        let bytes = std::fs::read(&kept).unwrap();
        assert_eq!(
            jpeg_records(&bytes),
            None,
            "{engine}: --keep xmp leaves IPTC out"
        );
        assert!(
            bytes.windows(10).any(|w| w == b"gblur-test"),
            "{engine}: XMP kept"
        );
        let iptc = dir.path().join(format!("iptc-{engine}.jpg"));
        blur(&input, &iptc, &[&args[..], &["--keep", "iptc"]].concat());
        let bytes = std::fs::read(&iptc).unwrap();
        assert!(jpeg_records(&bytes).is_some(), "{engine}: --keep iptc");
        assert!(!bytes.windows(10).any(|w| w == b"gblur-test"), "{engine}");
    }
}
