//! PNG output on every core at zlib levels 6 and 9 (pigz's method: `--png-compression small` and
//! `best`). A PNG's pixels are one zlib stream, but a deflate stream may be cut into pieces
//! compressed on their own: each stripe of rows is filtered (the row above is at hand in the
//! image), deflated by `flate2` with a fresh dictionary and ended by a sync flush on a byte
//! boundary, and the pieces are joined under one zlib header with the Adler-32 of all filtered
//! rows. The `png` crate writes the container (signature, IHDR, iCCP, IDAT, IEND), the pieces going
//! straight into IDAT chunks. Rows are filtered and deflated a batch at a time, so the memory
//! beyond the image is about the compressed file twice (pieces, then the file). The default,
//! `--png-compression fast`, is the `png` crate's own fdeflate, streamed row by row on one core
//! (`encode_fast`). The strip engine's halves: `rows_in` (rows from a file as they decode)
//! and `rows_out` (rows into a file as they come).

pub mod rows_in;
pub mod rows_out;

use crate::codec::format::{Codec, FileToDecode, ImageToEncode};
use crate::codec::metadata::{self as meta, Blobs, FromFile};
use crate::codec::read::Input;
use crate::codec::rows::{RowReader, RowsOutCost, RowsTarget, SampleBatches};
use crate::codec::source::Seekable;
use crate::codec::{decode, plain, DecodedFile, ImageIoError};
use flate2::{Compress, Compression, FlushCompress};
use image::codecs::png::CompressionType;
use image::DynamicImage;
use image::{ColorType, ImageFormat};
use rayon::prelude::*;
use std::borrow::Cow;
use std::time::Duration;

/// The `png` crate's colour type and bit depth of `image`; None for one this module does not
/// write (the caller falls back to the `image` crate's encoder) or an empty image.
fn layout(image: &DynamicImage) -> Option<(png::ColorType, png::BitDepth)> {
    use png::{BitDepth, ColorType};
    let layout = match image {
        DynamicImage::ImageLuma8(_) => (ColorType::Grayscale, BitDepth::Eight),
        DynamicImage::ImageLumaA8(_) => (ColorType::GrayscaleAlpha, BitDepth::Eight),
        DynamicImage::ImageRgb8(_) => (ColorType::Rgb, BitDepth::Eight),
        DynamicImage::ImageRgba8(_) => (ColorType::Rgba, BitDepth::Eight),
        DynamicImage::ImageLuma16(_) => (ColorType::Grayscale, BitDepth::Sixteen),
        DynamicImage::ImageLumaA16(_) => (ColorType::GrayscaleAlpha, BitDepth::Sixteen),
        DynamicImage::ImageRgb16(_) => (ColorType::Rgb, BitDepth::Sixteen),
        DynamicImage::ImageRgba16(_) => (ColorType::Rgba, BitDepth::Sixteen),
        _ => return None,
    };
    (image.width() > 0 && image.height() > 0).then_some(layout)
}

/// A `png` crate encoder for `image` into `out`, its header not yet written.
fn encoder<'a>(
    image: &DynamicImage,
    (color, depth): (png::ColorType, png::BitDepth),
    icc: Option<&[u8]>,
    out: &'a mut Vec<u8>,
) -> png::Encoder<'a, &'a mut Vec<u8>> {
    let mut info = png::Info::with_size(image.width(), image.height());
    info.color_type = color;
    info.bit_depth = depth;
    info.icc_profile = icc.map(|p| p.to_vec().into());
    png::Encoder::with_info(out, info).expect("an Info made here is valid")
}

/// Encodes `image` (8- or 16-bit gray, gray+alpha, RGB or RGBA) at zlib `level`; None for a
/// colour type this encoder does not write (the caller falls back to the `image` crate's).
pub fn encode(
    image: &DynamicImage,
    level: u32,
    icc: Option<&[u8]>,
) -> Option<Result<Vec<u8>, String>> {
    let layout = layout(image)?;
    let bpp = image.color().bytes_per_pixel() as usize;
    let sixteen = layout.1 == png::BitDepth::Sixteen;
    let idat = zlib_stream(
        image.as_bytes(),
        (image.height() as usize, bpp),
        sixteen,
        level,
    );
    let write = || -> Result<Vec<u8>, png::EncodingError> {
        let size: usize = idat.iter().map(Vec::len).sum();
        let mut out = Vec::with_capacity(size + 1024);
        let mut writer = encoder(image, layout, icc, &mut out).write_header()?;
        // IDAT chunks of at most 1 MiB, as encoders usually write them; a chunk may end
        // anywhere in the stream, so each piece goes as it is.
        for chunk in idat.iter().flat_map(|piece| piece.chunks(1 << 20)) {
            writer.write_chunk(png::chunk::IDAT, chunk)?;
        }
        writer.finish()?;
        Ok(out)
    };
    Some(write().map_err(|e| e.to_string()))
}

/// `--png-compression fast`: the `png` crate's fdeflate with adaptive filters, through its
/// stream writer, which filters and compresses row by row straight into IDAT chunks. (The
/// `image` crate's encoder filters the whole image into a copy first: 2.06× the decoded image
/// at peak on a 16 MP RGB photo.) None as for `encode`.
pub fn encode_fast(image: &DynamicImage, icc: Option<&[u8]>) -> Option<Result<Vec<u8>, String>> {
    let layout = layout(image)?;
    let sixteen = layout.1 == png::BitDepth::Sixteen;
    let row = image.as_bytes().len() / image.height() as usize;
    let write = || -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        let mut e = encoder(image, layout, icc, &mut out);
        e.set_compression(png::Compression::Fast);
        e.set_filter(png::Filter::Adaptive);
        let mut writer = e.write_header()?;
        let mut stream = writer.stream_writer()?;
        write_rows(&mut stream, image.as_bytes(), row, sixteen)?;
        stream.finish()?;
        writer.finish()?;
        Ok(out)
    };
    Some(write().map_err(|e| e.to_string()))
}

/// Every row of `bytes` into `stream`, in PNG's byte order. The stream is a trait object, so
/// that the compressor behind it is compiled on its own, its bit writer inlined into its inner
/// loop: inlined into this loop, the bit writer was called, not inlined, and the encode of a
/// 16 MP photo took 1.2–1.25 times as long (as it did whenever the build placed the code
/// otherwise).
#[inline(never)]
fn write_rows(
    stream: &mut dyn std::io::Write,
    bytes: &[u8],
    row: usize,
    sixteen: bool,
) -> std::io::Result<()> {
    for r in bytes.chunks_exact(row) {
        stream.write_all(&big_endian(r, sixteen))?;
    }
    Ok(())
}

/// Filtered rows deflated at a time: large enough for deflate's 32 KiB window to matter little.
const BATCH_BYTES: usize = 1 << 18;

/// The filtered, compressed pixel rows: a complete zlib stream, in pieces to be concatenated
/// (header, one per stripe, checksum).
fn zlib_stream(bytes: &[u8], (h, bpp): (usize, usize), sixteen: bool, level: u32) -> Vec<Vec<u8>> {
    let row = bytes.len() / h;
    let stripes = (2 * rayon::current_num_threads()).clamp(1, h);
    let rows_per = h.div_ceil(stripes);
    let count = h.div_ceil(rows_per);
    let pieces: Vec<(Vec<u8>, u32, usize)> = (0..count)
        .into_par_iter()
        .map(|s| {
            let (r0, r1) = (s * rows_per, ((s + 1) * rows_per).min(h));
            let raw = |r: usize| big_endian(&bytes[r * row..(r + 1) * row], sixteen);
            let mut filtered = Vec::with_capacity(BATCH_BYTES + row + 1);
            let mut prev = if r0 == 0 {
                Cow::Owned(vec![0; row])
            } else {
                raw(r0 - 1)
            };
            let mut candidates: [Vec<u8>; 5] = Default::default();
            let mut c = Compress::new(Compression::new(level), false);
            let (mut deflated, mut a) = (Vec::new(), simd_adler32::Adler32::new());
            for r in r0..r1 {
                let cur = raw(r);
                filter_row(&cur, &prev, bpp, &mut filtered, &mut candidates);
                prev = cur;
                let end = if r + 1 < r1 {
                    if filtered.len() < BATCH_BYTES {
                        continue;
                    }
                    Piece::Open
                } else if r1 < h {
                    Piece::Flushed
                } else {
                    Piece::Last
                };
                a.write(&filtered);
                deflate(&mut c, &filtered, &mut deflated, end);
                filtered.clear();
            }
            // Every row filtered is its filter byte and the row.
            (deflated, a.finish(), (r1 - r0) * (row + 1))
        })
        .collect();
    let mut adler = 1u32;
    let mut out = vec![vec![0x78, if level >= 7 { 0xDA } else { 0x9C }]];
    for (data, piece, len) in pieces {
        adler = adler32_combine(adler, piece, len);
        out.push(data);
    }
    out.push(adler.to_be_bytes().to_vec());
    out
}

/// PNG stores 16-bit samples big-endian; the image crate holds them in native order. Other
/// rows are borrowed as they are.
fn big_endian(row: &[u8], sixteen: bool) -> Cow<'_, [u8]> {
    if !(sixteen && cfg!(target_endian = "little")) {
        return Cow::Borrowed(row);
    }
    let mut v = row.to_vec();
    for pair in v.chunks_exact_mut(2) {
        pair.swap(0, 1);
    }
    Cow::Owned(v)
}

/// Appends `cur` filtered against `prev` with whichever of the five PNG filters gives the
/// smallest sum of absolute values (libpng's heuristic), preceded by the filter's type byte.
/// Each candidate is a branch-free loop over zipped slices (no index arithmetic, so no bounds
/// checks), which the compiler vectorises.
fn filter_row(cur: &[u8], prev: &[u8], bpp: usize, out: &mut Vec<u8>, rows: &mut [Vec<u8>; 5]) {
    let n = cur.len();
    for r in rows.iter_mut() {
        r.resize(n, 0);
    }
    let [none, sub, up, avg, paeth] = rows;
    none.copy_from_slice(cur);
    for ((u, &x), &b) in up.iter_mut().zip(cur).zip(prev) {
        *u = x.wrapping_sub(b);
    }
    let head = bpp.min(n);
    for i in 0..head {
        sub[i] = cur[i];
        avg[i] = cur[i].wrapping_sub(prev[i] / 2);
        paeth[i] = cur[i].wrapping_sub(prev[i]);
    }
    // Left neighbours: a = cur[i - bpp], c = prev[i - bpp].
    let (x, b) = (&cur[head..], &prev[head..]);
    let (a, c) = (&cur[..n - head], &prev[..n - head]);
    for ((s, &x), &a) in sub[head..].iter_mut().zip(x).zip(a) {
        *s = x.wrapping_sub(a);
    }
    for (((v, &x), &a), &b) in avg[head..].iter_mut().zip(x).zip(a).zip(b) {
        *v = x.wrapping_sub(((a as u16 + b as u16) >> 1) as u8);
    }
    for ((((p, &x), &a), &b), &c) in paeth[head..].iter_mut().zip(x).zip(a).zip(b).zip(c) {
        *p = x.wrapping_sub(paeth_predictor(a, b, c));
    }
    let (best, row) = rows
        .iter()
        .enumerate()
        .min_by_key(|(_, r)| filter_cost(r))
        .expect("five filters");
    out.push(best as u8);
    out.extend_from_slice(row);
}

/// PNG's Paeth predictor: whichever of left, above and upper-left is nearest a + b − c, ties
/// going in that order. Written with selects, not branches, so that it vectorises.
#[inline(always)]
fn paeth_predictor(a: u8, b: u8, c: u8) -> u8 {
    let (a16, b16, c16) = (a as i16, b as i16, c as i16);
    let pa = (b16 - c16).abs();
    let pb = (a16 - c16).abs();
    let pc = (a16 + b16 - 2 * c16).abs();
    let b_or_c = if pb <= pc { b } else { c };
    if pa <= pb && pa <= pc {
        a
    } else {
        b_or_c
    }
}

/// The sum of a filtered row's bytes read as signed magnitudes. Summed in u32 blocks short
/// enough not to overflow (128 × 2^16 < 2^32), which vectorises.
fn filter_cost(row: &[u8]) -> u64 {
    row.chunks(1 << 16)
        .map(|block| {
            block
                .iter()
                .map(|&v| (v as i8).unsigned_abs() as u32)
                .sum::<u32>() as u64
        })
        .sum()
}

/// Where a batch of filtered rows leaves a stripe's raw deflate stream.
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    /// More rows of the stripe follow.
    Open,
    /// The stripe ends, another follows: a sync flush (byte-aligned, not final).
    Flushed,
    /// The image's last rows: the stream is finished.
    Last,
}

/// Deflates `data` into `out` through the stripe's compressor `c` (raw deflate, its own
/// dictionary), ending as `end` says.
fn deflate(c: &mut Compress, data: &[u8], out: &mut Vec<u8>, end: Piece) {
    let flush = match end {
        Piece::Open => FlushCompress::None,
        Piece::Flushed => FlushCompress::Sync,
        Piece::Last => FlushCompress::Finish,
    };
    let start = c.total_in() as usize;
    loop {
        let consumed = c.total_in() as usize - start;
        out.reserve(data.len() / 4 + 64);
        let status = c
            .compress_vec(&data[consumed..], out, flush)
            .expect("deflate of an in-memory buffer cannot fail");
        let all_in = c.total_in() as usize - start == data.len();
        // The stream ends with StreamEnd; a flush is complete once all input is in and the
        // compressor stopped short of filling `out`; without one, all input in is enough.
        let done = match end {
            Piece::Last => status == flate2::Status::StreamEnd,
            Piece::Flushed => all_in && out.len() < out.capacity(),
            Piece::Open => all_in,
        };
        if done {
            break;
        }
    }
}

/// The Adler-32 of two buffers one after the other, from each one's checksum and the second's
/// length (zlib's adler32_combine).
fn adler32_combine(a1: u32, a2: u32, len2: usize) -> u32 {
    const BASE: u64 = 65521;
    let rem = len2 as u64 % BASE;
    let mut sum1 = (a1 & 0xffff) as u64;
    let mut sum2 = rem * sum1 % BASE;
    sum1 += (a2 & 0xffff) as u64 + BASE - 1;
    sum2 += ((a1 >> 16) & 0xffff) as u64 + ((a2 >> 16) & 0xffff) as u64 + BASE - rem;
    ((sum1 % BASE) | ((sum2 % BASE) << 16)) as u32
}

// PNG's `Codec`: decoded whole by the `image` crate (with an eXIf chunk after the pixels or
// a legacy EXIF text chunk read here), a row at a time for the strip engine, encoded on every
// core (or streamed at `fast`) whole or as rows arrive, with EXIF and XMP in chunks before
// the pixels. It is here beside the encoders, not in a file of its own: there, the build's
// split of the crate into codegen units leaves fdeflate's bit writer out of line, and `fast`
// encoding takes 18% longer (132 ms against 112 on a 16 MP photo, the same bytes).

/// PNG.
pub struct Png;

impl Codec for Png {
    fn format(&self) -> ImageFormat {
        ImageFormat::Png
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        decode::with_image_crate(ImageFormat::Png, file)
    }

    fn reads_rows(&self) -> bool {
        true
    }

    fn open_rows(
        &self,
        input: &Input,
        _max_memory_mib: u64,
    ) -> Result<Result<Box<dyn RowReader>, String>, ImageIoError> {
        Ok(rows_in::open(input)?.map(|rows| Box::new(rows) as Box<dyn RowReader>))
    }

    fn writable(&self) -> &'static [ColorType] {
        use ColorType::*;
        &[L8, La8, Rgb8, Rgba8, L16, La16, Rgb16, Rgba16]
    }

    /// gblur's encoders (stripes on every core, or fdeflate streamed at `fast`), the `image`
    /// crate's for a layout they do not write.
    fn encode(&self, e: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        let ours = match e.options.png_compression {
            CompressionType::Fast => encode_fast(e.image, e.icc),
            CompressionType::Best => encode(e.image, 9, e.icc),
            _ => encode(e.image, 6, e.icc),
        };
        match ours {
            Some(bytes) => bytes.map(|bytes| (bytes, None)),
            None => plain::encode(ImageFormat::Png, e),
        }
    }

    fn writes_rows(&self) -> bool {
        true
    }

    fn write_rows(
        &self,
        target: RowsTarget<'_>,
        rows: SampleBatches,
    ) -> Result<(Duration, Vec<String>), ImageIoError> {
        let header = rows_out::PngHeader {
            size: target.size,
            color: target.color,
            meta: target.meta,
            compression: target.settings.png,
        };
        let (path, replace) = (target.path, target.replace);
        // PNG's chunks hold the EXIF and XMP; IPTC records are left out, with a note.
        let notes = target
            .meta
            .iptc_lost(ImageFormat::Png)
            .into_iter()
            .collect();
        let busy = match rows {
            SampleBatches::U8(rows) => rows_out::write(path, replace, header, rows),
            SampleBatches::U16(rows) => rows_out::write(path, replace, header, rows),
        };
        busy.map(|busy| (busy, notes))
    }

    /// A piece in PNG's byte order, and the rows the filters compare.
    fn rows_out_bytes(&self, cost: &RowsOutCost) -> u64 {
        cost.piece + 4 * cost.row
    }

    fn read_metadata(&self, reader: &mut dyn Seekable) -> FromFile {
        meta::read_png(reader)
    }

    fn holds_metadata(&self) -> bool {
        true
    }

    fn write_metadata(
        &self,
        bytes: Vec<u8>,
        blobs: Blobs<'_>,
        _notes: &mut Vec<String>,
    ) -> Result<Vec<u8>, String> {
        meta::into_png(bytes, blobs)
    }
}

impl RowReader for rows_in::PngRows {
    crate::codec::rows::row_reader_basics!(ImageFormat::Png);
    /// The previous and current rows, raw and unfiltered.
    fn held_bytes(&self) -> u64 {
        let (width, color) = (self.header.width as u64, self.header.color);
        4 * width * color.bytes_per_pixel() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::ColorType;

    fn sample(color: ColorType, w: u32, h: u32) -> DynamicImage {
        let rgba = image::Rgba32FImage::from_fn(w, h, |x, y| {
            let v = |k: u32| ((x * 37 + y * 11 + k * 53) % 97) as f32 / 96.0;
            image::Rgba([v(0), v(1), v(2), v(3)])
        });
        let f = DynamicImage::ImageRgba32F(rgba);
        crate::pixels::convert(f, color)
    }

    #[test]
    fn round_trips_every_layout_and_size() {
        use ColorType::*;
        for color in [L8, La8, Rgb8, Rgba8, L16, La16, Rgb16, Rgba16] {
            for (w, h) in [(1, 1), (3, 17), (257, 31), (64, 400)] {
                let img = sample(color, w, h);
                // Levels 6 and 9 through the striped encoder, and fast (1) streamed.
                for level in [6, 9, 1] {
                    let bytes = if level == 1 {
                        encode_fast(&img, None)
                    } else {
                        encode(&img, level, None)
                    };
                    let bytes = bytes.unwrap().unwrap();
                    let back = image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
                        .unwrap();
                    assert_eq!(back, img, "{color:?} {w}x{h} level {level}");
                }
            }
        }
    }

    #[test]
    fn round_trips_stripes_deflated_in_several_batches() {
        // 1200 × 1000 RGB on two threads: four stripes of 900 kB, each several batches.
        let img = sample(ColorType::Rgb8, 1200, 1000);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        assert!(img.as_bytes().len() / 4 > 3 * BATCH_BYTES);
        for level in [6, 9] {
            let bytes = pool.install(|| encode(&img, level, None)).unwrap().unwrap();
            let back =
                image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).unwrap();
            assert_eq!(back, img, "level {level}");
            // The decoder does not check the zlib checksum; zlib does.
            let stream = pool.install(|| zlib_stream(img.as_bytes(), (1000, 3), false, level));
            let mut rows = Vec::new();
            let stream = stream.concat();
            let mut z = flate2::read::ZlibDecoder::new(&stream[..]);
            std::io::Read::read_to_end(&mut z, &mut rows).expect("a valid zlib stream");
            assert_eq!(rows.len(), 1000 * (1 + 1200 * 3));
        }
    }

    #[test]
    fn keeps_the_icc_profile() {
        use image::ImageDecoder as _;
        let icc = vec![3u8; 500];
        let img = sample(ColorType::Rgb8, 9, 9);
        for bytes in [encode(&img, 6, Some(&icc)), encode_fast(&img, Some(&icc))] {
            let bytes = bytes.unwrap().unwrap();
            let mut d = image::codecs::png::PngDecoder::new(std::io::Cursor::new(&bytes)).unwrap();
            assert_eq!(d.icc_profile().unwrap(), Some(icc.clone()));
        }
    }

    #[test]
    fn adler32_combines_like_one_pass() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let whole = |d: &[u8]| {
            let mut a = simd_adler32::Adler32::new();
            a.write(d);
            a.finish()
        };
        for cut in [0, 1, 65521, 100_000, 199_999] {
            let (a, b) = data.split_at(cut);
            assert_eq!(
                adler32_combine(whole(a), whole(b), b.len()),
                whole(&data),
                "cut {cut}"
            );
        }
    }
}
