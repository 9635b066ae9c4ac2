//! Writing a TIFF in strips of whole rows, for the whole-image encoder and the strip engine
//! alike: gray, gray with alpha, RGB and RGBA, 8 or 16 bits or 32-bit float, uncompressed or
//! compressed (LZW, Deflate, Zstandard), classic or BigTIFF. Every tag is gblur's choice: alpha
//! is declared unassociated (ExtraSamples 2, as gblur writes straight alpha); compressed
//! samples are differenced along each row first (Predictor 2 for integers, 3 for floats, as
//! libtiff and libvips write them: without it a photo's LZW strips come out larger, a float
//! image's larger than uncompressed), and no Predictor tag is written otherwise. Readers that
//! follow the baseline need the resolution tags: 1 pixel per unit, no unit, as the `tiff`
//! crate's own image encoder writes them.

use std::borrow::Cow;
use std::io::{Seek, Write};
use tiff::encoder::{Rational, TiffEncoder, TiffKind};
use tiff::tags::Tag;
use tiff::TiffResult;

/// A sample type a TIFF holds, written in the machine's byte order (which the `tiff` crate's
/// header announces).
pub trait Sample: Copy + Send + Sync + 'static {
    const BITS: u16;
    /// SampleFormat: 1 unsigned integer, 3 IEEE float.
    const FORMAT: u16;
    /// The predictor compressed rows are written with: 2 (horizontal differencing) for
    /// integers, 3 (floating point: byte planes, then differencing) for floats.
    const PREDICTOR: u16;
    /// The samples' bytes, as they lie in memory.
    fn bytes(samples: &[Self]) -> &[u8];
    /// A row's bytes after `PREDICTOR`, `step` samples to a pixel.
    fn predicted(row: &[Self], step: usize) -> Vec<u8>;
}

macro_rules! sample {
    ($t:ty, $bits:expr, $format:expr, $predictor:expr, $predicted:expr) => {
        impl Sample for $t {
            const BITS: u16 = $bits;
            const FORMAT: u16 = $format;
            const PREDICTOR: u16 = $predictor;
            fn predicted(row: &[Self], step: usize) -> Vec<u8> {
                $predicted(row, step)
            }
            fn bytes(samples: &[Self]) -> &[u8] {
                // SAFETY: a slice of plain numbers viewed as its bytes: every byte is
                // initialised, u8 has no alignment, and the length is the slice's size.
                unsafe {
                    std::slice::from_raw_parts(
                        samples.as_ptr().cast::<u8>(),
                        std::mem::size_of_val(samples),
                    )
                }
            }
        }
    };
}

/// Horizontal differencing of integer samples, wrapping as TIFF's Predictor 2 does, as bytes
/// in the machine's order.
macro_rules! differenced {
    ($t:ty) => {
        |row: &[$t], step: usize| {
            let mut out = row.to_vec();
            for i in (step..row.len()).rev() {
                out[i] = row[i].wrapping_sub(row[i - step]);
            }
            <$t as Sample>::bytes(&out).to_vec()
        }
    };
}

/// TIFF's floating-point predictor (3, Adobe's Technical Note 3): each sample's bytes, most
/// significant first, split into byte planes (every sample's first byte, then every second
/// byte, ...), then each byte less the one `step` before it. Exponents and high mantissa
/// bytes of neighbours then match, which plain differencing of the floats' bits would not
/// show a compressor.
fn float_predicted(row: &[f32], step: usize) -> Vec<u8> {
    let n = row.len();
    let mut out = vec![0u8; 4 * n];
    for (i, v) in row.iter().enumerate() {
        for (b, byte) in v.to_be_bytes().into_iter().enumerate() {
            out[b * n + i] = byte;
        }
    }
    for i in (step..out.len()).rev() {
        out[i] = out[i].wrapping_sub(out[i - step]);
    }
    out
}

sample!(u8, 8, 1, 2, differenced!(u8));
sample!(u16, 16, 1, 2, differenced!(u16));
sample!(f32, 32, 3, 3, float_predicted);

/// How strips are compressed (TIFF tag 259).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    None,
    Lzw,
    Deflate,
    Zstd,
}

impl Compression {
    /// The Compression tag's value.
    pub fn tag(self) -> u16 {
        match self {
            Compression::None => 1,
            Compression::Lzw => 5,
            Compression::Deflate => 8,
            Compression::Zstd => 50000,
        }
    }

    /// The compression a file's tag names, where gblur writes it (PackBits, CCITT and JPEG
    /// are read, not written).
    pub fn from_tag(tag: u16) -> Option<Compression> {
        match tag {
            1 => Some(Compression::None),
            5 => Some(Compression::Lzw),
            8 | 32946 => Some(Compression::Deflate),
            50000 if cfg!(feature = "zstd") => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// A strip's samples as the file stores them: where compressed, each row (`row` samples,
    /// `channels` to a pixel) after the sample type's predictor, then compressed.
    fn encode<T: Sample>(
        self,
        strip: &[T],
        (row, channels): (usize, usize),
    ) -> TiffResult<Cow<'_, [u8]>> {
        if self == Compression::None {
            return Ok(Cow::Borrowed(T::bytes(strip)));
        }
        let predicted: Vec<u8> = strip
            .chunks(row.max(1))
            .flat_map(|r| T::predicted(r, channels))
            .collect();
        let bytes = &predicted[..];
        let failed = |e: String| tiff::TiffError::from(std::io::Error::other(e));
        let compressed = match self {
            Compression::Lzw => {
                weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
                    .encode(bytes)
                    .map_err(|e| failed(format!("LZW: {e}")))
            }
            Compression::Deflate => {
                use std::io::Write;
                let mut z =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
                z.write_all(bytes)?;
                Ok(z.finish()?)
            }
            #[cfg(feature = "zstd")]
            Compression::Zstd => {
                zstd::bulk::compress(bytes, 3).map_err(|e| failed(format!("Zstandard: {e}")))
            }
            // `TiffCompression::parse` and `from_tag` give no Zstandard without the feature.
            #[cfg(not(feature = "zstd"))]
            Compression::Zstd => Err(failed(super::ZSTD_MISSING.into())),
            Compression::None => unreachable!("returned above"),
        };
        compressed.map(Cow::Owned)
    }

    /// The Predictor tag compressed `T` samples are written with; None uncompressed.
    fn predictor<T: Sample>(self) -> Option<u16> {
        (self != Compression::None).then_some(T::PREDICTOR)
    }
}

/// What the image is: its size, samples per pixel (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA or,
/// with `inks`, CMYK) and ICC profile.
#[derive(Clone, Copy, Debug)]
pub struct Layout<'a> {
    pub width: u32,
    pub height: u32,
    pub channels: u16,
    pub icc: Option<&'a [u8]>,
    pub compression: Compression,
    /// Four samples are cyan, magenta, yellow and black ink (Separated, InkSet CMYK), not RGBA.
    pub inks: bool,
}

impl Layout<'_> {
    /// Samples in a row.
    pub fn row(&self) -> usize {
        self.width as usize * self.channels as usize
    }

    /// Rows per strip for strips of about `bytes` bytes of `T` samples.
    pub fn rows_per_strip<T>(&self, bytes: u64) -> u32 {
        let row_bytes = (self.row() * std::mem::size_of::<T>()) as u64;
        (bytes / row_bytes.max(1)).clamp(1, self.height.max(1) as u64) as u32
    }
}

/// The strips of one image being written into a TIFF: each strip's samples go into the file
/// as they come (`write`), and the directory (tags, strip offsets) after the last (`finish`).
pub struct Strips<'a, W: Write + Seek, K: TiffKind, T> {
    dir: tiff::encoder::DirectoryEncoder<'a, W, K>,
    layout: Layout<'a>,
    rows_per_strip: u32,
    offsets: Vec<K::OffsetType>,
    counts: Vec<K::OffsetType>,
    rows_done: u32,
    sample: std::marker::PhantomData<T>,
}

impl<'a, W: Write + Seek, K: TiffKind, T: Sample> Strips<'a, W, K, T> {
    /// Starts an image in `encoder`, to be written in strips of `rows_per_strip` rows.
    pub fn new(
        encoder: &'a mut TiffEncoder<W, K>,
        layout: Layout<'a>,
        rows_per_strip: u32,
    ) -> TiffResult<Self> {
        let dir = encoder.image_directory()?;
        Ok(Strips {
            dir,
            layout,
            rows_per_strip: rows_per_strip.clamp(1, layout.height.max(1)),
            offsets: Vec::new(),
            counts: Vec::new(),
            rows_done: 0,
            sample: std::marker::PhantomData,
        })
    }

    /// Samples in the next strip (0 once every row is written).
    pub fn next_strip_samples(&self) -> usize {
        let rows = self.rows_per_strip.min(self.layout.height - self.rows_done);
        rows as usize * self.layout.row()
    }

    /// Writes the next strip: `next_strip_samples` samples.
    pub fn write(&mut self, strip: &[T]) -> TiffResult<()> {
        let l = self.layout;
        let stored = l
            .compression
            .encode(strip, (l.row(), l.channels as usize))?;
        self.write_stored(&stored, strip.len())
    }

    /// Writes the next strip as `encode` stored it (`samples` of the image's).
    fn write_stored(&mut self, stored: &[u8], samples: usize) -> TiffResult<()> {
        let expected = self.next_strip_samples();
        if samples != expected || expected == 0 {
            return Err(std::io::Error::other(format!(
                "a strip of {samples} samples where {expected} were due"
            ))
            .into());
        }
        let offset = self.dir.write_data(stored)?;
        self.offsets.push(K::convert_offset(offset)?);
        self.counts.push(K::convert_offset(stored.len() as u64)?);
        self.rows_done += (samples / self.layout.row()) as u32;
        Ok(())
    }

    /// Writes the directory. An error where rows are missing.
    pub fn finish(mut self) -> TiffResult<()> {
        let l = self.layout;
        if self.rows_done != l.height {
            return Err(std::io::Error::other(format!(
                "{} of {} rows written",
                self.rows_done, l.height
            ))
            .into());
        }
        let n = l.channels as usize;
        let d = &mut self.dir;
        d.write_tag(Tag::ImageWidth, l.width)?;
        d.write_tag(Tag::ImageLength, l.height)?;
        d.write_tag(Tag::BitsPerSample, &vec![T::BITS; n][..])?;
        d.write_tag(Tag::Compression, l.compression.tag())?;
        if let Some(predictor) = l.compression.predictor::<T>() {
            d.write_tag(Tag::Predictor, predictor)?;
        }
        // BlackIsZero for gray, RGB for colour, Separated for inks.
        let photometric: u16 = match (l.inks, n) {
            (true, _) => 5,
            (false, 1 | 2) => 1,
            (false, _) => 2,
        };
        d.write_tag(Tag::PhotometricInterpretation, photometric)?;
        if l.inks {
            // InkSet: CMYK.
            d.write_tag(Tag::Unknown(332), 1u16)?;
        }
        d.write_tag(Tag::StripOffsets, K::convert_slice(&self.offsets))?;
        d.write_tag(Tag::SamplesPerPixel, l.channels)?;
        d.write_tag(Tag::RowsPerStrip, self.rows_per_strip)?;
        d.write_tag(Tag::StripByteCounts, K::convert_slice(&self.counts))?;
        d.write_tag(Tag::XResolution, Rational { n: 1, d: 1 })?;
        d.write_tag(Tag::YResolution, Rational { n: 1, d: 1 })?;
        d.write_tag(Tag::PlanarConfiguration, 1u16)?;
        // ResolutionUnit: none.
        d.write_tag(Tag::ResolutionUnit, 1u16)?;
        if !l.inks && (n == 2 || n == 4) {
            // Unassociated alpha: the colour is not premultiplied.
            d.write_tag(Tag::ExtraSamples, 2u16)?;
        }
        d.write_tag(Tag::SampleFormat, &vec![T::FORMAT; n][..])?;
        if let Some(icc) = l.icc {
            d.write_tag(Tag::IccProfile, icc)?;
        }
        self.dir.finish()
    }
}

/// Pixel bytes above which a TIFF is written as BigTIFF: a classic TIFF's offsets are 32-bit,
/// and the directory and tags come after the pixels.
pub const BIG_OVER: u64 = (4 << 30) - (16 << 20);

/// Strip size the whole-image encoder aims at: large enough that the per-strip tags stay
/// small, small enough that readers holding a strip hold little.
pub const STRIP_BYTES: u64 = 1 << 20;

/// A whole image of `T` samples, `layout` as it says, as a TIFF file in memory.
#[cfg(test)]
pub fn encode<T: Sample>(samples: &[T], layout: Layout) -> TiffResult<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    let pixel_bytes = std::mem::size_of_val(samples) as u64;
    if pixel_bytes > BIG_OVER {
        let mut e = TiffEncoder::new_big(&mut out)?;
        write_whole(&mut e, samples, layout)?;
    } else {
        let mut e = TiffEncoder::new(&mut out)?;
        write_whole(&mut e, samples, layout)?;
    }
    Ok(out.into_inner())
}

/// Writes `samples` as the next image (page) of `e`.
pub fn write_whole<W: Write + Seek, K: TiffKind, T: Sample>(
    e: &mut TiffEncoder<W, K>,
    samples: &[T],
    layout: Layout,
) -> TiffResult<()> {
    use rayon::prelude::*;
    let rows = layout.rows_per_strip::<T>(STRIP_BYTES);
    let mut strips = Strips::<W, K, T>::new(e, layout, rows)?;
    let per_strip = rows as usize * layout.row();
    // Strips compress on every core, a few at a time so that little is held compressed
    // (uncompressed ones are the samples themselves, borrowed).
    let shape = (layout.row(), layout.channels as usize);
    let group = 4 * rayon::current_num_threads();
    for strips_group in samples.chunks(per_strip * group) {
        let stored: Vec<(Cow<[u8]>, usize)> = strips_group
            .par_chunks(per_strip)
            .map(|strip| Ok((layout.compression.encode(strip, shape)?, strip.len())))
            .collect::<TiffResult<_>>()?;
        for (bytes, n) in stored {
            strips.write_stored(&bytes, n)?;
        }
    }
    strips.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiff::decoder::{Decoder, DecodingResult};

    #[test]
    fn gray_alpha_is_written_with_unassociated_alpha_and_no_predictor() {
        let samples: Vec<u16> = (0..5 * 3 * 2).map(|i| i * 1000).collect();
        let layout = Layout {
            width: 5,
            height: 3,
            channels: 2,
            icc: Some(b"profile"),
            compression: Compression::None,
            inks: false,
        };
        // Strips of one row, so that there are several.
        let mut out = std::io::Cursor::new(Vec::new());
        let mut e = TiffEncoder::new(&mut out).unwrap();
        let mut strips = Strips::<_, _, u16>::new(&mut e, layout, 1).unwrap();
        for row in samples.chunks(10) {
            strips.write(row).unwrap();
        }
        strips.finish().unwrap();
        let file = out.into_inner();
        let mut d = Decoder::new(std::io::Cursor::new(&file)).unwrap();
        assert_eq!(d.dimensions().unwrap(), (5, 3));
        assert_eq!(d.get_tag_u32(Tag::ExtraSamples).unwrap(), 2);
        assert!(d.find_tag(Tag::Predictor).unwrap().is_none());
        assert_eq!(d.get_tag_u8_vec(Tag::IccProfile).unwrap(), b"profile");
        match d.read_image().unwrap() {
            DecodingResult::U16(v) => assert_eq!(v, samples),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_compression_reads_back_as_written() {
        let rgb8: Vec<u8> = (0..33 * 17 * 3).map(|i| (i * 7 % 251) as u8).collect();
        let gray16: Vec<u16> = (0..33 * 17).map(|i| (i * 997 % 65521) as u16).collect();
        let float: Vec<f32> = (0..33 * 17 * 4).map(|i| i as f32 * 0.37 - 9.0).collect();
        // Zstandard where this build has it (the `zstd` feature).
        let zstd = cfg!(feature = "zstd").then_some(Compression::Zstd);
        let every = [Compression::None, Compression::Lzw, Compression::Deflate];
        for compression in every.into_iter().chain(zstd) {
            let layout = |channels| Layout {
                width: 33,
                height: 17,
                channels,
                icc: None,
                compression,
                inks: false,
            };
            let check = |file: Vec<u8>, predictor: Option<u32>| {
                let mut d = Decoder::new(std::io::Cursor::new(file)).unwrap();
                assert_eq!(
                    d.get_tag_u32(Tag::Compression).unwrap(),
                    compression.tag() as u32
                );
                assert_eq!(
                    d.find_tag(Tag::Predictor)
                        .unwrap()
                        .map(|v| v.into_u32().unwrap()),
                    predictor
                );
                d.read_image().unwrap()
            };
            let predictor = (compression != Compression::None).then_some(2);
            match check(encode(&rgb8, layout(3)).unwrap(), predictor) {
                DecodingResult::U8(v) => assert_eq!(v, rgb8, "{compression:?}"),
                other => panic!("{other:?}"),
            }
            match check(encode(&gray16, layout(1)).unwrap(), predictor) {
                DecodingResult::U16(v) => assert_eq!(v, gray16, "{compression:?}"),
                other => panic!("{other:?}"),
            }
            let float_predictor = (compression != Compression::None).then_some(3);
            match check(encode(&float, layout(4)).unwrap(), float_predictor) {
                DecodingResult::F32(v) => assert_eq!(v, float, "{compression:?}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn strips_must_come_whole_and_all() {
        let layout = Layout {
            width: 4,
            height: 2,
            channels: 3,
            icc: None,
            compression: Compression::None,
            inks: false,
        };
        let mut out = std::io::Cursor::new(Vec::new());
        let mut e = TiffEncoder::new(&mut out).unwrap();
        let mut strips = Strips::<_, _, u8>::new(&mut e, layout, 1).unwrap();
        assert!(strips.write(&[0; 5]).is_err());
        strips.write(&[0; 12]).unwrap();
        assert!(strips.finish().is_err(), "a row is missing");
    }
}
