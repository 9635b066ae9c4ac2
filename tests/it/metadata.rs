//! EXIF, XMP and ICC carried from input to output: every EXIF field compared by tag (read with
//! kamadak-exif, a reader independent of gblur's) after a blur, orientation reset to 1 with
//! the pixels turned, `--strip` and `--keep`, pipes and batch.

use crate::common;
use crate::support::phone;

use common::{fixture, gblur};
use image::ImageDecoder;
use std::collections::BTreeMap;
use std::path::Path;

const ORIENTATION: u16 = 0x0112;
const PIXEL_X: u16 = 0xA002;
const PIXEL_Y: u16 = 0xA003;
const THUMBNAIL_DROPPED: &str = "the input's EXIF thumbnail (unblurred) was dropped";

/// Every EXIF field of a file, by (directory, tag): its value as kamadak-exif shows it.
fn fields(bytes: &[u8]) -> BTreeMap<(String, u16), String> {
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(bytes))
        .expect("the file has EXIF");
    exif.fields()
        .map(|f| {
            let key = (
                format!("{:?}", f.tag.context()) + &f.ifd_num.index().to_string(),
                f.tag.number(),
            );
            // An UNDEFINED value's debug form names its offset, which moves with the layout.
            let value = match &f.value {
                exif::Value::Undefined(bytes, _) => format!("Undefined({bytes:?})"),
                v => format!("{v:?}"),
            };
            (key, value)
        })
        .collect()
}

/// Whether a file has EXIF fields: camera fields or EXIF/GPS directories (a TIFF's own layout
/// fields, which kamadak-exif reads as EXIF too, do not count).
fn has_exif(bytes: &[u8]) -> bool {
    let Ok(exif) = exif::Reader::new().read_from_container(&mut std::io::Cursor::new(bytes)) else {
        return false;
    };
    let any = exif.fields().any(|f| {
        f.tag.context() != exif::Context::Tiff || f.tag == exif::Tag::Make || f.ifd_num.index() > 0
    });
    any
}

/// The EXIF thumbnail's bytes, if any.
fn thumbnail(bytes: &[u8]) -> Option<Vec<u8>> {
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(bytes))
        .ok()?;
    let num = |tag| {
        exif.get_field(tag, exif::In::THUMBNAIL)
            .and_then(|f| f.value.get_uint(0))
    };
    let (at, len) = (
        num(exif::Tag::JPEGInterchangeFormat)?,
        num(exif::Tag::JPEGInterchangeFormatLength)?,
    );
    Some(exif.buf()[at as usize..(at + len) as usize].to_vec())
}

fn decoder_of(bytes: &[u8]) -> Box<dyn ImageDecoder + '_> {
    Box::new(
        image::ImageReader::new(std::io::Cursor::new(bytes))
            .with_guessed_format()
            .unwrap()
            .into_decoder()
            .unwrap(),
    )
}

/// The bytes of a TIFF's first-directory field `tag`, read by kamadak-exif: image 0.25.10's
/// TIFF decoder reads no tag value once a memory limit is set, and never ICC or XMP.
fn tiff_field(bytes: &[u8], tag: u16) -> Option<Vec<u8>> {
    let exif = exif::Reader::new()
        .read_from_container(&mut std::io::Cursor::new(bytes))
        .ok()?;
    let field = exif.get_field(exif::Tag(exif::Context::Tiff, tag), exif::In::PRIMARY)?;
    match &field.value {
        exif::Value::Byte(b) | exif::Value::Undefined(b, _) => Some(b.clone()),
        _ => None,
    }
}

fn is_tiff(bytes: &[u8]) -> bool {
    bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*")
}

fn xmp(bytes: &[u8]) -> Option<String> {
    if is_tiff(bytes) {
        return tiff_field(bytes, 700).map(|x| String::from_utf8(x).unwrap());
    }
    decoder_of(bytes)
        .xmp_metadata()
        .unwrap()
        .map(|x| String::from_utf8(x).unwrap())
}

fn icc(bytes: &[u8]) -> Option<Vec<u8>> {
    if is_tiff(bytes) {
        return tiff_field(bytes, 34675);
    }
    decoder_of(bytes).icc_profile().unwrap()
}

/// The sRGB profile of a committed fixture.
fn srgb_profile() -> Vec<u8> {
    icc(&std::fs::read(fixture("tests/fixtures/icc_srgb_16x16.png")).unwrap()).unwrap()
}

/// The phone JPEG with an ICC profile in APP2 too, after its APP1 segments.
fn phone_jpeg_with_icc() -> Vec<u8> {
    with_icc(phone::phone_jpeg())
}

/// `jpeg` (SOI, two APP1 segments, ...) with the sRGB profile in APP2 after them.
fn with_icc(jpeg: Vec<u8>) -> Vec<u8> {
    let profile = srgb_profile();
    // SOI, then the two APP1 segments.
    let mut at = 2;
    for _ in 0..2 {
        at += 2 + u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
    }
    let mut out = jpeg[..at].to_vec();
    out.extend([0xFF, 0xE2]);
    out.extend(((2 + 14 + profile.len()) as u16).to_be_bytes());
    out.extend(b"ICC_PROFILE\0\x01\x01");
    out.extend(&profile);
    out.extend(&jpeg[at..]);
    out
}

/// Blurs `input` (bytes written to a file named `in.{in_ext}`) into `out.{ext}` with `extra`
/// arguments; returns the output's bytes.
fn blur(input: &[u8], in_ext: &str, ext: &str, extra: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join(format!("in.{in_ext}"));
    std::fs::write(&src, input).unwrap();
    let out = dir.path().join(format!("out.{ext}"));
    gblur()
        .arg(&src)
        .arg(&out)
        .args(["--sigma", "0.5", "-q"])
        .args(extra)
        .assert()
        .success();
    std::fs::read(out).unwrap()
}

/// Checks that `out` keeps every EXIF field of `input` but the orientation (1), the pixel
/// dimensions (the output's) and the thumbnail's directory (IFD1, never written), and its XMP
/// likewise; `through_tiff`: whether the output is or went through a TIFF, whose own layout
/// decides YCbCrPositioning.
fn check_kept(input: &[u8], out: &[u8], (w, h): (u32, u32), through_tiff: bool, what: &str) {
    let (a, b) = (fields(input), fields(out));
    let mut compared = 0;
    for (key, value) in &a {
        let got = b.get(key);
        match key.1 {
            _ if key.0.ends_with('1') || (key.1 == 0x0213 && through_tiff) => {
                assert_eq!(got, None, "{what}: {key:?}");
                continue;
            }
            ORIENTATION => assert_eq!(got.unwrap(), "Short([1])", "{what}"),
            PIXEL_X => assert!(got.unwrap().contains(&format!("[{w}]")), "{what}: {got:?}"),
            PIXEL_Y => assert!(got.unwrap().contains(&format!("[{h}]")), "{what}: {got:?}"),
            _ => assert_eq!(got, Some(value), "{what}: {key:?}"),
        }
        compared += 1;
    }
    assert!(compared >= 30, "{what}: only {compared} fields compared");
    assert!(
        b.keys().all(|k| !k.0.ends_with('1')),
        "{what}: IFD1 written"
    );
    assert_eq!(thumbnail(out), None, "{what}: thumbnail");
    let want = xmp(input).unwrap();
    let orientation = want
        .split("tiff:Orientation=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string();
    let (iw, ih) = if matches!(orientation.as_str(), "6" | "8") {
        (h, w)
    } else {
        (w, h)
    };
    let want = want
        .replace(
            &format!("tiff:Orientation=\"{orientation}\""),
            "tiff:Orientation=\"1\"",
        )
        .replace(
            &format!("PixelXDimension=\"{iw}\""),
            &format!("PixelXDimension=\"{w}\""),
        )
        .replace(
            &format!("PixelYDimension=\"{ih}\""),
            &format!("PixelYDimension=\"{h}\""),
        );
    assert_eq!(xmp(out).as_deref(), Some(want.as_str()), "{what}: XMP");
}

#[test]
fn the_fixtures_are_what_they_claim() {
    let jpeg = phone::phone_jpeg();
    let f = fields(&jpeg);
    assert_eq!(f[&("Tiff0".into(), ORIENTATION)], "Short([6])");
    assert!(f.contains_key(&("Gps0".into(), 2)), "GPS latitude");
    assert!(f.contains_key(&("Exif0".into(), 0x927C)), "maker note");
    assert!(
        f.contains_key(&("Interop0".into(), 1)),
        "interoperability index"
    );
    assert_eq!(thumbnail(&jpeg).unwrap(), phone::thumbnail());
    assert!(xmp(&jpeg).unwrap().contains("A. Photographer"));
    let img = image::load_from_memory(&jpeg).unwrap();
    assert_eq!((img.width(), img.height()), phone::PHONE_STORED);
    let png = phone::exif_png();
    assert_eq!(fields(&png)[&("Tiff0".into(), ORIENTATION)], "Short([3])");
    assert!(xmp(&png).unwrap().contains("gblur-test"));
}

#[test]
fn every_field_survives_a_blur_into_every_format_that_holds_it() {
    let jpeg = phone_jpeg_with_icc();
    let png = phone::exif_png();
    let (sw, sh) = phone::PHONE_STORED;
    // Input, its extension, the output's, the output's size.
    type Case<'a> = (&'a [u8], &'a str, &'a str, (u32, u32));
    let cases: [Case; 8] = [
        (&jpeg, "jpg", "jpg", (sh, sw)),
        (&jpeg, "jpg", "png", (sh, sw)),
        (&jpeg, "jpg", "webp", (sh, sw)),
        (&jpeg, "jpg", "tif", (sh, sw)),
        (&png, "png", "jpg", phone::PNG_SIZE),
        (&png, "png", "png", phone::PNG_SIZE),
        (&png, "png", "webp", phone::PNG_SIZE),
        (&png, "png", "tif", phone::PNG_SIZE),
    ];
    for (input, in_ext, ext, size) in cases {
        let what = format!("{in_ext} → {ext}");
        let out = blur(input, in_ext, ext, &[]);
        check_kept(input, &out, size, ext == "tif", &what);
        let img = image::load_from_memory(&out).unwrap();
        assert_eq!((img.width(), img.height()), size, "{what}");
        assert_eq!(icc(&out), icc(input), "{what}: ICC");
    }
}

#[test]
fn the_pixels_are_turned_and_orientation_is_one() {
    let out = blur(&phone::phone_jpeg(), "jpg", "png", &[]);
    let img = image::load_from_memory(&out).unwrap().to_rgb8();
    // Orientation 6 turns the stored top-left block to the top-right.
    let (w, h) = img.dimensions();
    assert_eq!((w, h), (48, 64));
    assert!(img.get_pixel(w - 3, 3)[0] > 200);
    assert!(img.get_pixel(2, 2)[0] < 200 && img.get_pixel(2, h - 3)[0] < 200);
    // A second pass leaves it as it is: nothing turns it again.
    let again = blur(&out, "png", "png", &[]);
    let img2 = image::load_from_memory(&again).unwrap().to_rgb8();
    assert_eq!(img2.dimensions(), (48, 64));
    assert!(img2.get_pixel(w - 3, 3)[0] > 200);
}

#[test]
fn a_tiff_written_by_gblur_gives_its_exif_back() {
    let jpeg = phone_jpeg_with_icc();
    let tif = blur(&jpeg, "jpg", "tif", &[]);
    for ext in ["jpg", "png", "tif"] {
        let out = blur(&tif, "tif", ext, &[]);
        check_kept(&jpeg, &out, (48, 64), true, &format!("jpg → tif → {ext}"));
        assert_eq!(icc(&out), icc(&jpeg), "ICC");
    }
}

#[test]
fn strip_and_keep_choose_what_is_written() {
    let jpeg = phone_jpeg_with_icc();
    for ext in ["jpg", "png", "webp", "tif"] {
        let out = blur(&jpeg, "jpg", ext, &["--strip"]);
        assert!(
            !has_exif(&out) && xmp(&out).is_none() && icc(&out).is_none(),
            "--strip {ext}"
        );
        let out = blur(&jpeg, "jpg", ext, &["--keep", "icc"]);
        assert!(!has_exif(&out) && xmp(&out).is_none(), "--keep icc {ext}");
        assert_eq!(icc(&out), Some(srgb_profile()), "--keep icc {ext}");
        let out = blur(&jpeg, "jpg", ext, &["--keep", "exif,xmp"]);
        assert!(
            has_exif(&out) && xmp(&out).is_some() && icc(&out).is_none(),
            "--keep exif,xmp {ext}"
        );
        let out = blur(&jpeg, "jpg", ext, &["--keep", "xmp", "--keep", "icc"]);
        assert!(
            !has_exif(&out) && xmp(&out).is_some() && icc(&out).is_some(),
            "--keep xmp --keep icc {ext}"
        );
    }
    // --strip leaves not even the thumbnail's bytes behind.
    let out = blur(&jpeg, "jpg", "jpg", &["--strip"]);
    let thumb = phone::thumbnail();
    assert!(!out.windows(64).any(|w| w == &thumb[thumb.len() - 64..]));
}

#[test]
fn strip_with_keep_is_a_usage_error() {
    gblur()
        .args([
            "samples/coffee.png",
            "/tmp/never.png",
            "--sigma",
            "1",
            "--strip",
            "--keep",
            "icc",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--strip"));
    gblur()
        .args([
            "samples/coffee.png",
            "/tmp/never.png",
            "--sigma",
            "1",
            "--keep",
            "gps",
        ])
        .assert()
        .code(2);
}

#[test]
fn formats_that_hold_no_metadata_say_what_was_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.jpg");
    std::fs::write(&src, phone::phone_jpeg()).unwrap();
    gblur()
        .arg(&src)
        .arg(dir.path().join("o.bmp"))
        .args(["--sigma", "1"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "Bmp cannot carry the input's EXIF or XMP",
        ));
}

#[test]
fn pipes_carry_metadata() {
    let jpeg = phone::phone_jpeg();
    let out = gblur()
        .args(["-", "png:-", "--sigma", "0.5", "-q"])
        .write_stdin(jpeg.clone())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    check_kept(&jpeg, &out, (48, 64), false, "stdin → png:-");
}

#[test]
fn batch_carries_metadata_and_strips_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let (src, out, bare) = (
        dir.path().join("in"),
        dir.path().join("out"),
        dir.path().join("bare"),
    );
    std::fs::create_dir_all(src.join("trip")).unwrap();
    std::fs::write(src.join("trip/phone.jpg"), phone::phone_jpeg()).unwrap();
    std::fs::write(src.join("exif.png"), phone::exif_png()).unwrap();
    let run = |to: &Path, extra: &[&str]| {
        gblur()
            .arg("batch")
            .arg(&src)
            .arg(to)
            .args(["--sigma", "0.5", "-q"])
            .args(extra)
            .assert()
            .success();
    };
    run(&out, &[]);
    let got = std::fs::read(out.join("trip/phone.jpg")).unwrap();
    check_kept(&phone::phone_jpeg(), &got, (48, 64), false, "batch jpg");
    let got = std::fs::read(out.join("exif.png")).unwrap();
    check_kept(
        &phone::exif_png(),
        &got,
        phone::PNG_SIZE,
        false,
        "batch png",
    );
    run(&bare, &["--strip"]);
    for f in ["trip/phone.jpg", "exif.png"] {
        let got = std::fs::read(bare.join(f)).unwrap();
        assert!(!has_exif(&got) && xmp(&got).is_none(), "batch --strip {f}");
    }
}

/// The committed copies (for benches/metadata.sh and for trying gblur by hand) hold what the
/// generator makes; `GBLUR_WRITE_FIXTURES=1` writes them anew.
#[test]
fn committed_fixtures_hold_the_generated_metadata() {
    let made = [
        ("tests/fixtures/phone_exif_xmp.jpg", phone::phone_jpeg()),
        ("tests/fixtures/exif_xmp.png", phone::exif_png()),
    ];
    for (path, bytes) in made {
        if std::env::var_os("GBLUR_WRITE_FIXTURES").is_some() {
            std::fs::write(fixture(path), &bytes).unwrap();
        }
        let committed = std::fs::read(fixture(path)).unwrap();
        assert_eq!(fields(&committed), fields(&bytes), "{path}");
        assert_eq!(thumbnail(&committed), thumbnail(&bytes), "{path}");
        assert_eq!(xmp(&committed), xmp(&bytes), "{path}");
    }
}

#[test]
fn a_legacy_png_raw_profile_is_read() {
    // ImageMagick's form: tEXt "Raw profile type exif", the EXIF in hexadecimal.
    let exif = [
        b"Exif\0\0".to_vec(),
        phone::exif(true, phone::PNG_SIZE, 3, false),
    ]
    .concat();
    let hex: String = exif.iter().map(|b| format!("{b:02x}")).collect();
    let lines: Vec<&str> = hex
        .as_bytes()
        .chunks(72)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let text = format!("\nexif\n{:8}\n{}\n", exif.len(), lines.join("\n"));
    let png = phone::exif_png();
    let mut legacy = png[..33].to_vec();
    let mut data = b"Raw profile type exif\0".to_vec();
    data.extend(text.as_bytes());
    legacy.extend((data.len() as u32).to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(b"tEXt");
    crc.update(&data);
    legacy.extend(b"tEXt");
    legacy.extend(&data);
    legacy.extend(crc.sum().to_be_bytes());
    // The rest of the PNG without its eXIf chunk.
    let exif_len = u32::from_be_bytes(png[33..37].try_into().unwrap()) as usize;
    legacy.extend(&png[33 + 12 + exif_len..]);
    assert!(!has_exif(&legacy), "kamadak-exif reads no legacy chunk");
    let out = blur(&legacy, "png", "jpg", &[]);
    let (a, b) = (fields(&png), fields(&out));
    assert_eq!(b[&("Tiff0".into(), ORIENTATION)], "Short([1])");
    assert_eq!(a.len(), b.len());
    assert_eq!(a[&("Gps0".into(), 2)], b[&("Gps0".into(), 2)]);
}

/// An upright phone JPEG blurred at sigma 5 takes the YCbCr-planes path, which writes the
/// encoded planes and then the metadata: every EXIF field but the thumbnail's, the XMP packet
/// and the profile come through unchanged.
#[test]
fn the_planes_path_keeps_every_field() {
    let input = with_icc(phone::phone_jpeg_turned(1));
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("in.jpg"), dir.path().join("out.jpg"));
    std::fs::write(&src, &input).unwrap();
    let run = gblur()
        .arg(&src)
        .arg(&out)
        .args(["--sigma", "5", "--device", "rust", "--json"])
        .assert()
        .success();
    let report = String::from_utf8_lossy(&run.get_output().stdout).to_string();
    assert!(report.contains("YCbCr"), "{report}");
    let output = std::fs::read(out).unwrap();
    let primary = |b: &[u8]| -> BTreeMap<_, _> {
        fields(b)
            .into_iter()
            .filter(|(key, _)| !key.0.ends_with('1'))
            .collect()
    };
    assert_eq!(fields(&output), primary(&input[..]));
    assert_eq!(thumbnail(&output), None);
    assert_eq!(icc(&output), Some(srgb_profile()));
    let xmp_of = |b: &[u8]| {
        let at = b.windows(9).position(|w| w == b"<x:xmpmet").expect("XMP");
        b[at..at + 200].to_vec()
    };
    assert_eq!(xmp_of(&output), xmp_of(&input));
}

/// The EXIF thumbnail is the input unblurred: no output carries it, nor its bytes, whatever is
/// blurred (the whole picture, all or part of it as a region, a mask) and on either engine,
/// and a note says it was dropped. The rest of the EXIF is written.
#[test]
fn no_output_carries_the_unblurred_exif_thumbnail() {
    let dir = tempfile::tempdir().unwrap();
    let (turned, upright) = (
        dir.path().join("turned.jpg"),
        dir.path().join("upright.jpg"),
    );
    std::fs::write(&turned, phone::phone_jpeg()).unwrap();
    std::fs::write(&upright, phone::phone_jpeg_turned(1)).unwrap();
    assert_eq!(thumbnail(&phone::phone_jpeg()), Some(phone::thumbnail()));
    // White, the size of the picture turned upright (48 × 64): all of it blurred.
    let mask = dir.path().join("mask.png");
    image::GrayImage::from_pixel(48, 64, image::Luma([255]))
        .save(&mask)
        .unwrap();
    let mask = mask.to_str().unwrap();
    let thumb = phone::thumbnail();
    let tail = &thumb[thumb.len() - 64..];
    type Job<'a> = (&'a Path, &'a [&'a str], &'a [&'a str]);
    let jobs: [Job; 5] = [
        (&turned, &[], &["jpg", "png", "webp", "tif"]),
        (
            &turned,
            &["--region", "0,0,48,64"],
            &["jpg", "png", "webp", "tif"],
        ),
        (&turned, &["--region", "4,4,8,8"], &["jpg", "png"]),
        (&turned, &["--mask", mask], &["jpg", "png"]),
        (&upright, &["--engine", "strips"], &["jpg", "png"]),
    ];
    for (input, extra, exts) in jobs {
        for ext in exts {
            let what = format!("{extra:?} → {ext}");
            let out = dir.path().join(format!("out.{ext}"));
            let run = gblur()
                .arg(input)
                .arg(&out)
                .args(["--sigma", "2", "--json"])
                .args(extra)
                .assert()
                .success();
            let report = String::from_utf8_lossy(&run.get_output().stdout).to_string();
            assert!(report.contains(THUMBNAIL_DROPPED), "{what}: {report}");
            let got = std::fs::read(&out).unwrap();
            let f = fields(&got);
            assert!(
                f.contains_key(&("Gps0".into(), 2)),
                "{what}: the rest is kept"
            );
            assert!(
                f.keys().all(|k| !k.0.ends_with('1')),
                "{what}: IFD1 written"
            );
            assert_eq!(thumbnail(&got), None, "{what}");
            assert!(
                !got.windows(64).any(|w| w == tail),
                "{what}: the thumbnail's bytes"
            );
        }
    }
    // An input whose EXIF holds no thumbnail has no such note.
    let src = dir.path().join("exif.png");
    std::fs::write(&src, phone::exif_png()).unwrap();
    let run = gblur()
        .arg(&src)
        .arg(dir.path().join("out.png"))
        .args(["--sigma", "2", "--json"])
        .assert()
        .success();
    let report = String::from_utf8_lossy(&run.get_output().stdout).to_string();
    assert!(!report.contains("thumbnail"), "{report}");
}
