//! EXIF in a PNG where the `image` crate does not look: an eXIf chunk after the pixels (the
//! PNG specification allows it anywhere before IEND; `image` reads chunks before the first
//! IDAT only), and the text chunks that ImageMagick and older tools wrote before eXIf existed:
//! a tEXt or zTXt chunk `Raw profile type exif` (or `... APP1`) whose text is a newline, the
//! profile's name, its length in bytes, and the bytes in hexadecimal, wrapped at 72 digits.

use super::ifd::Source;
use std::io::Read;

/// The most bytes a text chunk may take to be looked at: far above any real EXIF.
const MAX_CHUNK: u32 = 8 << 20;

/// The EXIF the `image` crate does not read from the PNG `src`: the first eXIf chunk after
/// the pixels, else the first `Raw profile type exif|APP1` text chunk before them, as bytes
/// (possibly with JPEG's `Exif\0\0` prefix, which the caller strips); None if there is none.
/// An eXIf before the pixels is the decoder's to read.
pub fn read_exif(src: &mut impl Source) -> Option<Vec<u8>> {
    let mut at = 8u64;
    let mut pixels_seen = false;
    let mut legacy = None;
    // Chunk headers only: the pixels are skipped by their lengths.
    while let Some(head) = src.read_at(at, 8) {
        let len = u32::from_be_bytes(head[..4].try_into().ok()?);
        let kind = &head[4..8];
        match kind {
            b"IEND" => break,
            b"IDAT" => pixels_seen = true,
            b"eXIf" if pixels_seen && len <= MAX_CHUNK => {
                if let Some(exif) = src.read_at(at + 8, len as usize) {
                    return Some(exif);
                }
            }
            b"tEXt" | b"zTXt" if !pixels_seen && legacy.is_none() && len <= MAX_CHUNK => {
                let data = src.read_at(at + 8, len as usize)?;
                legacy = raw_profile(&data, kind == b"zTXt");
            }
            _ => {}
        }
        at += 12 + len as u64;
    }
    legacy
}

/// The profile bytes of one text chunk's data, if it is a raw EXIF profile.
fn raw_profile(data: &[u8], compressed: bool) -> Option<Vec<u8>> {
    let nul = data.iter().position(|&b| b == 0)?;
    let keyword = &data[..nul];
    if keyword != b"Raw profile type exif" && keyword != b"Raw profile type APP1" {
        return None;
    }
    let text = if compressed {
        // A compression method byte (0: zlib), then the zlib stream.
        let mut out = Vec::new();
        flate2::read::ZlibDecoder::new(data.get(nul + 2..)?)
            .take(MAX_CHUNK as u64 * 2)
            .read_to_end(&mut out)
            .ok()?;
        out
    } else {
        data[nul + 1..].to_vec()
    };
    let text = std::str::from_utf8(&text).ok()?;
    let mut lines = text.trim_start().splitn(3, '\n');
    let _name = lines.next()?;
    let len: usize = lines.next()?.trim().parse().ok()?;
    let digits: Vec<u8> = lines
        .next()?
        .bytes()
        .filter(u8::is_ascii_hexdigit)
        .collect();
    let hex = |d: u8| (d as char).to_digit(16).expect("filtered to hex digits") as u8;
    let bytes: Vec<u8> = digits
        .chunks_exact(2)
        .map(|p| hex(p[0]) << 4 | hex(p[1]))
        .take(len)
        .collect();
    (bytes.len() == len).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &[u8], data: &[u8]) -> Vec<u8> {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        c.extend_from_slice(&[0; 4]);
        c
    }

    #[test]
    fn reads_imagemagick_raw_profiles_plain_and_compressed() {
        let exif = b"Exif\0\0MM\0\x2a\0\0\0\x08\0\0\0\0\0\0".to_vec();
        let hex: String = exif.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "\nexif\n      {}\n{}\n{}\n",
            exif.len(),
            &hex[..20],
            &hex[20..]
        );
        let mut plain = b"Raw profile type exif\0".to_vec();
        plain.extend_from_slice(text.as_bytes());
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, text.as_bytes()).unwrap();
        let mut compressed = b"Raw profile type APP1\0\0".to_vec();
        compressed.extend_from_slice(&z.finish().unwrap());
        for (kind, data) in [(&b"tEXt"[..], plain), (b"zTXt", compressed)] {
            let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
            png.extend(chunk(b"IHDR", &[0; 13]));
            png.extend(chunk(b"tEXt", b"Comment\0hello"));
            png.extend(chunk(kind, &data));
            png.extend(chunk(b"IDAT", &[0; 3]));
            assert_eq!(read_exif(&mut png.as_slice()), Some(exif.clone()));
        }
        // An eXIf after the pixels is read; before them it is the decoder's.
        let exif_chunk = b"II*\0\x08\0\0\0\0\0\0\0\0\0".to_vec();
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend(chunk(b"IHDR", &[0; 13]));
        png.extend(chunk(b"eXIf", b"before"));
        png.extend(chunk(b"IDAT", &[0; 3]));
        png.extend(chunk(b"IDAT", &[0; 5]));
        png.extend(chunk(b"eXIf", &exif_chunk));
        png.extend(chunk(b"IEND", &[]));
        assert_eq!(read_exif(&mut png.as_slice()), Some(exif_chunk));
        // A profile cut short is no profile.
        let short = format!("\nexif\n 99\n{hex}\n");
        let mut data = b"Raw profile type exif\0".to_vec();
        data.extend_from_slice(short.as_bytes());
        assert_eq!(raw_profile(&data, false), None);
    }
}
