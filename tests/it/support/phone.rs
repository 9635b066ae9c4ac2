//! Test inputs shaped like what phones and editors write: a JPEG with EXIF (camera fields,
//! orientation 6, a maker note, an EXIF directory with an interoperability directory, a GPS
//! directory, and a JPEG thumbnail in IFD1) and an XMP packet; a PNG with eXIf and an iTXt
//! XMP packet. Built here, byte by byte, with a TIFF writer of its own (not gblur's), so a
//! bug in gblur's reader or writer cannot hide in the fixture.
#![allow(dead_code)]

use image::{ImageEncoder, RgbImage};
use std::collections::HashMap;

/// The stored (unturned) size of the phone JPEG: orientation 6 shows it 48 × 64.
pub const PHONE_STORED: (u32, u32) = (64, 48);
/// The PNG's size; its orientation is 3 (turned half a turn).
pub const PNG_SIZE: (u32, u32) = (40, 30);

/// A TIFF field: tag, type, count, value bytes (already in the structure's byte order).
type Field = (u16, u16, u32, Vec<u8>);

struct Tiff {
    le: bool,
    buf: Vec<u8>,
}

impl Tiff {
    fn new(le: bool) -> Tiff {
        let buf = if le {
            b"II\x2a\0\x08\0\0\0".to_vec()
        } else {
            b"MM\0\x2a\0\0\0\x08".to_vec()
        };
        Tiff { le, buf }
    }

    fn u16(&self, v: u16) -> Vec<u8> {
        if self.le {
            v.to_le_bytes().to_vec()
        } else {
            v.to_be_bytes().to_vec()
        }
    }

    fn u32(&self, v: u32) -> Vec<u8> {
        if self.le {
            v.to_le_bytes().to_vec()
        } else {
            v.to_be_bytes().to_vec()
        }
    }

    fn short(&self, tag: u16, v: u16) -> Field {
        (tag, 3, 1, self.u16(v))
    }

    fn long(&self, tag: u16, v: u32) -> Field {
        (tag, 4, 1, self.u32(v))
    }

    fn ascii(&self, tag: u16, s: &str) -> Field {
        let mut d = s.as_bytes().to_vec();
        d.push(0);
        (tag, 2, d.len() as u32, d)
    }

    fn rationals(&self, tag: u16, v: &[(u32, u32)]) -> Field {
        let d = v
            .iter()
            .flat_map(|&(n, dd)| [self.u32(n), self.u32(dd)].concat())
            .collect();
        (tag, 5, v.len() as u32, d)
    }

    fn undefined(&self, tag: u16, d: &[u8]) -> Field {
        (tag, 7, d.len() as u32, d.to_vec())
    }

    fn put(&mut self, at: usize, v: u32) {
        let b = self.u32(v);
        self.buf[at..at + 4].copy_from_slice(&b);
    }

    /// Writes an IFD (fields sorted by tag) and its values at the end; returns its offset, the
    /// position of each field's value slot, and of its next-IFD slot, for patching.
    fn ifd(&mut self, mut fields: Vec<Field>) -> (u32, HashMap<u16, usize>, usize) {
        fields.sort_by_key(|f| f.0);
        if self.buf.len() % 2 == 1 {
            self.buf.push(0);
        }
        let at = self.buf.len();
        let mut data_at = at + 2 + 12 * fields.len() + 4;
        let mut slots = HashMap::new();
        let mut values = Vec::new();
        let n = self.u16(fields.len() as u16);
        self.buf.extend(n);
        for (tag, typ, count, d) in &fields {
            let row = [self.u16(*tag), self.u16(*typ), self.u32(*count)].concat();
            self.buf.extend(row);
            slots.insert(*tag, self.buf.len());
            if d.len() <= 4 {
                let mut v = d.clone();
                v.resize(4, 0);
                self.buf.extend(v);
            } else {
                let off = self.u32(data_at as u32);
                self.buf.extend(off);
                values.extend_from_slice(d);
                if d.len() % 2 == 1 {
                    values.push(0);
                }
                data_at += d.len().next_multiple_of(2);
            }
        }
        let next = self.buf.len();
        self.buf.extend([0; 4]);
        self.buf.extend(values);
        (at as u32, slots, next)
    }
}

/// A maker note as phones write them: a vendor signature and opaque bytes.
pub const MAKER_NOTE: &[u8] = b"GBLURTEST\0\x01\x02\x03\x04\xfe\xff\x00\x10private-bytes";

/// A small JPEG thumbnail (16 × 12, a gradient): the unblurred picture in miniature.
pub fn thumbnail() -> Vec<u8> {
    let img = RgbImage::from_fn(16, 12, |x, y| {
        image::Rgb([(x * 15) as u8, (y * 20) as u8, 90])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
        .write_image(img.as_raw(), 16, 12, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// EXIF as a phone writes it, in either byte order, for a picture stored `stored` (w, h) with
/// `orientation`; with a thumbnail in IFD1 when `thumb`.
pub fn exif(le: bool, stored: (u32, u32), orientation: u16, thumb: bool) -> Vec<u8> {
    let mut t = Tiff::new(le);
    let ifd0 = vec![
        t.ascii(0x010F, "Google"),
        t.ascii(0x0110, "Pixel 7"),
        t.short(0x0112, orientation),
        t.rationals(0x011A, &[(72, 1)]),
        t.rationals(0x011B, &[(72, 1)]),
        t.short(0x0128, 2),
        t.ascii(0x0131, "HDR+ 1.0.540104718zd"),
        t.ascii(0x0132, "2024:05:01 10:00:00"),
        t.short(0x0213, 1),
        t.long(0x8769, 0),
        t.long(0x8825, 0),
    ];
    let (_, slots0, next0) = t.ifd(ifd0);
    let exif_ifd = vec![
        t.rationals(0x829A, &[(1, 120)]),
        t.rationals(0x829D, &[(185, 100)]),
        t.short(0x8827, 100),
        t.undefined(0x9000, b"0232"),
        t.ascii(0x9003, "2024:05:01 10:00:00"),
        t.ascii(0x9011, "+02:00"),
        t.ascii(0x9291, "123"),
        t.rationals(0x920A, &[(681, 100)]),
        t.undefined(0x927C, MAKER_NOTE),
        t.undefined(0x9286, b"ASCII\0\0\0a user comment"),
        t.short(0xA001, 1),
        t.long(0xA002, stored.0),
        t.long(0xA003, stored.1),
        t.long(0xA005, 0),
    ];
    let (exif_at, slots_e, _) = t.ifd(exif_ifd);
    t.put(slots0[&0x8769], exif_at);
    let interop = vec![t.ascii(0x0001, "R98"), t.undefined(0x0002, b"0100")];
    let (interop_at, _, _) = t.ifd(interop);
    t.put(slots_e[&0xA005], interop_at);
    let gps = vec![
        (0x0000, 1, 4, vec![2, 2, 0, 0]),
        t.ascii(0x0001, "N"),
        t.rationals(0x0002, &[(48, 1), (51, 1), (2938, 100)]),
        t.ascii(0x0003, "E"),
        t.rationals(0x0004, &[(2, 1), (17, 1), (4003, 100)]),
        (0x0005, 1, 1, vec![0]),
        t.rationals(0x0006, &[(3512, 100)]),
    ];
    let (gps_at, _, _) = t.ifd(gps);
    t.put(slots0[&0x8825], gps_at);
    if thumb {
        let jpeg = thumbnail();
        let ifd1 = vec![
            t.short(0x0103, 6),
            t.rationals(0x011A, &[(72, 1)]),
            t.rationals(0x011B, &[(72, 1)]),
            t.short(0x0128, 2),
            t.long(0x0201, 0),
            t.long(0x0202, jpeg.len() as u32),
        ];
        let (ifd1_at, slots1, _) = t.ifd(ifd1);
        t.put(next0, ifd1_at);
        let at = t.buf.len() as u32;
        t.put(slots1[&0x0201], at);
        t.buf.extend(jpeg);
    }
    t.buf
}

/// An XMP packet such as editors write, with the orientation and size as attributes.
pub fn xmp(stored: (u32, u32), orientation: u16) -> String {
    format!(
        r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    xmlns:tiff="http://ns.adobe.com/tiff/1.0/"
    xmlns:exif="http://ns.adobe.com/exif/1.0/"
    xmlns:dc="http://purl.org/dc/elements/1.1/"
    xmp:CreatorTool="Pixel 7 camera"
    xmp:Rating="4"
    tiff:Orientation="{orientation}"
    exif:PixelXDimension="{}"
    exif:PixelYDimension="{}">
   <dc:creator><rdf:Seq><rdf:li>A. Photographer</rdf:li></rdf:Seq></dc:creator>
   <dc:subject><rdf:Bag><rdf:li>harbour</rdf:li><rdf:li>gblur-test</rdf:li></rdf:Bag></dc:subject>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>"#,
        stored.0, stored.1
    )
}

/// Pixels with a landmark: a bright block in the stored top-left corner.
fn pixels((w, h): (u32, u32)) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        if x < w / 4 && y < h / 4 {
            image::Rgb([250, 250, 250])
        } else {
            image::Rgb([(x * 3) as u8, (y * 4) as u8, 40])
        }
    })
}

/// The phone JPEG: APP1 EXIF (big-endian, orientation 6, thumbnail) and APP1 XMP after SOI.
pub fn phone_jpeg() -> Vec<u8> {
    phone_jpeg_turned(6)
}

/// The phone JPEG with `orientation` in its EXIF and XMP.
pub fn phone_jpeg_turned(orientation: u16) -> Vec<u8> {
    phone_jpeg_sized(orientation, PHONE_STORED)
}

/// The phone JPEG at `(w, h)` stored pixels, with `orientation` in its EXIF and XMP.
pub fn phone_jpeg_sized(orientation: u16, (w, h): (u32, u32)) -> Vec<u8> {
    let mut plain = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut plain, 95)
        .write_image(
            pixels((w, h)).as_raw(),
            w,
            h,
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    let mut out = plain[..2].to_vec();
    let mut app1 = |prefix: &[u8], body: &[u8]| {
        out.extend([0xFF, 0xE1]);
        out.extend(((2 + prefix.len() + body.len()) as u16).to_be_bytes());
        out.extend(prefix);
        out.extend(body);
    };
    app1(b"Exif\0\0", &exif(false, (w, h), orientation, true));
    app1(
        b"http://ns.adobe.com/xap/1.0/\0",
        xmp((w, h), orientation).as_bytes(),
    );
    // Skip the encoder's JFIF APP0: an EXIF file starts with APP1.
    let rest = if plain[2..4] == [0xFF, 0xE0] {
        4 + u16::from_be_bytes([plain[4], plain[5]]) as usize
    } else {
        2
    };
    out.extend(&plain[rest..]);
    out
}

fn png_chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    out.extend((data.len() as u32).to_be_bytes());
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend(kind);
    out.extend(data);
    out.extend(crc.sum().to_be_bytes());
}

/// The PNG: eXIf (little-endian, orientation 3, no thumbnail) and iTXt XMP before IDAT.
pub fn exif_png() -> Vec<u8> {
    let (w, h) = PNG_SIZE;
    let mut plain = Vec::new();
    image::codecs::png::PngEncoder::new(&mut plain)
        .write_image(
            pixels((w, h)).as_raw(),
            w,
            h,
            image::ExtendedColorType::Rgb8,
        )
        .unwrap();
    // Signature (8) and IHDR (8 + 13 + 4).
    let mut out = plain[..33].to_vec();
    png_chunk(&mut out, b"eXIf", &exif(true, (w, h), 3, false));
    let mut itxt = b"XML:com.adobe.xmp\0\0\0\0\0".to_vec();
    itxt.extend(xmp((w, h), 3).as_bytes());
    png_chunk(&mut out, b"iTXt", &itxt);
    out.extend(&plain[33..]);
    out
}
