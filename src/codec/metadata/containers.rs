//! EXIF and XMP added to encoded JPEG, PNG and WebP files, and IPTC-IIM records to JPEG, in
//! the places their specifications give them. The encoders write the pixels (and the ICC
//! profile); these functions copy the file once with the metadata put in.

use super::Blobs;

/// The namespace line that opens an XMP APP1 segment in JPEG.
pub const XMP_JPEG_PREFIX: &[u8] = b"http://ns.adobe.com/xap/1.0/\0";
/// The PNG iTXt keyword of an XMP packet.
pub const XMP_PNG_KEYWORD: &[u8] = b"XML:com.adobe.xmp";

/// The signature that opens a JPEG APP13 segment of Photoshop resources.
const PHOTOSHOP: &[u8] = b"Photoshop 3.0\0";
/// The Photoshop resource that holds IPTC-IIM records.
const IPTC_RESOURCE: u16 = 0x0404;

/// JPEG: APP1 `Exif\0\0`, APP1 XMP, then APP13 with the IPTC records as Photoshop resource
/// 0x0404 (over as many APP13 segments as it takes), right after SOI (after the JFIF APP0 when
/// the encoder wrote one, as JFIF wants APP0 first). A segment holds at most 65533 bytes; EXIF
/// or XMP larger than that is left out with a note (extended XMP is not written).
pub fn jpeg(bytes: Vec<u8>, blobs: Blobs, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
    if bytes.len() < 4 || bytes[..2] != [0xFF, 0xD8] {
        return Err("the JPEG encoder wrote no start-of-image marker".into());
    }
    let mut at = 2;
    if bytes[2..4] == [0xFF, 0xE0] && bytes.len() >= 6 {
        at += 2 + u16::from_be_bytes([bytes[4], bytes[5]]) as usize;
    }
    let at = at.min(bytes.len());
    let mut segments = Vec::new();
    let mut segment = |marker: u8, prefix: &[u8], body: &[u8], what: &str| {
        let len = 2 + prefix.len() + body.len();
        match u16::try_from(len) {
            Ok(len) => {
                segments.extend_from_slice(&[0xFF, marker]);
                segments.extend_from_slice(&len.to_be_bytes());
                segments.extend_from_slice(prefix);
                segments.extend_from_slice(body);
            }
            Err(_) => notes.push(format!(
                "the input's {what} ({} bytes) is larger than a JPEG segment holds; it was not written",
                body.len()
            )),
        }
    };
    if let Some(e) = blobs.exif {
        segment(0xE1, b"Exif\0\0", e, "EXIF");
    }
    if let Some(x) = blobs.xmp {
        segment(0xE1, XMP_JPEG_PREFIX, x, "XMP");
    }
    if let Some(i) = blobs.iptc {
        // One resource: signature, ID, an empty name (padded to two bytes), the size, and
        // the data padded to an even length.
        let mut resource = b"8BIM".to_vec();
        resource.extend_from_slice(&IPTC_RESOURCE.to_be_bytes());
        resource.extend_from_slice(&[0, 0]);
        resource.extend_from_slice(&(i.len() as u32).to_be_bytes());
        resource.extend_from_slice(i);
        if i.len() % 2 == 1 {
            resource.push(0);
        }
        // Resources larger than a segment run on in the next, as Photoshop writes them (and
        // `jpeg_iptc` joins them).
        let most = u16::MAX as usize - 2 - PHOTOSHOP.len();
        for piece in resource.chunks(most) {
            segment(0xED, PHOTOSHOP, piece, "IPTC-IIM records");
        }
    }
    let mut out = Vec::with_capacity(bytes.len() + segments.len());
    out.extend_from_slice(&bytes[..at]);
    out.extend_from_slice(&segments);
    out.extend_from_slice(&bytes[at..]);
    Ok(out)
}

/// The IPTC-IIM records of the JPEG `src`: Photoshop resource 0x0404 of its APP13 segments
/// (`Photoshop 3.0`, joined in order where the resources run over several), among the
/// segments before the first scan. None where there are none, or they cannot be read.
pub fn jpeg_iptc(src: &mut impl super::ifd::Source) -> Option<Vec<u8>> {
    let mut at = 2u64;
    if src.read_at(0, 2).as_deref() != Some(&[0xFF, 0xD8]) {
        return None;
    }
    let mut resources = Vec::new();
    // Segments are few; a header of more than 1000 is not worth walking.
    for _ in 0..1000 {
        let Some(marker) = src.read_at(at, 4) else {
            break;
        };
        if marker[0] != 0xFF || matches!(marker[1], 0xDA | 0xD9) {
            break;
        }
        let len = u16::from_be_bytes([marker[2], marker[3]]) as usize;
        if marker[1] == 0xED && len > 2 {
            let body = src.read_at(at + 4, len - 2).unwrap_or_default();
            if let Some(more) = body.strip_prefix(PHOTOSHOP) {
                resources.extend_from_slice(more);
            }
        }
        at += 2 + len as u64;
    }
    photoshop_resource(&resources, IPTC_RESOURCE)
}

/// The data of resource `id` among Photoshop image resources: each a signature (`8BIM`), an
/// ID, a name (a length byte and its characters, padded to an even length), a size and the
/// data (padded to an even length).
fn photoshop_resource(mut rest: &[u8], id: u16) -> Option<Vec<u8>> {
    while rest.len() >= 12 {
        let this = u16::from_be_bytes([rest[4], rest[5]]);
        let name = (1 + rest[6] as usize).next_multiple_of(2);
        let at = 6 + name;
        let size_bytes = rest.get(at..at + 4)?;
        let size = u32::from_be_bytes(size_bytes.try_into().ok()?) as usize;
        let data = rest.get(at + 4..at.checked_add(4 + size)?)?;
        if &rest[..4] == b"8BIM" && this == id {
            return Some(data.to_vec());
        }
        rest = rest
            .get((at + 4 + size).next_multiple_of(2)..)
            .unwrap_or_default();
    }
    None
}

/// A PNG chunk: length, type, data, CRC-32 of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) -> Result<(), String> {
    let len = u32::try_from(data.len())
        .ok()
        .filter(|&l| l <= i32::MAX as u32)
        .ok_or("metadata larger than a PNG chunk holds")?;
    out.extend_from_slice(&len.to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let mut crc = flate2::Crc::new();
    crc.update(&out[start..]);
    out.extend_from_slice(&crc.sum().to_be_bytes());
    Ok(())
}

/// PNG's metadata chunks, type and data: an eXIf chunk and an uncompressed iTXt
/// `XML:com.adobe.xmp`.
pub fn png_chunks(exif: Option<&[u8]>, xmp: Option<&[u8]>) -> Vec<([u8; 4], Vec<u8>)> {
    let mut chunks = Vec::new();
    if let Some(e) = exif {
        chunks.push((*b"eXIf", e.to_vec()));
    }
    if let Some(x) = xmp {
        // Keyword, NUL, compression flag 0, method 0, empty language tag and translated
        // keyword (each NUL-ended), then the text.
        let mut data = XMP_PNG_KEYWORD.to_vec();
        data.extend_from_slice(&[0, 0, 0, 0, 0]);
        data.extend_from_slice(x);
        chunks.push((*b"iTXt", data));
    }
    chunks
}

/// PNG: `png_chunks`, before the first IDAT
/// (where readers that stop at the pixels still see them).
pub fn png(bytes: Vec<u8>, exif: Option<&[u8]>, xmp: Option<&[u8]>) -> Result<Vec<u8>, String> {
    let mut at = 8;
    loop {
        let head = bytes
            .get(at..at + 8)
            .ok_or("the PNG encoder wrote no IDAT chunk")?;
        if &head[4..] == b"IDAT" {
            break;
        }
        at += 12 + u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    }
    let mut chunks = Vec::new();
    for (kind, data) in png_chunks(exif, xmp) {
        png_chunk(&mut chunks, &kind, &data)?;
    }
    let mut out = Vec::with_capacity(bytes.len() + chunks.len());
    out.extend_from_slice(&bytes[..at]);
    out.extend_from_slice(&chunks);
    out.extend_from_slice(&bytes[at..]);
    Ok(out)
}

/// A RIFF chunk: its fourcc and data.
type Chunk<'a> = ([u8; 4], &'a [u8]);

/// The chunks of a RIFF WebP file.
fn riff_chunks(bytes: &[u8]) -> Result<Vec<Chunk<'_>>, String> {
    let bad = || "the WebP encoder wrote an unexpected RIFF layout".to_string();
    if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WEBP" {
        return Err(bad());
    }
    let mut chunks = Vec::new();
    let mut at = 12;
    while at + 8 <= bytes.len() {
        let fourcc = bytes[at..at + 4].try_into().expect("four bytes");
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("four bytes"));
        let data = bytes.get(at + 8..at + 8 + len as usize).ok_or_else(bad)?;
        chunks.push((fourcc, data));
        at += 8 + (len as usize).next_multiple_of(2);
    }
    Ok(chunks)
}

/// The canvas size and whether the image has alpha, from a simple-format image chunk.
fn webp_canvas(fourcc: &[u8; 4], data: &[u8]) -> Option<(u32, u32, bool)> {
    match fourcc {
        // VP8L: signature 0x2F, then 14 bits width-1, 14 bits height-1, 1 bit alpha.
        b"VP8L" if data.len() >= 5 && data[0] == 0x2F => {
            let v = u32::from_le_bytes(data[1..5].try_into().ok()?);
            Some(((v & 0x3FFF) + 1, ((v >> 14) & 0x3FFF) + 1, v >> 28 & 1 == 1))
        }
        // VP8 (lossy): a key frame's start code, then 14-bit width and height.
        b"VP8 " if data.len() >= 10 && data[3..6] == [0x9D, 0x01, 0x2A] => {
            let w = u16::from_le_bytes([data[6], data[7]]) as u32 & 0x3FFF;
            let h = u16::from_le_bytes([data[8], data[9]]) as u32 & 0x3FFF;
            Some((w, h, false))
        }
        _ => None,
    }
}

/// WebP: the extended format (a VP8X chunk whose flags announce an ICC profile, EXIF and XMP),
/// with an `ICCP` chunk right after VP8X and `EXIF` and `XMP ` chunks after the image data, as
/// the container specification orders them; the kinds given replace the file's own. A simple
/// file (a lone VP8L or VP8 chunk, what an encoder writes without an ICC profile) is rewritten
/// as an extended one.
pub fn webp(
    bytes: Vec<u8>,
    icc: Option<&[u8]>,
    exif: Option<&[u8]>,
    xmp: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let chunks = riff_chunks(&bytes)?;
    let replaced = |f: &[u8; 4]| match f {
        b"ICCP" => icc.is_some(),
        b"EXIF" => exif.is_some(),
        b"XMP " => xmp.is_some(),
        _ => false,
    };
    let mut kept: Vec<([u8; 4], Vec<u8>)> = chunks
        .iter()
        .filter(|(f, _)| !replaced(f))
        .map(|(f, d)| (*f, d.to_vec()))
        .collect();
    if kept.first().map(|(f, _)| f) != Some(b"VP8X") {
        let (f, d) = kept
            .first()
            .ok_or("the WebP encoder wrote no image chunk")?;
        let (w, h, alpha) = webp_canvas(f, d).ok_or("the WebP encoder wrote no image chunk")?;
        let mut vp8x = vec![0u8; 10];
        vp8x[0] = if alpha { 0x10 } else { 0 };
        vp8x[4..7].copy_from_slice(&(w - 1).to_le_bytes()[..3]);
        vp8x[7..10].copy_from_slice(&(h - 1).to_le_bytes()[..3]);
        kept.insert(0, (*b"VP8X", vp8x));
    }
    if let Some(profile) = icc {
        kept.insert(1, (*b"ICCP", profile.to_vec()));
    }
    let has = |f: &[u8; 4]| kept.iter().any(|(k, _)| k == f);
    let flags = (has(b"ICCP") as u8) << 5
        | ((exif.is_some() || has(b"EXIF")) as u8) << 3
        | ((xmp.is_some() || has(b"XMP ")) as u8) << 2;
    kept[0].1[0] = kept[0].1[0] & !0x2C | flags;
    kept.extend(exif.map(|e| (*b"EXIF", e.to_vec())));
    kept.extend(xmp.map(|x| (*b"XMP ", x.to_vec())));
    let body: usize = kept
        .iter()
        .map(|(_, d)| 8 + d.len().next_multiple_of(2))
        .sum();
    let riff_len = u32::try_from(4 + body).map_err(|_| "larger than a WebP file holds")?;
    let mut out = Vec::with_capacity(8 + riff_len as usize);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_len.to_le_bytes());
    out.extend_from_slice(b"WEBP");
    for (f, d) in &kept {
        out.extend_from_slice(f);
        out.extend_from_slice(&(d.len() as u32).to_le_bytes());
        out.extend_from_slice(d);
        if d.len() % 2 == 1 {
            out.push(0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exif_blob() -> Vec<u8> {
        let mut b = b"MM\0\x2a\0\0\0\x08\0\0\0\0\0\0".to_vec();
        b.push(7);
        b
    }

    #[test]
    fn jpeg_segments_go_after_jfif_and_oversized_ones_are_noted() {
        let file = [0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, 0xFF, 0xD9].to_vec();
        let mut notes = Vec::new();
        let big = vec![b' '; 70_000];
        let exif = exif_blob();
        let blobs = Blobs {
            exif: Some(&exif),
            xmp: Some(&big),
            iptc: None,
        };
        let out = jpeg(file.clone(), blobs, &mut notes).unwrap();
        assert_eq!(&out[..8], &file[..8]);
        assert_eq!(&out[8..10], &[0xFF, 0xE1]);
        assert_eq!(&out[12..18], b"Exif\0\0");
        assert_eq!(out.len(), file.len() + 4 + 6 + exif_blob().len());
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn webp_simple_file_becomes_extended_with_flags() {
        // A VP8L header for 3 × 2 with alpha: (3-1) | (2-1) << 14 | 1 << 28.
        let v: u32 = 2 | (1 << 14) | (1 << 28);
        let mut vp8l = vec![0x2F];
        vp8l.extend_from_slice(&v.to_le_bytes());
        vp8l.push(0);
        let mut file = b"RIFF".to_vec();
        file.extend_from_slice(&(4 + 8 + vp8l.len() as u32).to_le_bytes());
        file.extend_from_slice(b"WEBPVP8L");
        file.extend_from_slice(&(vp8l.len() as u32).to_le_bytes());
        file.extend_from_slice(&vp8l);
        let out = webp(file, None, Some(&exif_blob()), Some(b"<x/>")).unwrap();
        let chunks = riff_chunks(&out).unwrap();
        let names: Vec<_> = chunks.iter().map(|(f, _)| f).collect();
        assert_eq!(names, [b"VP8X", b"VP8L", b"EXIF", b"XMP "]);
        assert_eq!(chunks[0].1, [0x1C, 0, 0, 0, 2, 0, 0, 1, 0, 0]);
        assert_eq!(chunks[2].1, exif_blob());
        let riff = u32::from_le_bytes(out[4..8].try_into().unwrap()) as usize;
        assert_eq!(riff + 8, out.len());
    }

    #[test]
    fn a_resource_is_found_past_named_and_odd_sized_ones() {
        let mut irb = b"8BIM\x03\xED\x03abc".to_vec(); // name "abc": 1 + 3 bytes, even
        irb.extend_from_slice(&3u32.to_be_bytes());
        irb.extend_from_slice(b"xyz\0"); // 3 bytes of data, padded
        irb.extend_from_slice(b"8BIM\x04\x04\x00\x00");
        irb.extend_from_slice(&5u32.to_be_bytes());
        irb.extend_from_slice(b"\x1C\x02\x00\x00\x00");
        assert_eq!(
            photoshop_resource(&irb, IPTC_RESOURCE).as_deref(),
            Some(&b"\x1C\x02\x00\x00\x00"[..])
        );
        assert_eq!(photoshop_resource(&irb, 0x040C), None);
        // A size past the end is no resource.
        irb.truncate(irb.len() - 1);
        assert_eq!(photoshop_resource(&irb, IPTC_RESOURCE), None);
    }

    #[test]
    fn iptc_written_to_a_jpeg_is_read_back_also_over_several_segments() {
        let small = b"\x1C\x02\x19\x00\x03abc".to_vec();
        // Over a segment: 300 captions of 250 bytes.
        let mut large = Vec::new();
        for i in 0..300u32 {
            large.extend_from_slice(&[0x1C, 2, 120, 0, 250]);
            large.extend((0..250).map(|k| b'a' + ((i + k) % 26) as u8));
        }
        for records in [small, large] {
            let blobs = Blobs {
                iptc: Some(&records),
                ..Blobs::default()
            };
            let mut notes = Vec::new();
            let out = super::jpeg(b"\xFF\xD8\xFF\xD9".to_vec(), blobs, &mut notes).unwrap();
            assert!(notes.is_empty(), "{notes:?}");
            let read = jpeg_iptc(&mut super::super::ifd::Reader(&mut std::io::Cursor::new(
                &out,
            )));
            assert_eq!(
                read.as_deref(),
                Some(&records[..]),
                "{} bytes",
                records.len()
            );
        }
    }
}
