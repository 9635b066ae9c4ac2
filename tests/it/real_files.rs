//! Files as real writers make them, read right: every orientation in every container that
//! carries one, associated alpha, BigTIFF, tiled planes, an icon whose mask disagrees with its
//! alpha, damaged JPEG data, a BMP's ICC profile; and a decoder that panics ends in one line.
//! Each file is made here, small, the way the writers that users meet lay it out.

use crate::common;
use common::{fixture, gblur};
use image::metadata::Orientation;
use image::{DynamicImage, ImageDecoder, RgbImage, RgbaImage};
use std::path::Path;

/// An upright picture no turn or flip maps onto itself: a gradient with a bright corner.
fn upright() -> RgbImage {
    RgbImage::from_fn(24, 16, |x, y| {
        let corner = if x < 6 && y < 4 { 120 } else { 0 };
        image::Rgb([(x * 10) as u8 + corner, (y * 15) as u8, ((x + y) * 4) as u8])
    })
}

/// The pixels a camera stores for `upright` shown with orientation `o` (1 to 8): turned the
/// inverse way (6 and 8 are each other's inverse; the others their own).
fn stored(o: u8) -> DynamicImage {
    let inverse = match o {
        6 => 8,
        8 => 6,
        o => o,
    };
    let mut img = DynamicImage::from(upright());
    img.apply_orientation(Orientation::from_exif(inverse).unwrap());
    img
}

/// An EXIF structure (little-endian TIFF) whose first directory holds Orientation `o`.
fn exif_blob(o: u8) -> Vec<u8> {
    let mut b = b"II*\0\x08\0\0\0\x01\0".to_vec();
    b.extend_from_slice(&[0x12, 0x01, 3, 0, 1, 0, 0, 0, o, 0, 0, 0]);
    b.extend_from_slice(&[0, 0, 0, 0]);
    b
}

/// An XMP packet whose only orientation is `tiff:Orientation` = `o`.
fn xmp_packet(o: u8) -> Vec<u8> {
    format!(
        r#"<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="{o}"/></rdf:RDF></x:xmpmeta>"#
    )
    .into_bytes()
}

fn encoded(img: &DynamicImage, format: image::ImageFormat) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A PNG chunk: length, type, data, CRC.
fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut c = (data.len() as u32).to_be_bytes().to_vec();
    c.extend_from_slice(kind);
    c.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    c.extend_from_slice(&crc.finalize().to_be_bytes());
    c
}

/// `png` with `chunk` put just before its first chunk of type `before`.
fn png_with(png: &[u8], chunk: &[u8], before: &[u8; 4]) -> Vec<u8> {
    let mut at = 8;
    while &png[at + 4..at + 8] != before {
        at += 12 + u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
    }
    [&png[..at], chunk, &png[at..]].concat()
}

/// A lossless WebP of `img` in the extended format, with an EXIF chunk holding `exif`.
fn webp_with_exif(img: &DynamicImage, exif: &[u8]) -> Vec<u8> {
    let simple = encoded(img, image::ImageFormat::WebP);
    assert_eq!(&simple[12..16], b"VP8L");
    let vp8l = &simple[12..];
    let mut vp8x = b"VP8X".to_vec();
    vp8x.extend_from_slice(&10u32.to_le_bytes());
    vp8x.extend_from_slice(&[0x08, 0, 0, 0]);
    vp8x.extend_from_slice(&(img.width() - 1).to_le_bytes()[..3]);
    vp8x.extend_from_slice(&(img.height() - 1).to_le_bytes()[..3]);
    let mut chunk = b"EXIF".to_vec();
    chunk.extend_from_slice(&(exif.len() as u32).to_le_bytes());
    chunk.extend_from_slice(exif);
    if exif.len() % 2 == 1 {
        chunk.push(0);
    }
    let body = [&b"WEBP"[..], &vp8x, vp8l, &chunk].concat();
    [&b"RIFF"[..], &(body.len() as u32).to_le_bytes(), &body].concat()
}

/// A JPEG of `img` with an APP1 EXIF segment holding `exif` after its SOI.
fn jpeg_with_exif(img: &DynamicImage, exif: &[u8]) -> Vec<u8> {
    let plain = encoded(img, image::ImageFormat::Jpeg);
    let mut app1 = vec![0xFF, 0xE1];
    app1.extend_from_slice(&((2 + 6 + exif.len()) as u16).to_be_bytes());
    app1.extend_from_slice(b"Exif\0\0");
    app1.extend_from_slice(exif);
    [&plain[..2], &app1, &plain[2..]].concat()
}

/// An 8-bit RGB TIFF of `img` whose own Orientation tag is `o`.
fn tiff_with_orientation(img: &DynamicImage, o: u16) -> Vec<u8> {
    use tiff::encoder::{colortype, TiffEncoder};
    let mut out = std::io::Cursor::new(Vec::new());
    let mut e = TiffEncoder::new(&mut out).unwrap();
    let rgb = img.to_rgb8();
    let mut image = e
        .new_image::<colortype::RGB8>(rgb.width(), rgb.height())
        .unwrap();
    image
        .encoder()
        .write_tag(tiff::tags::Tag::Orientation, o)
        .unwrap();
    image.write_data(rgb.as_raw()).unwrap();
    out.into_inner()
}

/// gblur's output for `input`, at a sigma whose FIR is symmetric (so that it commutes with
/// every turn and flip), decoded.
fn blurred(input: &Path, out: &Path) -> DynamicImage {
    gblur()
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "0.6", "--method", "fir", "-q"])
        .assert()
        .success();
    image::open(out).unwrap()
}

/// The largest difference between two 8-bit RGB pictures, and their mean difference.
fn apart(a: &DynamicImage, b: &DynamicImage) -> (u8, f64) {
    assert_eq!(
        (a.width(), a.height()),
        (b.width(), b.height()),
        "sizes differ"
    );
    let (a, b) = (a.to_rgb8(), b.to_rgb8());
    let diffs: Vec<u8> = a
        .iter()
        .zip(b.iter())
        .map(|(x, y)| x.abs_diff(*y))
        .collect();
    let mean = diffs.iter().map(|&d| d as f64).sum::<f64>() / diffs.len() as f64;
    (*diffs.iter().max().unwrap(), mean)
}

/// Every orientation, in every container that carries one, comes out upright and says so:
/// JPEG (APP1), PNG (eXIf before and after the pixels), WebP (an EXIF chunk with JPEG's
/// `Exif\0\0` prefix, as many tools write it), TIFF (its own tag) and XMP alone (PNG iTXt).
#[test]
fn every_orientation_in_every_container_comes_out_upright() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    DynamicImage::from(upright())
        .save(d("upright.png"))
        .unwrap();
    let reference = blurred(&d("upright.png"), &d("reference.png"));
    DynamicImage::from(upright())
        .save(d("upright.jpg"))
        .unwrap();
    let jpeg_reference = blurred(&d("upright.jpg"), &d("jpeg-reference.png"));
    for o in 1..=8u8 {
        let img = stored(o);
        let png = encoded(&img, image::ImageFormat::Png);
        let exif = exif_blob(o);
        let files: Vec<(&str, Vec<u8>)> = vec![
            (
                "exif-before-idat.png",
                png_with(&png, &png_chunk(b"eXIf", &exif), b"IDAT"),
            ),
            (
                "exif-after-idat.png",
                png_with(&png, &png_chunk(b"eXIf", &exif), b"IEND"),
            ),
            (
                "exif-prefixed.webp",
                webp_with_exif(&img, &[b"Exif\0\0".as_slice(), &exif].concat()),
            ),
            ("exif-bare.webp", webp_with_exif(&img, &exif)),
            ("tag.tif", tiff_with_orientation(&img, o as u16)),
            ("xmp-only.png", {
                let mut itxt = b"XML:com.adobe.xmp\0\0\0\0\0".to_vec();
                itxt.extend_from_slice(&xmp_packet(o));
                png_with(&png, &png_chunk(b"iTXt", &itxt), b"IDAT")
            }),
            ("exif.jpg", jpeg_with_exif(&img, &exif)),
        ];
        for (name, bytes) in files {
            let input = d(&format!("o{o}-{name}"));
            std::fs::write(&input, bytes).unwrap();
            let out = d(&format!("o{o}-{name}.out.png"));
            let got = blurred(&input, &out);
            let (worst, mean) = match name.ends_with(".jpg") {
                // A JPEG's blocks fall elsewhere once turned: near, not equal.
                true => {
                    let (worst, mean) = apart(&got, &jpeg_reference);
                    assert!(mean < 3.0, "orientation {o}, {name}: mean {mean}");
                    (worst.min(1), mean)
                }
                false => apart(&got, &reference),
            };
            assert!(
                worst <= 1,
                "orientation {o}, {name}: {worst} steps (mean {mean})"
            );
            // Written upright, it says so: no orientation in its EXIF or XMP.
            let file = std::io::BufReader::new(std::fs::File::open(&out).unwrap());
            let mut decoder = image::codecs::png::PngDecoder::new(file).unwrap();
            assert_eq!(decoder.orientation().unwrap(), Orientation::NoTransforms);
            if let Some(xmp) = decoder.xmp_metadata().unwrap() {
                let xmp = String::from_utf8(xmp).unwrap();
                assert!(xmp.contains(r#"tiff:Orientation="1""#), "{xmp}");
            }
        }
    }
}

/// A TIFF's alpha as its ExtraSamples says: associated (premultiplied) colour is divided out,
/// at 8 and 16 bits, so it blurs as the same picture with straight alpha does; and the TIFF
/// gblur writes declares unassociated alpha, with no Predictor tag on uncompressed data.
#[test]
fn associated_alpha_in_tiff_is_read_as_premultiplied_and_written_as_straight() {
    use tiff::encoder::{colortype, TiffEncoder};
    use tiff::tags::Tag;
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    let straight = RgbaImage::from_fn(20, 12, |x, y| {
        image::Rgba([
            200,
            (x * 12) as u8,
            (y * 20) as u8,
            ((x * 13 + y * 7) % 256) as u8,
        ])
    });
    let premultiply = |c: u8, a: u8| ((c as u32 * a as u32 + 127) / 255) as u8;
    let associated: Vec<u8> = straight
        .pixels()
        .flat_map(|p| {
            let [r, g, b, a] = p.0;
            [premultiply(r, a), premultiply(g, a), premultiply(b, a), a]
        })
        .collect();
    for sixteen in [false, true] {
        let write = |path: &Path, samples: &[u8], extra: u16| {
            let file = std::fs::File::create(path).unwrap();
            let mut e = TiffEncoder::new(file).unwrap();
            if sixteen {
                let wide: Vec<u16> = samples.iter().map(|&v| v as u16 * 257).collect();
                let mut image = e.new_image::<colortype::RGBA16>(20, 12).unwrap();
                image.encoder().write_tag(Tag::ExtraSamples, extra).unwrap();
                image.write_data(&wide).unwrap();
            } else {
                let mut image = e.new_image::<colortype::RGBA8>(20, 12).unwrap();
                image.encoder().write_tag(Tag::ExtraSamples, extra).unwrap();
                image.write_data(samples).unwrap();
            }
        };
        write(&d("straight.tif"), straight.as_raw(), 2);
        write(&d("associated.tif"), &associated, 1);
        for input in ["straight.tif", "associated.tif"] {
            gblur()
                .args([d(input).as_os_str(), d(&format!("{input}.tif")).as_os_str()])
                .args(["--sigma", "1.5", "-q"])
                .assert()
                .success();
        }
        let read = |name: &str| {
            let mut dec =
                tiff::decoder::Decoder::new(std::fs::File::open(d(name)).unwrap()).unwrap();
            assert_eq!(dec.get_tag_u32(Tag::ExtraSamples).unwrap(), 2, "{name}");
            assert!(dec.find_tag(Tag::Predictor).unwrap().is_none(), "{name}");
            match dec.read_image().unwrap() {
                tiff::decoder::DecodingResult::U8(v) => v.iter().map(|&s| s as u16 * 257).collect(),
                tiff::decoder::DecodingResult::U16(v) => v,
                other => panic!("{other:?}"),
            }
        };
        let (a, b) = (read("straight.tif.tif"), read("associated.tif.tif"));
        // Where alpha is under 10 the rounding of the premultiplied colour is coarse.
        let worst = a
            .chunks_exact(4)
            .zip(b.chunks_exact(4))
            .filter(|(p, _)| p[3] >= 10 * 257)
            .flat_map(|(p, q)| p.iter().zip(q).map(|(x, y)| x.abs_diff(*y)))
            .max()
            .unwrap();
        assert!(worst <= 3 * 257, "16-bit: {sixteen}: {worst}");
    }
}

/// Gray with alpha stays gray with alpha in a TIFF, and reads back as it was written.
#[test]
fn gray_with_alpha_stays_two_samples_in_tiff() {
    let dir = tempfile::tempdir().unwrap();
    let (input, out) = (dir.path().join("la.png"), dir.path().join("la.tif"));
    let la =
        image::GrayAlphaImage::from_fn(9, 7, |x, y| image::LumaA([(x * 25) as u8, (y * 30) as u8]));
    la.save(&input).unwrap();
    let json = gblur()
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "1", "--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(report["output"]["color"], "La8", "{report}");
    assert!(report["notes"].as_array().unwrap().is_empty(), "{report}");
    let mut dec = tiff::decoder::Decoder::new(std::fs::File::open(&out).unwrap()).unwrap();
    assert_eq!(
        dec.get_tag_u32(tiff::tags::Tag::SamplesPerPixel).unwrap(),
        2
    );
    assert_eq!(dec.get_tag_u32(tiff::tags::Tag::ExtraSamples).unwrap(), 2);
    // gblur reads its own file back.
    gblur()
        .args([out.as_os_str(), dir.path().join("again.png").as_os_str()])
        .args(["--sigma", "1", "-q"])
        .assert()
        .success();
}

/// BigTIFF (`II+\0`), which gblur writes past 4 GiB, is read like a classic TIFF.
#[test]
fn bigtiff_is_read() {
    use tiff::encoder::{colortype, TiffEncoder};
    let dir = tempfile::tempdir().unwrap();
    let img = upright();
    let write = |name: &str, big: bool| {
        let path = dir.path().join(name);
        let file = std::fs::File::create(&path).unwrap();
        match big {
            true => TiffEncoder::new_big(file)
                .unwrap()
                .write_image::<colortype::RGB8>(24, 16, img.as_raw())
                .unwrap(),
            false => TiffEncoder::new(file)
                .unwrap()
                .write_image::<colortype::RGB8>(24, 16, img.as_raw())
                .unwrap(),
        }
        path
    };
    let (big, classic) = (write("big.tif", true), write("classic.tif", false));
    assert_eq!(&std::fs::read(&big).unwrap()[..4], b"II+\0");
    let a = blurred(&big, &dir.path().join("big.png"));
    let b = blurred(&classic, &dir.path().join("classic.png"));
    assert_eq!(apart(&a, &b).0, 0);
}

/// A TIFF of `w` × `h` tiles of `t`, samples in planes of their own (PlanarConfiguration 2),
/// 8 or 16 bits, raw or LZW, as libtiff writes them.
fn planar_tiled_tiff(path: &Path, img: &RgbImage, t: u32, sixteen: bool, lzw: bool) {
    use tiff::encoder::TiffEncoder;
    use tiff::tags::Tag;
    let (w, h) = img.dimensions();
    let mut e = TiffEncoder::new(std::fs::File::create(path).unwrap()).unwrap();
    let mut dir = e.image_directory().unwrap();
    let (across, down) = (w.div_ceil(t), h.div_ceil(t));
    let (mut offsets, mut counts) = (Vec::new(), Vec::new());
    for plane in 0..3 {
        for tile in 0..across * down {
            let (x0, y0) = ((tile % across) * t, (tile / across) * t);
            let mut raw = Vec::new();
            for i in 0..t * t {
                let (x, y) = ((x0 + i % t).min(w - 1), (y0 + i / t).min(h - 1));
                let v = img.get_pixel(x, y).0[plane as usize];
                match sixteen {
                    true => raw.extend_from_slice(&(v as u16 * 257).to_ne_bytes()),
                    false => raw.push(v),
                }
            }
            let data = match lzw {
                true => {
                    let mut packed = Vec::new();
                    weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
                        .into_stream(&mut packed)
                        .encode_all(&raw[..])
                        .status
                        .unwrap();
                    packed
                }
                false => raw,
            };
            offsets.push(dir.write_data(&data[..]).unwrap() as u32);
            counts.push(data.len() as u32);
        }
    }
    let bits = if sixteen { 16u16 } else { 8 };
    dir.write_tag(Tag::ImageWidth, w).unwrap();
    dir.write_tag(Tag::ImageLength, h).unwrap();
    dir.write_tag(Tag::BitsPerSample, &[bits; 3][..]).unwrap();
    dir.write_tag(Tag::Compression, if lzw { 5u16 } else { 1 })
        .unwrap();
    dir.write_tag(Tag::PhotometricInterpretation, 2u16).unwrap();
    dir.write_tag(Tag::SamplesPerPixel, 3u16).unwrap();
    dir.write_tag(Tag::PlanarConfiguration, 2u16).unwrap();
    dir.write_tag(Tag::TileWidth, t).unwrap();
    dir.write_tag(Tag::TileLength, t).unwrap();
    dir.write_tag(Tag::TileOffsets, &offsets[..]).unwrap();
    dir.write_tag(Tag::TileByteCounts, &counts[..]).unwrap();
    dir.finish().unwrap();
}

/// Tiled TIFFs with separate planes, on which the `tiff` crate asserts when asked for the
/// whole image: read a tile at a time, every plane in place.
#[test]
fn tiled_planar_tiffs_are_read_at_8_and_16_bits_raw_and_lzw() {
    let dir = tempfile::tempdir().unwrap();
    let img = RgbImage::from_fn(37, 21, |x, y| {
        image::Rgb([(x * 6) as u8, (y * 12) as u8, ((x * y) % 256) as u8])
    });
    DynamicImage::from(img.clone())
        .save(dir.path().join("chunky.png"))
        .unwrap();
    let reference = blurred(&dir.path().join("chunky.png"), &dir.path().join("ref.png"));
    for sixteen in [false, true] {
        for lzw in [false, true] {
            let input = dir.path().join(format!("planar-{sixteen}-{lzw}.tif"));
            planar_tiled_tiff(&input, &img, 16, sixteen, lzw);
            let got = blurred(&input, &dir.path().join("out.png"));
            assert_eq!(apart(&got, &reference).0, 0, "16-bit {sixteen}, LZW {lzw}");
        }
    }
}

/// A 32-bit icon whose AND mask marks every pixel transparent while its alpha says 128:
/// the alpha wins, as in Windows, Pillow, ImageMagick and vips.
#[test]
fn an_icons_alpha_wins_over_a_conflicting_mask() {
    let dir = tempfile::tempdir().unwrap();
    let mut bmp = Vec::new();
    let mut info = [0u8; 40];
    info[..4].copy_from_slice(&40u32.to_le_bytes());
    info[4..8].copy_from_slice(&4u32.to_le_bytes());
    info[8..12].copy_from_slice(&8u32.to_le_bytes());
    info[12..14].copy_from_slice(&1u16.to_le_bytes());
    info[14..16].copy_from_slice(&32u16.to_le_bytes());
    bmp.extend_from_slice(&info);
    for _ in 0..16 {
        bmp.extend_from_slice(&[40, 80, 160, 128]);
    }
    for _ in 0..4 {
        bmp.extend_from_slice(&[0xF0, 0, 0, 0]);
    }
    let mut ico = vec![0, 0, 1, 0, 1, 0, 4, 4, 0, 0, 1, 0, 32, 0];
    ico.extend_from_slice(&(bmp.len() as u32).to_le_bytes());
    ico.extend_from_slice(&22u32.to_le_bytes());
    ico.extend_from_slice(&bmp);
    let (input, out) = (dir.path().join("icon.ico"), dir.path().join("icon.png"));
    std::fs::write(&input, ico).unwrap();
    gblur()
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "1", "-q"])
        .assert()
        .success();
    let png = image::open(&out).unwrap().to_rgba8();
    assert!(
        png.pixels().all(|p| p.0 == [160, 80, 40, 128]),
        "{:?}",
        png.get_pixel(0, 0)
    );
}

/// A JPEG whose restart interval does not match its data (as in files an editor mangled):
/// gblur decodes what libjpeg recovers, and says so in a note, where a decoder that does not
/// check fills the rows gray or with garbage without a word.
#[test]
fn a_damaged_jpeg_is_recovered_and_said_to_be() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name);
    let img = RgbImage::from_fn(64, 384, |x, y| {
        image::Rgb([(x * 4) as u8, (y / 2) as u8, ((x + y) % 256) as u8])
    });
    // gblur's own JPEG, at sigma 0.001 (the identity): three restart stripes of 128 rows
    // (4:4:4: MCUs of 8 rows, 16 MCU rows a stripe).
    img.save(d("src.png")).unwrap();
    gblur()
        .args([d("src.png").as_os_str(), d("good.jpg").as_os_str()])
        .args([
            "--sigma",
            "0.001",
            "--quality",
            "90",
            "--subsampling",
            "444",
            "-q",
        ])
        .assert()
        .success();
    let good = std::fs::read(d("good.jpg")).unwrap();
    // The restart interval declared half of what the data holds: decoders that find a
    // restart marker where none was due resynchronise; those that do not check fill gray.
    let dri = good.windows(2).position(|w| w == [0xFF, 0xDD]).unwrap();
    let mut bad = good.clone();
    let interval = u16::from_be_bytes([bad[dri + 4], bad[dri + 5]]);
    bad[dri + 4..dri + 6].copy_from_slice(&(interval / 2).to_be_bytes());
    std::fs::write(d("bad.jpg"), &bad).unwrap();
    let json = gblur()
        .args([d("bad.jpg").as_os_str(), d("bad.png").as_os_str()])
        .args(["--sigma", "0.6", "--method", "fir", "--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("damaged") && notes.contains("libjpeg"),
        "{notes}"
    );
    // libjpeg's recovery: the first interval as it was, then what it resynchronises to.
    let got = image::open(d("bad.png")).unwrap().to_rgb8();
    let want = blurred(&d("good.jpg"), &d("good.png")).to_rgb8();
    let top = (0..60)
        .flat_map(|y| (0..64).map(move |x| (x, y)))
        .map(|(x, y)| {
            let (a, b) = (got.get_pixel(x, y).0, want.get_pixel(x, y).0);
            a.iter().zip(b).map(|(p, q)| p.abs_diff(q)).max().unwrap()
        })
        .max()
        .unwrap();
    assert!(top <= 2, "{top}");
}

/// A BMP's embedded ICC profile (BITMAPV5HEADER, PROFILE_EMBEDDED) is carried into a PNG, and
/// a BMP output, which cannot hold one, says so.
#[test]
fn a_bmps_icc_profile_is_kept_or_its_loss_said() {
    let dir = tempfile::tempdir().unwrap();
    let profile = std::fs::read(fixture("tests/fixtures/icc_srgb_16x16.png"))
        .ok()
        .and_then(|png| {
            let d = image::codecs::png::PngDecoder::new(std::io::Cursor::new(png));
            d.ok()?.icc_profile().ok()?
        })
        .expect("the fixture's sRGB profile");
    // A 2 × 2 24-bit BMP with a V5 header and the profile after the pixels.
    let pixels = [0u8, 0, 255, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 0];
    let (info_at, pixels_at) = (14u32, 14 + 124);
    let profile_at = pixels_at + pixels.len() as u32;
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&(profile_at + profile.len() as u32).to_le_bytes());
    bmp.extend_from_slice(&[0; 4]);
    bmp.extend_from_slice(&pixels_at.to_le_bytes());
    let mut v5 = [0u8; 124];
    v5[..4].copy_from_slice(&124u32.to_le_bytes());
    v5[4..8].copy_from_slice(&2u32.to_le_bytes());
    v5[8..12].copy_from_slice(&2u32.to_le_bytes());
    v5[12..14].copy_from_slice(&1u16.to_le_bytes());
    v5[14..16].copy_from_slice(&24u16.to_le_bytes());
    v5[56..60].copy_from_slice(&u32::from_be_bytes(*b"MBED").to_le_bytes());
    v5[112..116].copy_from_slice(&(profile_at - info_at).to_le_bytes());
    v5[116..120].copy_from_slice(&(profile.len() as u32).to_le_bytes());
    bmp.extend_from_slice(&v5);
    bmp.extend_from_slice(&pixels);
    bmp.extend_from_slice(&profile);
    let input = dir.path().join("profiled.bmp");
    std::fs::write(&input, bmp).unwrap();
    let png = dir.path().join("out.png");
    gblur()
        .args([input.as_os_str(), png.as_os_str()])
        .args(["--sigma", "1", "-q"])
        .assert()
        .success();
    let file = std::io::BufReader::new(std::fs::File::open(&png).unwrap());
    let mut decoder = image::codecs::png::PngDecoder::new(file).unwrap();
    assert_eq!(decoder.icc_profile().unwrap(), Some(profile));
    let json = gblur()
        .args([input.as_os_str(), dir.path().join("out.bmp").as_os_str()])
        .args(["--sigma", "1", "--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert!(
        report["notes"].to_string().contains("ICC profile"),
        "{report}"
    );
}

/// A JPEG whose EXIF block is shorter than a TIFF header: the EXIF is left out with a note,
/// the picture blurred.
#[test]
fn a_short_exif_block_is_noted_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let img = DynamicImage::from(upright());
    let (input, out) = (dir.path().join("short.jpg"), dir.path().join("out.jpg"));
    std::fs::write(&input, jpeg_with_exif(&img, b"II*\0\x08\0\0")).unwrap();
    let json = gblur()
        .args([input.as_os_str(), out.as_os_str()])
        .args(["--sigma", "1", "--json", "-q"])
        .assert()
        .success();
    let report: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert!(report["notes"].to_string().contains("EXIF"), "{report}");
}

/// A decoder that panics (a dependency's assertion on a malformed file) ends the command in
/// one line naming the file, exit 1, on the whole-image path and in the strip engine's
/// decoder thread alike; no backtrace, nothing written.
#[test]
fn a_decoders_panic_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.png");
    for engine in ["whole", "strips"] {
        let assert = gblur()
            .env("GBLUR_FAULT", "decoder-panic")
            .env("RUST_BACKTRACE", "1")
            .arg(fixture("samples/coffee.png"))
            .arg(&out)
            .args(["--sigma", "2", "--device", "rust", "--engine", engine])
            .assert()
            .code(1);
        let err = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert!(
            err.contains("coffee.png: cannot decode: the decoder failed"),
            "{engine}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{engine}: {err}");
        assert!(!out.exists());
    }
}

/// A TIFF stack (three pages) keeps every page in the main command and in a batch (in place
/// too); the strip engine, asked for, says that it does not stream one; a batch into PNG takes
/// the first page, and its record says that the others were left.
#[test]
fn a_tiff_stack_keeps_its_pages_in_a_batch_too_and_one_image_formats_take_the_first() {
    use tiff::encoder::{colortype::RGB8, TiffEncoder};
    let dir = tempfile::tempdir().unwrap();
    let stack = dir.path().join("stack.tif");
    {
        let mut e = TiffEncoder::new(std::fs::File::create(&stack).unwrap()).unwrap();
        for page in 0..3u8 {
            let pixels: Vec<u8> = (0..40 * 30 * 3)
                .map(|i| (i as u8).wrapping_mul(page + 1))
                .collect();
            e.write_image::<RGB8>(40, 30, &pixels).unwrap();
        }
    }
    let out = dir.path().join("out.tif");
    let report = gblur()
        .arg(&stack)
        .arg(&out)
        .args(["--sigma", "2", "--json"])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&report.get_output().stdout).unwrap();
    assert_eq!(v["pages"], 3, "{v}");
    let pages = |path: &std::path::Path| {
        let mut d = tiff::decoder::Decoder::new(std::fs::File::open(path).unwrap()).unwrap();
        let mut pages = 1;
        while d.more_images() {
            d.next_image().unwrap();
            assert_eq!(d.dimensions().unwrap(), (40, 30));
            pages += 1;
        }
        pages
    };
    assert_eq!(pages(&out), 3);
    gblur()
        .arg(&stack)
        .arg(&out)
        .args(["--sigma", "2", "--engine", "strips"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("several pages"));
    // A batch keeps every page, byte for byte what the main command writes, and a re-run
    // skips it; into PNG it takes the first page and says so.
    let batch_out = dir.path().join("batch");
    let batch = |out: &std::path::Path, extra: &[&str]| {
        let v = gblur()
            .arg("batch")
            .arg(dir.path())
            .arg(out)
            .args(["--sigma", "2", "--json", "-q", "--include", "stack.tif"])
            .args(extra)
            .assert()
            .success();
        serde_json::from_slice::<serde_json::Value>(&v.get_output().stdout).unwrap()
    };
    let v = batch(&batch_out, &[]);
    assert_eq!(v["files"][0]["outcome"], "blurred", "{v}");
    assert_eq!(pages(&batch_out.join("stack.tif")), 3);
    assert_eq!(
        std::fs::read(batch_out.join("stack.tif")).unwrap(),
        std::fs::read(&out).unwrap()
    );
    let again = batch(&batch_out, &[]);
    assert_eq!(again["files"][0]["outcome"], "skipped-existing", "{again}");
    let v = batch(&dir.path().join("png"), &["--format", "png"]);
    assert!(
        v["files"][0]["notes"].to_string().contains("3 pages"),
        "{v}"
    );
    // In place, the stack keeps its pages.
    let in_place = dir.path().join("in_place");
    std::fs::create_dir(&in_place).unwrap();
    std::fs::copy(&stack, in_place.join("stack.tif")).unwrap();
    gblur()
        .arg("batch")
        .arg(&in_place)
        .arg(&in_place)
        .args(["--in-place", "--sigma", "2", "-q"])
        .assert()
        .success();
    assert_eq!(pages(&in_place.join("stack.tif")), 3);
    assert_eq!(
        std::fs::read(in_place.join("stack.tif")).unwrap(),
        std::fs::read(&out).unwrap()
    );
}
