//! JPEG output on every core a caller's thread pool has. Baseline JPEG lets a decoder restart the entropy coder at
//! restart markers (RSTn), with the DC predictors reset; a file whose restart interval is one
//! horizontal stripe of MCUs is therefore exactly the concatenation of the stripes encoded on
//! their own. Each stripe is encoded by `libjpeg-turbo-rs` (standard Huffman tables, the
//! same quantisation tables for a quality, so every stripe's tables are the same), in
//! parallel, and the scans are joined under one header with a DRI marker.

use libjpeg_turbo_rs::{Encoder, PixelFormat, Subsampling};
use rayon::prelude::*;

/// MCU rows per stripe: 128 pixel rows at full chroma, 256 at 4:2:0; 16 stripes for a 2000-row
/// photo, enough to keep 16 threads busy, each stripe costing one restart marker and one copy
/// of its bytes into the joined file.
const STRIPE_MCU_ROWS: usize = 16;

/// Colour layouts this encoder writes: the two JPEG holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JpegColor {
    Gray,
    Rgb,
}

impl JpegColor {
    fn channels(self) -> usize {
        match self {
            JpegColor::Gray => 1,
            JpegColor::Rgb => 3,
        }
    }
}

/// Encodes `width`×`height` samples at `quality` (1-100), with `icc` embedded if given.
/// Chroma is subsampled 4:2:0 below quality 90 and kept whole from 90 up (as libvips does).
pub fn encode(
    data: &[u8],
    (width, height): (u32, u32),
    color: JpegColor,
    quality: u8,
    icc: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let too_big = |v: u32| v == 0 || v > u16::MAX as u32;
    if too_big(width) || too_big(height) {
        return Err(format!(
            "JPEG holds 1 to 65535 pixels per side, not {width}×{height}"
        ));
    }
    let row_bytes = width as usize * color.channels();
    assert_eq!(data.len(), row_bytes * height as usize, "image buffer size");
    let subsampled = color == JpegColor::Rgb && quality < 90;
    let (mcu_w, mcu_h) = if subsampled { (16, 16) } else { (8, 8) };
    let mcus_per_row = width.div_ceil(mcu_w) as usize;
    let mcu_rows = height.div_ceil(mcu_h) as usize;
    // Stripes of a fixed height, whatever the number of threads: the file's bytes are the
    // same on every machine and in every batch lane (a lane of a batch encodes its stripes on
    // one thread, the main command on all of them).
    let mcu_rows_per_stripe = STRIPE_MCU_ROWS
        .min(u16::MAX as usize / mcus_per_row)
        .clamp(1, mcu_rows);
    let rows_per_stripe = mcu_rows_per_stripe * mcu_h as usize;
    let stripes = (height as usize).div_ceil(rows_per_stripe);

    let (pixel_format, subsampling) = match color {
        JpegColor::Gray => (PixelFormat::Grayscale, Subsampling::S444),
        JpegColor::Rgb if subsampled => (PixelFormat::Rgb, Subsampling::S420),
        JpegColor::Rgb => (PixelFormat::Rgb, Subsampling::S444),
    };
    let one = |i: usize| -> Result<Vec<u8>, String> {
        let r0 = i * rows_per_stripe;
        let r1 = (r0 + rows_per_stripe).min(height as usize);
        let rows = &data[r0 * row_bytes..r1 * row_bytes];
        let mut enc = Encoder::new(rows, width as usize, r1 - r0, pixel_format)
            .quality(quality)
            .subsampling(subsampling);
        if let (0, Some(p)) = (i, icc) {
            enc = enc.icc_profile(p);
        }
        enc.encode().map_err(|e| e.to_string())
    };
    if stripes == 1 {
        return one(0);
    }
    let parts = (0..stripes)
        .into_par_iter()
        .map(one)
        .collect::<Result<Vec<_>, _>>()?;
    let interval = (rows_per_stripe / mcu_h as usize * mcus_per_row) as u16;
    join(&parts, height as u16, interval)
}

/// A marker segment of a JPEG header: its marker byte and its whole bytes.
struct Segment<'a> {
    marker: u8,
    bytes: &'a [u8],
}

/// Splits a baseline JPEG into its header segments (up to and including SOS) and the
/// entropy-coded scan that follows, without the final EOI.
fn split(jpeg: &[u8]) -> Result<(Vec<Segment<'_>>, &[u8]), String> {
    let bad = || "the stripe encoder wrote an unexpected JPEG layout".to_string();
    if jpeg.len() < 4 || jpeg[..2] != [0xFF, 0xD8] || jpeg[jpeg.len() - 2..] != [0xFF, 0xD9] {
        return Err(bad());
    }
    let mut segments = Vec::new();
    let mut at = 2;
    loop {
        if at + 4 > jpeg.len() || jpeg[at] != 0xFF {
            return Err(bad());
        }
        let marker = jpeg[at + 1];
        let len = u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]) as usize;
        let end = at + 2 + len;
        if end > jpeg.len() {
            return Err(bad());
        }
        segments.push(Segment {
            marker,
            bytes: &jpeg[at..end],
        });
        at = end;
        if marker == 0xDA {
            return Ok((segments, &jpeg[at..jpeg.len() - 2]));
        }
    }
}

const SOF0: u8 = 0xC0;
const DHT: u8 = 0xC4;
const DQT: u8 = 0xDB;
const SOS: u8 = 0xDA;

/// Joins stripe JPEGs into one file: the first stripe's header with the full height and a
/// restart interval of one stripe, then every stripe's scan with RSTn between them.
fn join(parts: &[Vec<u8>], height: u16, interval: u16) -> Result<Vec<u8>, String> {
    let (head, first_scan) = split(&parts[0])?;
    let tables = |segs: &[Segment]| -> Vec<Vec<u8>> {
        segs.iter()
            .filter(|s| s.marker == DQT || s.marker == DHT)
            .map(|s| s.bytes.to_vec())
            .collect()
    };
    let first_tables = tables(&head);
    let mut scans = vec![first_scan];
    for p in &parts[1..] {
        let (h, scan) = split(p)?;
        if tables(&h) != first_tables {
            return Err("stripes were encoded with different tables".into());
        }
        scans.push(scan);
    }
    let total: usize = parts.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(total + 16 * parts.len());
    out.extend_from_slice(&[0xFF, 0xD8]);
    for s in &head {
        if s.marker == SOS {
            out.extend_from_slice(&[0xFF, 0xDD, 0, 4]);
            out.extend_from_slice(&interval.to_be_bytes());
        }
        let start = out.len();
        out.extend_from_slice(s.bytes);
        if s.marker == SOF0 {
            // FF C0, length, precision, then the height.
            out[start + 5..start + 7].copy_from_slice(&height.to_be_bytes());
        }
    }
    for (i, scan) in scans.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(&[0xFF, 0xD0 + ((i - 1) % 8) as u8]);
        }
        out.extend_from_slice(scan);
    }
    out.extend_from_slice(&[0xFF, 0xD9]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(w: u32, h: u32, c: usize) -> Vec<u8> {
        (0..w as usize * h as usize * c)
            .map(|i| ((i * 7 + i / 13 * 3) % 251) as u8)
            .collect()
    }

    fn decode(jpeg: &[u8]) -> image::DynamicImage {
        image::load_from_memory_with_format(jpeg, image::ImageFormat::Jpeg).expect("decodes")
    }

    /// The joined file decodes to what one encoder writing the whole image gives.
    #[test]
    fn stripes_decode_like_one_encode() {
        for (w, h) in [(1, 1), (17, 33), (300, 97), (64, 1000), (1000, 64)] {
            for (color, c) in [(JpegColor::Rgb, 3), (JpegColor::Gray, 1)] {
                for q in [75, 90] {
                    let data = pattern(w, h, c);
                    let joined = encode(&data, (w, h), color, q, None).unwrap();
                    let (format, sub) = match (c, q) {
                        (1, _) => (PixelFormat::Grayscale, Subsampling::S444),
                        (_, 75) => (PixelFormat::Rgb, Subsampling::S420),
                        _ => (PixelFormat::Rgb, Subsampling::S444),
                    };
                    let whole = Encoder::new(&data, w as usize, h as usize, format)
                        .quality(q)
                        .subsampling(sub)
                        .encode()
                        .unwrap();
                    let (a, b) = (decode(&joined), decode(&whole));
                    assert_eq!((a.width(), a.height()), (w, h));
                    assert_eq!(a, b, "{w}x{h} {color:?} q{q}");
                }
            }
        }
    }

    /// The same bytes whatever the number of threads encoding it.
    #[test]
    fn bytes_do_not_depend_on_the_thread_count() {
        let data = pattern(300, 700, 3);
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| encode(&data, (300, 700), JpegColor::Rgb, 90, None).unwrap())
        };
        let one = on(1);
        assert!(one.windows(2).any(|w| w == [0xFF, 0xDD]), "striped");
        assert_eq!(one, on(3));
        assert_eq!(one, on(8));
    }

    #[test]
    fn icc_profile_is_embedded_once() {
        let data = pattern(40, 200, 3);
        let icc = vec![7u8; 300];
        let jpeg = encode(&data, (40, 200), JpegColor::Rgb, 80, Some(&icc)).unwrap();
        let app2 = jpeg.windows(12).filter(|w| w == b"ICC_PROFILE\0").count();
        assert_eq!(app2, 1);
        use image::ImageDecoder as _;
        let mut d = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(&jpeg)).unwrap();
        assert_eq!(d.icc_profile().unwrap(), Some(icc));
    }

    #[test]
    fn sides_beyond_jpeg_limits_are_refused() {
        assert!(encode(&[], (0, 5), JpegColor::Gray, 90, None).is_err());
        assert!(encode(&[], (70000, 1), JpegColor::Gray, 90, None).is_err());
    }
}
