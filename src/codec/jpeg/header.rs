//! What a JPEG's header says about how it was written: its chroma subsampling (from the frame's
//! sampling factors) and the quality its quantisation tables were scaled for. `--subsampling
//! same` and `--quality same` write the output the same way.

use super::compress::Chroma;

/// How a JPEG was written, as far as its header tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct JpegTraits {
    /// The chroma layout of a three-component file whose layout gblur can write; None for
    /// gray, CMYK and unusual factors (4:1:1, 4:4:0, ...).
    pub chroma: Option<Chroma>,
    /// The IJG quality (1-100) whose scaled standard luminance table is nearest to the file's
    /// own; None where the file has no 8-bit luminance table.
    pub quality: Option<u8>,
    /// The frame's component count: 1 gray, 3 YCbCr, 4 CMYK or YCCK (0: no frame header read).
    pub components: u8,
    /// The transform byte of an Adobe APP14 segment, where the file has one (0: RGB or CMYK
    /// as they are, 1: YCbCr, 2: YCCK). Its presence also says that four-component samples
    /// are stored inverted (255 is no ink), as Photoshop and libjpeg write them.
    pub adobe: Option<u8>,
}

/// The standard luminance quantisation table (ITU-T T.81, Annex K.1), in zigzag order as
/// DQT segments store it.
const STD_LUMINANCE_ZIGZAG: [u16; 64] = [
    16, 11, 12, 14, 12, 10, 16, 14, 13, 14, 18, 17, 16, 19, 24, 40, 26, 24, 22, 22, 24, 49, 35, 37,
    29, 40, 58, 51, 61, 60, 57, 51, 56, 55, 64, 72, 92, 78, 64, 68, 87, 69, 55, 56, 80, 109, 81,
    87, 95, 98, 103, 104, 103, 62, 77, 113, 121, 112, 100, 120, 92, 101, 103, 99,
];

/// The standard table scaled for `quality` as libjpeg scales it (`jpeg_quality_scaling`),
/// entries clamped to 1..=`max` (255 for 8-bit tables, 32767 for 16-bit ones).
fn scaled_table(quality: u8, max: u32) -> [u16; 64] {
    let q = quality.clamp(1, 100) as u32;
    let scale = if q < 50 { 5000 / q } else { 200 - 2 * q };
    STD_LUMINANCE_ZIGZAG.map(|v| ((v as u32 * scale + 50) / 100).clamp(1, max) as u16)
}

/// The quality whose scaled table is nearest `table` (sum of absolute differences); a file
/// written by libjpeg, libjpeg-turbo, mozjpeg's baseline or Pillow gives its exact setting.
pub fn estimate_quality(table: &[u16; 64]) -> u8 {
    let max = if table.iter().any(|&v| v > 255) {
        32767
    } else {
        255
    };
    let distance = |q: u8| -> u32 {
        scaled_table(q, max)
            .iter()
            .zip(table)
            .map(|(a, b)| a.abs_diff(*b) as u32)
            .sum()
    };
    // Ties go to the higher quality: two settings share a table only where both clamp to 1.
    (1..=100u8).rev().min_by_key(|&q| distance(q)).unwrap_or(90)
}

impl JpegTraits {
    /// Reads the header segments up to the first scan; a header it cannot walk gives the
    /// default (nothing known), and the decoder then says what is wrong with the file.
    pub fn read(bytes: &[u8]) -> JpegTraits {
        let mut traits = JpegTraits::default();
        if bytes.len() < 4 || bytes[..2] != [0xFF, 0xD8] {
            return traits;
        }
        for (marker, body) in segments(bytes) {
            match marker {
                0xDB => traits.quality = traits.quality.or_else(|| luminance_quality(body)),
                0xC0..=0xC2 => {
                    traits.chroma = chroma_of(body);
                    traits.components = body.get(5).copied().unwrap_or(0);
                }
                0xEE if body.len() >= 12 && body.starts_with(b"Adobe") => {
                    traits.adobe = Some(body[11]);
                }
                0xDA => break,
                _ => {}
            }
        }
        traits
    }
}

/// What a JPEG's frame header (its SOF segment) says: the image's size, its components and
/// its sample precision in bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub components: u8,
    pub precision: u8,
}

impl Frame {
    /// Walks `reader`'s segments up to the first frame header, skipping every other
    /// segment's body unread: a file's pixels and anything after them (a motion photo's video)
    /// are never read. None where the segments cannot be walked to a frame header.
    pub fn read(reader: &mut (impl std::io::Read + std::io::Seek)) -> Option<Frame> {
        use std::io::SeekFrom;
        let mut two = [0u8; 2];
        reader.read_exact(&mut two).ok()?;
        if two != [0xFF, 0xD8] {
            return None;
        }
        loop {
            reader.read_exact(&mut two).ok()?;
            if two[0] != 0xFF {
                return None;
            }
            let mut marker = two[1];
            while marker == 0xFF {
                // Fill bytes before the marker.
                reader.read_exact(&mut two[..1]).ok()?;
                marker = two[0];
            }
            if matches!(marker, 0x01 | 0xD0..=0xD7) {
                continue; // TEM and a stray RST have no length, as libjpeg reads them
            }
            reader.read_exact(&mut two).ok()?;
            let len = u16::from_be_bytes(two) as i64;
            match marker {
                _ if is_frame(marker) => {
                    let mut body = [0u8; 6];
                    reader.read_exact(&mut body).ok()?;
                    return Some(Frame {
                        precision: body[0],
                        height: u16::from_be_bytes([body[1], body[2]]) as u32,
                        width: u16::from_be_bytes([body[3], body[4]]) as u32,
                        components: body[5],
                    });
                }
                0xDA | 0xD9 => return None,
                _ if len < 2 => return None,
                _ => {
                    reader.seek(SeekFrom::Current(len - 2)).ok()?;
                }
            }
        }
    }
}

/// Whether a JPEG's header segments (from its start) open a progressive frame (SOF2, SOF6, SOF10,
/// SOF14).
pub fn is_progressive(head: &[u8]) -> bool {
    segments(head)
        .map(|(marker, _)| marker)
        .take_while(|&marker| marker != 0xDA)
        .any(|marker| matches!(marker, 0xC2 | 0xC6 | 0xCA | 0xCE))
}

/// Whether `marker` starts a frame header: every SOF but the DHT (C4), JPG (C8) and DAC (CC)
/// markers in its range.
pub(super) fn is_frame(marker: u8) -> bool {
    matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC)
}

/// The segments (marker, body) of `head` from its start-of-image marker on; the walk stops
/// at a segment that runs past the end.
pub(super) fn segments(head: &[u8]) -> impl Iterator<Item = (u8, &[u8])> {
    let mut at = 2;
    std::iter::from_fn(move || {
        while head.get(at..at + 2)? == [0xFF, 0xFF] {
            at += 1; // a fill byte
        }
        let (&[0xFF, marker], rest) = (head.get(at..at + 2)?, &head[at + 2..]) else {
            return None;
        };
        if matches!(marker, 0x01 | 0xD0..=0xD7) {
            at += 2;
            return Some((marker, &[][..]));
        }
        let len = u16::from_be_bytes([*rest.first()?, *rest.get(1)?]) as usize;
        let body = rest.get(2..len.max(2))?;
        at += 2 + len.max(2);
        Some((marker, body))
    })
}

/// The quality of table 0 in a DQT segment's body (8- or 16-bit entries), if it holds it.
fn luminance_quality(mut body: &[u8]) -> Option<u8> {
    while let Some(&pq_tq) = body.first() {
        let wide = pq_tq >> 4 == 1;
        let size = 1 + 64 * (1 + wide as usize);
        let table = body.get(1..size)?;
        if pq_tq & 0x0F == 0 {
            let mut entries = [0u16; 64];
            for (i, e) in entries.iter_mut().enumerate() {
                *e = match wide {
                    true => u16::from_be_bytes([table[2 * i], table[2 * i + 1]]),
                    false => table[i] as u16,
                };
            }
            return Some(estimate_quality(&entries));
        }
        body = &body[size..];
    }
    None
}

/// The chroma layout of an SOF body: three components, luma's factors over both chroma
/// components' factors of 1.
fn chroma_of(body: &[u8]) -> Option<Chroma> {
    if body.len() < 6 || body[0] != 8 || body[5] != 3 || body.len() < 6 + 9 {
        return None;
    }
    let factors = |c: usize| {
        let hv = body[6 + 3 * c + 1];
        (hv >> 4, hv & 0x0F)
    };
    if factors(1) != (1, 1) || factors(2) != (1, 1) {
        return None;
    }
    match factors(0) {
        (1, 1) => Some(Chroma::S444),
        (2, 1) => Some(Chroma::S422),
        (2, 2) => Some(Chroma::S420),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::jpeg::compress::{compress_samples, Written};
    use crate::codec::jpeg::JpegColor;

    /// A 48×32 RGB picture written by libjpeg with luma's sampling `factors`.
    fn written(quality: u8, factors: (u8, u8)) -> Vec<u8> {
        let rgb: Vec<u8> = (0..48 * 32 * 3).map(|i| (i * 37 % 251) as u8).collect();
        let how = Written {
            quality,
            luma_factors: factors,
            adobe_marker: false,
            icc: None,
        };
        compress_samples(&rgb, 48, JpegColor::Rgb, how).unwrap()
    }

    fn gray() -> Vec<u8> {
        let how = Written {
            quality: 75,
            luma_factors: (1, 1),
            adobe_marker: false,
            icc: None,
        };
        compress_samples(&[7u8; 64], 8, JpegColor::Gray, how).unwrap()
    }

    const S444: (u8, u8) = (1, 1);
    const S422: (u8, u8) = (2, 1);
    const S420: (u8, u8) = (2, 2);

    #[test]
    fn reads_the_quality_and_layout_a_file_was_written_with() {
        for q in [1, 7, 10, 24, 49, 50, 51, 75, 85, 90, 95, 100] {
            for (sub, chroma) in [
                (S444, Chroma::S444),
                (S422, Chroma::S422),
                (S420, Chroma::S420),
            ] {
                let traits = JpegTraits::read(&written(q, sub));
                assert_eq!(traits.chroma, Some(chroma), "q{q} {sub:?}");
                let got = traits.quality.unwrap();
                // Near 100 several settings clamp to the same table of ones.
                assert!(got == q || (q >= 98 && got >= 98), "q{q}: read {got}");
            }
        }
    }

    /// A stray restart marker before the frame has no length, as libjpeg reads it: the frame
    /// after it is found.
    #[test]
    fn a_stray_restart_marker_before_the_frame_is_stepped_over() {
        let file = written(80, (2, 2));
        let sof = file.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let stray = [&file[..sof], &[0xFF, 0xD3][..], &file[sof..]].concat();
        let frame = Frame::read(&mut std::io::Cursor::new(&stray)).expect("the frame");
        assert_eq!((frame.width, frame.height, frame.components), (48, 32, 3));
    }

    #[test]
    fn gray_unusual_and_damaged_headers_say_nothing_of_chroma() {
        assert_eq!(JpegTraits::read(&gray()).chroma, None);
        assert_eq!(JpegTraits::read(&written(80, (4, 1))).chroma, None);
        for cut in [0, 3, 10, 30] {
            let bytes = written(80, S420);
            let t = JpegTraits::read(&bytes[..cut]);
            assert_eq!(t.chroma, None, "cut at {cut}");
        }
        assert_eq!(JpegTraits::read(b"not a jpeg"), JpegTraits::default());
    }

    #[test]
    fn the_frame_is_found_without_reading_the_scan_or_a_trailer() {
        let mut file = written(80, S420);
        let scan = file.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        file.extend(std::iter::repeat_n(0u8, 1 << 16));
        let mut reader = std::io::Cursor::new(&file[..]);
        let frame = Frame::read(&mut reader).unwrap();
        let expected = Frame {
            width: 48,
            height: 32,
            components: 3,
            precision: 8,
        };
        assert_eq!(frame, expected);
        assert!(
            reader.position() < scan as u64,
            "read to {}",
            reader.position()
        );
        let frame = Frame::read(&mut std::io::Cursor::new(&gray()[..])).unwrap();
        assert_eq!((frame.width, frame.components), (8, 1));
        for cut in [0, 3, 10, 30] {
            let bytes = written(80, S420);
            assert_eq!(Frame::read(&mut std::io::Cursor::new(&bytes[..cut])), None);
        }
        assert_eq!(
            Frame::read(&mut std::io::Cursor::new(&b"not a jpeg"[..])),
            None
        );
    }
}
