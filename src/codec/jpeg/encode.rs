//! JPEG output on every core a caller's thread pool has. Baseline JPEG lets a decoder restart the entropy coder at
//! restart markers (RSTn), with the DC predictors reset; a file whose restart interval is one
//! horizontal stripe of MCUs is therefore exactly the concatenation of the stripes encoded on
//! their own. Each stripe is encoded by libjpeg (`compress`: standard Huffman tables, the
//! same quantisation tables for a quality, so every stripe's tables are the same), in
//! parallel, and the scans are joined under one header with a DRI marker.

use super::compress::{compress_samples, JpegColor, Written};
use super::settings::JpegSettings;
use rayon::prelude::*;
use std::io::{self, Write};

/// MCU rows per stripe: 128 pixel rows at full chroma, 256 at 4:2:0; 16 stripes for a 2000-row
/// photo, enough to keep 16 threads busy, each stripe costing one restart marker and one copy
/// of its bytes into the joined file.
const STRIPE_MCU_ROWS: usize = 16;

/// Encodes `width`×`height` samples at `settings`' quality (1-100) with colour in its chroma
/// layout, with `icc` embedded if given.
pub fn encode(
    data: &[u8],
    (width, height): (u32, u32),
    color: JpegColor,
    settings: JpegSettings,
    icc: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let plan = StripePlan::new((width, height), color.mcu(settings.chroma))?;
    let row_bytes = width as usize * color.channels();
    assert_eq!(data.len(), row_bytes * height as usize, "image buffer size");
    encode_stripes(&plan, |r0, r1| {
        let rows = &data[r0 * row_bytes..r1 * row_bytes];
        encode_stripe(rows, width, color, settings, icc.filter(|_| r0 == 0))
    })
}

/// One stripe of rows (whole rows of `width` samples) as a JPEG of its own, with `icc`
/// embedded if given.
pub fn encode_stripe(
    rows: &[u8],
    width: u32,
    color: JpegColor,
    settings: JpegSettings,
    icc: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let JpegSettings { quality, chroma } = settings;
    let (luma_factors, adobe_marker) = match color {
        JpegColor::Gray => ((1, 1), false),
        JpegColor::Rgb => (chroma.factors(), false),
        JpegColor::Cmyk { adobe_marker } => ((1, 1), adobe_marker),
    };
    let luma_factors = (luma_factors.0 as u8, luma_factors.1 as u8);
    let how = Written {
        quality,
        luma_factors,
        adobe_marker,
        icc,
    };
    compress_samples(rows, width, color, how)
}

/// How an image is cut into stripes of whole MCU rows, each encoded on its own.
pub struct StripePlan {
    height: u32,
    /// Image rows per stripe (a multiple of the MCU's height).
    rows_per_stripe: usize,
    stripes: usize,
    /// MCUs per stripe: the restart interval.
    interval: u16,
}

impl StripePlan {
    /// Stripes of an image of `width`×`height` pixels in MCUs of `mcu` pixels:
    /// `STRIPE_MCU_ROWS` MCU rows each (fewer where a 16-bit restart interval needs it),
    /// whatever the number of threads, so that the file's bytes are the same on every
    /// machine and in every batch lane (a lane encodes its stripes on one thread, the main
    /// command on all of them).
    pub fn new((width, height): (u32, u32), (mcu_w, mcu_h): (u32, u32)) -> Result<Self, String> {
        let too_big = |v: u32| v == 0 || v > u16::MAX as u32;
        if too_big(width) || too_big(height) {
            return Err(format!(
                "JPEG holds 1 to 65535 pixels per side, not {width}×{height}"
            ));
        }
        let mcus_per_row = width.div_ceil(mcu_w) as usize;
        let mcu_rows = height.div_ceil(mcu_h) as usize;
        let mcu_rows_per_stripe = STRIPE_MCU_ROWS
            .min(u16::MAX as usize / mcus_per_row)
            .clamp(1, mcu_rows);
        let rows_per_stripe = mcu_rows_per_stripe * mcu_h as usize;
        Ok(StripePlan {
            height,
            rows_per_stripe,
            stripes: (height as usize).div_ceil(rows_per_stripe),
            interval: (mcu_rows_per_stripe * mcus_per_row) as u16,
        })
    }

    /// Image rows per stripe: every stripe's but the last's.
    pub fn rows_per_stripe(&self) -> usize {
        self.rows_per_stripe
    }

    /// A joiner that writes this plan's stripes into `out` as they come.
    pub fn joiner<W: Write>(&self, out: W) -> StripeJoiner<W> {
        StripeJoiner {
            out,
            height: self.height as u16,
            interval: self.interval,
            tables: None,
            joined: 0,
        }
    }
}

/// Encodes every stripe of `plan` with `one(first_row, end_row)` (a whole JPEG of those rows;
/// only the first stripe's header extras, such as an ICC profile, are kept), in parallel, and
/// joins them into one file.
pub fn encode_stripes(
    plan: &StripePlan,
    one: impl Fn(usize, usize) -> Result<Vec<u8>, String> + Sync,
) -> Result<Vec<u8>, String> {
    let rows = |i: usize| {
        let r0 = i * plan.rows_per_stripe;
        (r0, (r0 + plan.rows_per_stripe).min(plan.height as usize))
    };
    if plan.stripes == 1 {
        return one(0, plan.height as usize);
    }
    let parts = (0..plan.stripes)
        .into_par_iter()
        .map(|i| {
            let (r0, r1) = rows(i);
            one(r0, r1)
        })
        .collect::<Result<Vec<_>, _>>()?;
    join(&parts, plan)
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
/// Extended sequential: what the encoder writes where a quality below about 25 needs 16-bit
/// quantisation tables.
const SOF1: u8 = 0xC1;
const DHT: u8 = 0xC4;
const DQT: u8 = 0xDB;
const SOS: u8 = 0xDA;

/// Writes stripe JPEGs, in order and as they come, as one file: the first stripe's header
/// with the full height and a restart interval of one stripe, then every stripe's scan with
/// RSTn between them, then EOI (`finish`).
pub struct StripeJoiner<W> {
    out: W,
    height: u16,
    interval: u16,
    /// The first stripe's quantisation and Huffman tables, which every stripe must share.
    tables: Option<Vec<Vec<u8>>>,
    joined: usize,
}

impl<W: Write> StripeJoiner<W> {
    /// Writes the next stripe (a whole JPEG from `encode_stripe`).
    pub fn push(&mut self, part: &[u8]) -> io::Result<()> {
        let (head, scan) = split(part).map_err(io::Error::other)?;
        let tables: Vec<Vec<u8>> = head
            .iter()
            .filter(|s| s.marker == DQT || s.marker == DHT)
            .map(|s| s.bytes.to_vec())
            .collect();
        match &self.tables {
            None => {
                self.out.write_all(&[0xFF, 0xD8])?;
                for s in &head {
                    if s.marker == SOS {
                        self.out.write_all(&[0xFF, 0xDD, 0, 4])?;
                        self.out.write_all(&self.interval.to_be_bytes())?;
                    }
                    if s.marker == SOF0 || s.marker == SOF1 {
                        // FF C0, length, precision, then the height.
                        let mut sof = s.bytes.to_vec();
                        sof[5..7].copy_from_slice(&self.height.to_be_bytes());
                        self.out.write_all(&sof)?;
                    } else {
                        self.out.write_all(s.bytes)?;
                    }
                }
                self.tables = Some(tables);
            }
            Some(first) if *first != tables => {
                return Err(io::Error::other(
                    "stripes were encoded with different tables",
                ))
            }
            Some(_) => {
                let rst = 0xD0 + ((self.joined - 1) % 8) as u8;
                self.out.write_all(&[0xFF, rst])?;
            }
        }
        self.out.write_all(scan)?;
        self.joined += 1;
        Ok(())
    }

    /// Ends the file; returns where it went.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&[0xFF, 0xD9])?;
        Ok(self.out)
    }
}

/// Joins stripe JPEGs into one file (`StripeJoiner`).
fn join(parts: &[Vec<u8>], plan: &StripePlan) -> Result<Vec<u8>, String> {
    let total: usize = parts.iter().map(Vec::len).sum();
    let mut joiner = plan.joiner(Vec::with_capacity(total + 16 * parts.len()));
    parts
        .iter()
        .try_for_each(|p| joiner.push(p))
        .and_then(|()| joiner.finish())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::jpeg::Chroma;

    fn settings(quality: u8, chroma: Chroma) -> JpegSettings {
        JpegSettings { quality, chroma }
    }

    fn pattern(w: u32, h: u32, c: usize) -> Vec<u8> {
        (0..w as usize * h as usize * c)
            .map(|i| ((i * 7 + i / 13 * 3) % 251) as u8)
            .collect()
    }

    fn decode(jpeg: &[u8]) -> image::DynamicImage {
        crate::codec::jpeg::decode_pixels(jpeg, u64::MAX)
            .expect("decodes")
            .expect("8-bit")
    }

    /// The joined file decodes to what one encoder writing the whole image gives.
    #[test]
    fn stripes_decode_like_one_encode() {
        for (w, h) in [(1, 1), (17, 33), (300, 97), (64, 1000), (1000, 64)] {
            for (color, c) in [(JpegColor::Rgb, 3), (JpegColor::Gray, 1)] {
                for q in [75, 90] {
                    let data = pattern(w, h, c);
                    let chroma = if q == 75 { Chroma::S420 } else { Chroma::S422 };
                    let joined = encode(&data, (w, h), color, settings(q, chroma), None).unwrap();
                    let whole = encode_stripe(&data, w, color, settings(q, chroma), None).unwrap();
                    let (a, b) = (decode(&joined), decode(&whole));
                    assert_eq!((a.width(), a.height()), (w, h));
                    assert_eq!(a, b, "{w}x{h} {color:?} q{q}");
                }
            }
        }
    }

    /// Low qualities write 16-bit tables under an SOF1 header, whose height is the whole
    /// image's too.
    #[test]
    fn low_qualities_keep_the_full_height() {
        let data = pattern(32, 600, 3);
        for q in [1, 7, 20, 30] {
            let joined = encode(
                &data,
                (32, 600),
                JpegColor::Rgb,
                settings(q, Chroma::S420),
                None,
            )
            .unwrap();
            assert!(joined.windows(2).any(|w| w == [0xFF, 0xDD]), "striped");
            assert_eq!(
                (decode(&joined).width(), decode(&joined).height()),
                (32, 600),
                "q{q}"
            );
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
            pool.install(|| {
                encode(
                    &data,
                    (300, 700),
                    JpegColor::Rgb,
                    settings(90, Chroma::S420),
                    None,
                )
                .unwrap()
            })
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
        let jpeg = encode(
            &data,
            (40, 200),
            JpegColor::Rgb,
            settings(80, Chroma::S420),
            Some(&icc),
        )
        .unwrap();
        let app2 = jpeg.windows(12).filter(|w| w == b"ICC_PROFILE\0").count();
        assert_eq!(app2, 1);
        use image::ImageDecoder as _;
        let mut d = crate::codec::jpeg::JpegHead::of_file(&jpeg).unwrap();
        assert_eq!(d.icc_profile().unwrap(), Some(icc));
    }

    #[test]
    fn sides_beyond_jpeg_limits_are_refused() {
        assert!(encode(
            &[],
            (0, 5),
            JpegColor::Gray,
            settings(90, Chroma::S444),
            None
        )
        .is_err());
        assert!(encode(
            &[],
            (70000, 1),
            JpegColor::Gray,
            settings(90, Chroma::S444),
            None
        )
        .is_err());
    }
}
