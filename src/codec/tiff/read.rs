//! What gblur reads itself, or mends, in TIFF files the `image` crate's decoder gets wrong or
//! cannot read: tiled files with separate planes (PlanarConfiguration 2, which the `tiff`
//! crate asserts on when asked for the whole image, but reads a tile at a time), gray with
//! alpha (which `image` refuses as "multiband"), samples stored with their bits in reverse
//! order (FillOrder 2), and associated (premultiplied) alpha, which the decoder hands over as
//! if it were straight.

use super::pages::{NotPages, Pages};
use crate::codec::icc::Inks;
use crate::codec::metadata::ifd::Reader;
use crate::codec::source::Seekable;
use image::{DynamicImage, ImageBuffer, Luma, LumaA, Pixel, Rgb, Rgba};
use std::io::Seek;
use tiff::decoder::{ChunkType, Decoder, DecodingResult, Limits};
use tiff::tags::{PlanarConfiguration, Tag};
use tiff::ColorType as TiffColor;

/// What a TIFF's first directory says that the `image` crate's decoder does not honour.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quirks {
    /// Tiles with each sample in a plane of its own.
    pub planar_tiles: bool,
    /// Each sample in a plane of its own (tiles or strips).
    planar: bool,
    /// Gray (black is zero) with an alpha sample, associated or not.
    pub gray_alpha: bool,
    /// Gray (with alpha or without) in 32-bit float samples, which the `image` crate has no
    /// colour type for: read as RGB(A) with three equal channels (`read_image`).
    pub gray_float: bool,
    /// FillOrder 2: the bits of every byte are stored least significant first.
    reversed_bits: bool,
    /// Compression (1: none) and bits per sample, for what reversed bits can be mended in.
    compression: u16,
    bits: u16,
    /// Images (full-resolution pages) in the file, counted up to `pages::MOST_PAGES` directories;
    /// gblur reads the first.
    pub pages: usize,
    /// The directories that are no page (reduced-resolution overviews, transparency masks),
    /// which gblur does not read.
    pub not_pages: NotPages,
    /// Its colour is CMYK (PhotometricInterpretation 5, separated), which the decoder turns
    /// into RGB by formula.
    pub cmyk: bool,
    /// CMYK as `read_inks` reads it: four 8- or 16-bit integer inks a pixel, interleaved,
    /// nothing else (no alpha, no other ink set).
    pub plain_inks: bool,
}

/// InkSet: 1 is CMYK, 2 another set of inks (named in InkNames).
const INK_SET: u16 = 332;

impl Quirks {
    /// The quirks of the TIFF `reader` (none where the `tiff` crate cannot read its header:
    /// the decode then says why). The reader is left anywhere.
    pub fn read(reader: &mut dyn Seekable) -> Quirks {
        // Pages as the main command counts them (`Pages`): overviews and masks are none.
        let chain = Pages::read(&mut Reader(&mut *reader));
        let (pages, not_pages) =
            chain.map_or((1, NotPages::default()), |c| (c.count(), c.not_pages()));
        if reader.rewind().is_err() {
            return Quirks::default();
        }
        let Ok(mut d) = Decoder::new(reader) else {
            return Quirks::default();
        };
        // Tags that may hold one value per sample, read before `tag` borrows the decoder.
        let float = first_of(&mut d, Tag::SampleFormat) == Some(3);
        let first_bits = first_of(&mut d, Tag::BitsPerSample);
        let mut tag = |t| d.find_tag_unsigned::<u16>(t).ok().flatten();
        let planar = tag(Tag::PlanarConfiguration) == Some(PlanarConfiguration::Planar.to_u16());
        let reversed_bits = tag(Tag::FillOrder) == Some(2);
        let compression = tag(Tag::Compression).unwrap_or(1);
        let bits = first_bits.unwrap_or(1);
        let photometric = tag(Tag::PhotometricInterpretation);
        let gray = photometric == Some(1);
        let two = tag(Tag::SamplesPerPixel) == Some(2);
        let alpha = matches!(tag(Tag::ExtraSamples), Some(1 | 2));
        let one = tag(Tag::SamplesPerPixel).unwrap_or(1) == 1;
        let four = tag(Tag::SamplesPerPixel) == Some(4);
        let cmyk_inks = matches!(tag(Tag::Unknown(INK_SET)), None | Some(1));
        let bits32 = first_bits == Some(32);
        let planar_tiles = planar && d.get_chunk_type() == ChunkType::Tile;
        let plain_inks = photometric == Some(5)
            && four
            && cmyk_inks
            && matches!(first_bits, Some(8 | 16))
            && !float
            && !planar;

        Quirks {
            pages,
            not_pages,
            planar_tiles,
            planar,
            gray_alpha: gray && two && alpha,
            gray_float: gray && float && bits32 && (one || (two && alpha)),
            reversed_bits,
            compression,
            bits,
            cmyk: photometric == Some(5),
            plain_inks,
        }
    }

    /// The Compression tag of the first page (1: none).
    pub fn compression(&self) -> u16 {
        self.compression
    }

    /// Bytes a sample of the first page takes in memory (1, 2 or 4).
    pub fn sample_bytes(&self) -> u64 {
        (self.bits as u64).div_ceil(8).next_power_of_two().min(4)
    }

    /// Whether gblur reads the file itself, with the `tiff` crate (`read_image`): the
    /// `image` crate cannot.
    pub fn own_decode(&self) -> bool {
        self.planar_tiles || self.gray_alpha || self.gray_float
    }

    /// Why gblur does not read the file, where a quirk makes its pixels wrong otherwise.
    pub fn refused(&self) -> Option<String> {
        self.refused_in(cfg!(feature = "zstd"))
    }

    /// `refused` in a build with Zstandard (`zstd`) or without.
    fn refused_in(&self, zstd: bool) -> Option<String> {
        if self.compression == 50000 && !zstd {
            return Some(super::ZSTD_MISSING.into());
        }
        if self.reversed_bits && self.cmyk {
            return Some("it is CMYK with its bits stored least significant first (FillOrder 2), which gblur does not read".into());
        }
        (self.reversed_bits && !(self.compression == 1 && matches!(self.bits, 8 | 16))).then(|| {
            format!(
                "its bits are stored least significant first (FillOrder 2), which gblur reads in uncompressed 8- and 16-bit files only (this one: {} bits, compression {})",
                self.bits, self.compression
            )
        })
    }

    /// Mends what the decoder read wrong: reversed bits in every sample.
    pub fn mend(&self, image: &mut DynamicImage) {
        if !self.reversed_bits {
            return;
        }
        match image {
            DynamicImage::ImageLuma16(_)
            | DynamicImage::ImageLumaA16(_)
            | DynamicImage::ImageRgb16(_)
            | DynamicImage::ImageRgba16(_) => {
                let samples: &mut [u16] = match image {
                    DynamicImage::ImageLuma16(i) => i,
                    DynamicImage::ImageLumaA16(i) => i,
                    DynamicImage::ImageRgb16(i) => i,
                    DynamicImage::ImageRgba16(i) => i,
                    _ => unreachable!("matched above"),
                };
                for s in samples {
                    let [a, b] = s.to_ne_bytes();
                    *s = u16::from_ne_bytes([a.reverse_bits(), b.reverse_bits()]);
                }
            }
            DynamicImage::ImageLuma8(_)
            | DynamicImage::ImageLumaA8(_)
            | DynamicImage::ImageRgb8(_)
            | DynamicImage::ImageRgba8(_) => {
                let samples: &mut [u8] = match image {
                    DynamicImage::ImageLuma8(i) => i,
                    DynamicImage::ImageLumaA8(i) => i,
                    DynamicImage::ImageRgb8(i) => i,
                    DynamicImage::ImageRgba8(i) => i,
                    _ => unreachable!("matched above"),
                };
                for s in samples {
                    *s = s.reverse_bits();
                }
            }
            _ => {}
        }
    }
}

/// The first value of a tag that may hold one per sample (BitsPerSample, SampleFormat).
fn first_of<R: std::io::Read + Seek>(d: &mut Decoder<R>, tag: Tag) -> Option<u16> {
    d.find_tag_unsigned_vec::<u16>(tag)
        .ok()
        .flatten()?
        .first()
        .copied()
}

/// A TIFF the `image` crate does not read (`Quirks::own_decode`), read with the `tiff` crate:
/// tiled planes interleaved, gray with alpha, or gray 32-bit float (as RGB or RGBA with three
/// equal channels: `DynamicImage` has no gray float); at most `max_bytes` of pixels.
pub fn read_image(
    reader: &mut dyn Seekable,
    quirks: &Quirks,
    max_bytes: u64,
) -> Result<DynamicImage, String> {
    if quirks.planar {
        return read_planar(reader, quirks, max_bytes);
    }
    let (w, h, samples) = read_whole(reader, max_bytes)?;
    let image = match samples {
        DecodingResult::U8(v) => ImageBuffer::<LumaA<u8>, _>::from_raw(w, h, v).map(Into::into),
        DecodingResult::U16(v) => ImageBuffer::<LumaA<u16>, _>::from_raw(w, h, v).map(Into::into),
        DecodingResult::F32(v) if quirks.gray_float => {
            // The RGB(A) copy is three (two) times the gray samples, held beside them.
            let held = v.len() as u64 * 4 * if quirks.gray_alpha { 3 } else { 4 };
            if held > max_bytes {
                return Err(format!(
                    "a gray float image is held as RGB: it needs {} MiB, over the memory limit of {} MiB (--max-memory)",
                    held >> 20,
                    max_bytes >> 20
                ));
            }
            gray_float_as_rgb(w, h, &v, quirks.gray_alpha)
        }
        _ => return Err("gray with alpha of a sample type gblur does not read".into()),
    };
    image.ok_or_else(|| "fewer samples than the image's size".into())
}

/// The first page's size and samples as the `tiff` crate reads them, within `max_bytes`.
fn read_whole(
    reader: &mut dyn Seekable,
    max_bytes: u64,
) -> Result<(u32, u32, DecodingResult), String> {
    let e = |e: tiff::TiffError| e.to_string();
    let mut limits = Limits::default();
    limits.decoding_buffer_size = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let mut d = Decoder::new(reader).map_err(e)?.with_limits(limits);
    let (w, h) = d.dimensions().map_err(e)?;
    Ok((w, h, d.read_image().map_err(e)?))
}

/// The inks of a CMYK TIFF whose quirks say `plain_inks`, as stored (0 is no ink), with its
/// size; at most `max_bytes` of samples.
pub fn read_inks(reader: &mut dyn Seekable, max_bytes: u64) -> Result<(u32, u32, Inks), String> {
    let (w, h, samples) = read_whole(reader, max_bytes)?;
    let inks = match samples {
        DecodingResult::U8(v) => Inks::Eight(v),
        DecodingResult::U16(v) => Inks::Sixteen(v),
        _ => return Err("CMYK of a sample type gblur does not read".into()),
    };
    Ok((w, h, inks))
}

/// Gray float samples (`alpha`: each followed by its alpha) as RGB or RGBA with three equal
/// channels; None where there are fewer samples than `w`×`h` pixels.
fn gray_float_as_rgb(w: u32, h: u32, samples: &[f32], alpha: bool) -> Option<DynamicImage> {
    let pixels = w as usize * h as usize;
    if alpha {
        let rgba = samples
            .get(..2 * pixels)?
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0], p[1]]);
        ImageBuffer::<Rgba<f32>, _>::from_raw(w, h, rgba.collect()).map(Into::into)
    } else {
        let rgb = samples.get(..pixels)?.iter().flat_map(|&g| [g, g, g]);
        ImageBuffer::<Rgb<f32>, _>::from_raw(w, h, rgb.collect()).map(Into::into)
    }
}

/// A TIFF with separate planes, read a tile or strip at a time and interleaved: 1 to 4
/// samples of 8 or 16 bits or 32-bit float, at most `max_bytes` of pixels. The `tiff` crate
/// reads the directory; the chunks gblur reads and decompresses itself (none, LZW, Deflate, PackBits, Zstandard;
/// horizontal differencing undone), since the crate's reader stops short of an LZW end code
/// in tiles cut by the image's edge.
fn read_planar(
    reader: &mut dyn Seekable,
    quirks: &Quirks,
    max_bytes: u64,
) -> Result<DynamicImage, String> {
    let e = |e: tiff::TiffError| e.to_string();
    let layout = {
        let mut d = Decoder::new(&mut *reader).map_err(e)?;
        PlanarLayout::read(&mut d).map_err(e)??
    };
    let PlanarLayout {
        width: w,
        height: h,
        samples,
        ..
    } = layout;
    if layout.float && samples < 3 && !quirks.gray_float {
        return Err(format!(
            "separate planes of {samples} float samples that are not gray (black is zero) with or without alpha, which gblur does not read"
        ));
    }
    // Gray float is held as RGB(A) beside its planes: three (two) times them again.
    let expanded = match (quirks.gray_float, samples) {
        (true, 1) => 4,
        (true, _) => 3,
        _ => 1,
    };
    let bytes = w as u64 * h as u64 * samples as u64 * layout.sample_bytes() as u64 * expanded;
    if bytes > max_bytes {
        return Err(
            "decoding needs more than the memory limit (raise it with --max-memory)".into(),
        );
    }
    let (tw, th) = layout.chunk;
    let (across, down) = (w.div_ceil(tw), h.div_ceil(th));
    let per_plane = across * down;
    if layout.offsets.len() != (per_plane * samples) as usize
        || layout.counts.len() != layout.offsets.len()
    {
        return Err("its tile or strip count does not match its size and planes".into());
    }
    let mut planes = Planes::new(layout.bits, layout.float, w, h, samples)?;
    for plane in 0..samples {
        for tile in 0..per_plane {
            let (tx, ty) = (tile % across, tile / across);
            let (x0, y0) = (tx * tw, ty * th);
            let (dw, dh) = (tw.min(w - x0), th.min(h - y0));
            let index = (plane * per_plane + tile) as usize;
            // A strip holds only the rows inside the image; a tile is always whole.
            let rows = if layout.tiled { th } else { dh };
            let raw = layout.chunk_bytes(reader, index, tw as usize * rows as usize)?;
            planes.place(&raw, &layout, (x0, y0), (dw, dh), plane)?;
        }
    }
    planes.image()
}

/// What `read_planar` needs of a planar TIFF's directory.
struct PlanarLayout {
    width: u32,
    height: u32,
    samples: u32,
    bits: u8,
    float: bool,
    /// Tile (or strip: the image's width by RowsPerStrip) size, and whether tiled.
    chunk: (u32, u32),
    tiled: bool,
    offsets: Vec<u64>,
    counts: Vec<u64>,
    compression: u16,
    /// Horizontal differencing (Predictor 2).
    differenced: bool,
    little_endian: bool,
}

impl PlanarLayout {
    fn read<R: std::io::Read + Seek>(
        d: &mut Decoder<R>,
    ) -> tiff::TiffResult<Result<PlanarLayout, String>> {
        let (width, height) = d.dimensions()?;
        let (samples, bits) = match d.colortype()? {
            TiffColor::Gray(b) => (1, b),
            TiffColor::GrayA(b) => (2, b),
            TiffColor::RGB(b) => (3, b),
            TiffColor::RGBA(b) => (4, b),
            // Gray with alpha (`Quirks::gray_alpha`).
            TiffColor::Multiband {
                bit_depth,
                num_samples: 2,
            } => (2, bit_depth),
            other => {
                return Ok(Err(format!(
                    "separate planes of {other:?}, which gblur does not read"
                )))
            }
        };
        let tiled = d.get_chunk_type() == ChunkType::Tile;
        let (offsets, counts) = match tiled {
            true => (Tag::TileOffsets, Tag::TileByteCounts),
            false => (Tag::StripOffsets, Tag::StripByteCounts),
        };
        let tag = |d: &mut Decoder<R>, t| d.find_tag_unsigned::<u16>(t).ok().flatten();
        let compression = tag(d, Tag::Compression).unwrap_or(1);
        let predictor = tag(d, Tag::Predictor).unwrap_or(1);
        if !matches!(compression, 1 | 5 | 8 | 32773 | 32946 | 50000) || !matches!(predictor, 1 | 2)
        {
            return Ok(Err(format!(
                "separate planes with compression {compression} and predictor {predictor}, which gblur does not read"
            )));
        }
        let chunk = d.chunk_dimensions();
        if chunk.0 == 0 || chunk.1 == 0 {
            return Ok(Err("a tile or strip of no pixels".into()));
        }
        Ok(Ok(PlanarLayout {
            width,
            height,
            samples,
            bits,
            float: first_of(d, Tag::SampleFormat) == Some(3),
            chunk,
            tiled,
            offsets: d.get_tag_u64_vec(offsets)?,
            counts: d.get_tag_u64_vec(counts)?,
            compression,
            differenced: predictor == 2,
            little_endian: d.byte_order() == tiff::tags::ByteOrder::LittleEndian,
        }))
    }

    fn sample_bytes(&self) -> usize {
        (self.bits as usize).div_ceil(8)
    }

    /// The decompressed bytes of chunk `index`, `pixels` samples of it at least.
    fn chunk_bytes(
        &self,
        reader: &mut dyn Seekable,
        index: usize,
        pixels: usize,
    ) -> Result<Vec<u8>, String> {
        use std::io::Read;
        let want = pixels * self.sample_bytes();
        let count = self.counts[index];
        // A compressed chunk is never more than a little larger than its samples.
        if count > 2 * want as u64 + 4096 {
            return Err("a tile or strip larger than its samples can be".into());
        }
        reader
            .seek(std::io::SeekFrom::Start(self.offsets[index]))
            .map_err(|e| e.to_string())?;
        let mut packed = vec![0u8; count as usize];
        reader.read_exact(&mut packed).map_err(|e| e.to_string())?;
        let mut raw = match self.compression {
            1 => packed,
            5 => {
                let mut out = Vec::with_capacity(want);
                let status = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
                    .into_vec(&mut out)
                    .decode(&packed)
                    .status;
                status.map_err(|e| format!("its LZW data: {e}"))?;
                out
            }
            32773 => unpack_bits(&packed, want),
            #[cfg(feature = "zstd")]
            50000 => zstd::bulk::decompress(&packed, want)
                .map_err(|e| format!("its Zstandard data: {e}"))?,
            #[cfg(not(feature = "zstd"))]
            50000 => return Err(super::ZSTD_MISSING.into()),
            _ => {
                let mut out = Vec::with_capacity(want);
                flate2::read::ZlibDecoder::new(&packed[..])
                    .take(want as u64)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("its Deflate data: {e}"))?;
                out
            }
        };
        if raw.len() < want {
            return Err("a tile or strip holds fewer samples than its size".into());
        }
        raw.truncate(want);
        Ok(raw)
    }

    /// A chunk's bytes as samples in the machine's order, differencing undone row by row.
    fn samples<T: ChunkSample>(&self, raw: &[u8]) -> Vec<T> {
        let mut samples: Vec<T> = raw
            .chunks_exact(std::mem::size_of::<T>())
            .map(|b| T::from_bytes(b, self.little_endian))
            .collect();
        if self.differenced {
            for row in samples.chunks_mut(self.chunk.0 as usize) {
                for x in 1..row.len() {
                    row[x] = row[x].plus(row[x - 1]);
                }
            }
        }
        samples
    }
}

/// PackBits (Apple's run-length coding, TIFF compression 32773): a count byte n, then n + 1
/// literal bytes (n 0 to 127) or one byte repeated 1 - n times (n -127 to -1); -128 is
/// nothing. At most `want` bytes.
fn unpack_bits(packed: &[u8], want: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(want);
    let mut at = 0;
    while at < packed.len() && out.len() < want {
        let n = packed[at] as i8;
        at += 1;
        match n {
            0..=127 => {
                let end = (at + n as usize + 1).min(packed.len());
                out.extend_from_slice(&packed[at..end]);
                at = end;
            }
            -127..=-1 => {
                if let Some(&b) = packed.get(at) {
                    out.extend(std::iter::repeat_n(b, 1 + n.unsigned_abs() as usize));
                }
                at += 1;
            }
            _ => {}
        }
    }
    out
}

/// A sample type planar chunks hold.
trait ChunkSample: Copy {
    fn from_bytes(b: &[u8], little_endian: bool) -> Self;
    /// Horizontal differencing's sum (wrapping for integers).
    fn plus(self, other: Self) -> Self;
}

impl ChunkSample for u8 {
    fn from_bytes(b: &[u8], _: bool) -> Self {
        b[0]
    }
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl ChunkSample for u16 {
    fn from_bytes(b: &[u8], little_endian: bool) -> Self {
        let b = [b[0], b[1]];
        match little_endian {
            true => u16::from_le_bytes(b),
            false => u16::from_be_bytes(b),
        }
    }
    fn plus(self, other: Self) -> Self {
        self.wrapping_add(other)
    }
}

impl ChunkSample for f32 {
    fn from_bytes(b: &[u8], little_endian: bool) -> Self {
        let b = [b[0], b[1], b[2], b[3]];
        match little_endian {
            true => f32::from_le_bytes(b),
            false => f32::from_be_bytes(b),
        }
    }
    fn plus(self, other: Self) -> Self {
        self + other
    }
}

/// The interleaved image being assembled from planar tiles.
enum Planes {
    U8(Vec<u8>, (u32, u32, u32)),
    U16(Vec<u16>, (u32, u32, u32)),
    F32(Vec<f32>, (u32, u32, u32)),
}

impl Planes {
    fn new(bits: u8, float: bool, w: u32, h: u32, samples: u32) -> Result<Planes, String> {
        let n = w as usize * h as usize * samples as usize;
        let dims = (w, h, samples);
        Ok(match (bits, float) {
            (8, false) => Planes::U8(vec![0; n], dims),
            (16, false) => Planes::U16(vec![0; n], dims),
            (32, true) => Planes::F32(vec![0.0; n], dims),
            _ => {
                let kind = if float { "float" } else { "integer" };
                return Err(format!(
                    "separate planes of {bits}-bit {kind} samples, which gblur does not read"
                ));
            }
        })
    }

    /// Puts one chunk of one plane, whose `(dw, dh)` pixels inside the image lie at
    /// `(x0, y0)`, in place.
    fn place(
        &mut self,
        raw: &[u8],
        layout: &PlanarLayout,
        at: (u32, u32),
        size: (u32, u32),
        plane: u32,
    ) -> Result<(), String> {
        fn put<T: Copy>(
            out: &mut [T],
            (w, _, samples): (u32, u32, u32),
            chunk: &[T],
            (stride, (x0, y0), (dw, dh)): (usize, (u32, u32), (u32, u32)),
            plane: u32,
        ) {
            for (y, row) in chunk.chunks_exact(stride).take(dh as usize).enumerate() {
                let start = ((y0 as usize + y) * w as usize + x0 as usize) * samples as usize;
                for (x, &v) in row[..dw as usize].iter().enumerate() {
                    out[start + x * samples as usize + plane as usize] = v;
                }
            }
        }
        let place = (layout.chunk.0 as usize, at, size);
        match self {
            Planes::U8(out, dims) => put(out, *dims, &layout.samples::<u8>(raw), place, plane),
            Planes::U16(out, dims) => put(out, *dims, &layout.samples::<u16>(raw), place, plane),
            Planes::F32(out, dims) => put(out, *dims, &layout.samples::<f32>(raw), place, plane),
        }
        Ok(())
    }

    fn image(self) -> Result<DynamicImage, String> {
        fn build<P: Pixel>(
            (w, h, _): (u32, u32, u32),
            data: Vec<P::Subpixel>,
        ) -> Result<ImageBuffer<P, Vec<P::Subpixel>>, String> {
            ImageBuffer::from_raw(w, h, data).ok_or_else(|| "a buffer of the wrong size".into())
        }
        Ok(match self {
            Planes::U8(d, dims @ (_, _, 1)) => build::<Luma<u8>>(dims, d)?.into(),
            Planes::U8(d, dims @ (_, _, 2)) => build::<LumaA<u8>>(dims, d)?.into(),
            Planes::U8(d, dims @ (_, _, 3)) => build::<Rgb<u8>>(dims, d)?.into(),
            Planes::U8(d, dims) => build::<Rgba<u8>>(dims, d)?.into(),
            Planes::U16(d, dims @ (_, _, 1)) => build::<Luma<u16>>(dims, d)?.into(),
            Planes::U16(d, dims @ (_, _, 2)) => build::<LumaA<u16>>(dims, d)?.into(),
            Planes::U16(d, dims @ (_, _, 3)) => build::<Rgb<u16>>(dims, d)?.into(),
            Planes::U16(d, dims) => build::<Rgba<u16>>(dims, d)?.into(),
            Planes::F32(d, (w, h, 1)) => {
                gray_float_as_rgb(w, h, &d, false).ok_or("a buffer of the wrong size")?
            }
            Planes::F32(d, (w, h, 2)) => {
                gray_float_as_rgb(w, h, &d, true).ok_or("a buffer of the wrong size")?
            }
            Planes::F32(d, dims @ (_, _, 3)) => build::<Rgb<f32>>(dims, d)?.into(),
            Planes::F32(d, dims) => build::<Rgba<f32>>(dims, d)?.into(),
        })
    }
}

/// Divides associated (premultiplied) alpha out of the colour, rounding to the nearest
/// sample; colour under zero alpha is 0.
pub fn unpremultiply(image: &mut DynamicImage) {
    fn integer<const N: usize>(samples: &mut [u8]) {
        for px in samples.chunks_exact_mut(N) {
            let a = px[N - 1] as u32;
            for c in &mut px[..N - 1] {
                *c = match a {
                    0 => 0,
                    a => ((*c as u32 * 255 + a / 2) / a).min(255) as u8,
                };
            }
        }
    }
    fn integer16<const N: usize>(samples: &mut [u16]) {
        for px in samples.chunks_exact_mut(N) {
            let a = px[N - 1] as u64;
            for c in &mut px[..N - 1] {
                *c = match a {
                    0 => 0,
                    a => ((*c as u64 * 65535 + a / 2) / a).min(65535) as u16,
                };
            }
        }
    }
    match image {
        DynamicImage::ImageLumaA8(i) => integer::<2>(i),
        DynamicImage::ImageRgba8(i) => integer::<4>(i),
        DynamicImage::ImageLumaA16(i) => integer16::<2>(i),
        DynamicImage::ImageRgba16(i) => integer16::<4>(i),
        DynamicImage::ImageRgba32F(i) => {
            for px in i.chunks_exact_mut(4) {
                let a = px[3];
                for c in &mut px[..3] {
                    *c = if a > 0.0 { *c / a } else { 0.0 };
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use tiff::encoder::TiffEncoder;

    /// A TIFF of `w` × `h` RGB tiles of `t` × `t`, each sample stored in its own plane, as
    /// libtiff lays it out: the tag set by hand, the tiles written one plane after another.
    fn planar_tiled(w: u32, h: u32, t: u32, pixel: impl Fn(u32, u32, u32) -> u8) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut e = TiffEncoder::new(&mut out).unwrap();
        let mut dir = e.image_directory().unwrap();
        let (across, down) = (w.div_ceil(t), h.div_ceil(t));
        let mut offsets = Vec::new();
        let mut counts = Vec::new();
        for plane in 0..3 {
            for tile in 0..across * down {
                let (x0, y0) = ((tile % across) * t, (tile / across) * t);
                let data: Vec<u8> = (0..t * t)
                    .map(|i| pixel(x0 + i % t, y0 + i / t, plane))
                    .collect();
                offsets.push(dir.write_data(&data[..]).unwrap() as u32);
                counts.push(data.len() as u32);
            }
        }
        dir.write_tag(Tag::ImageWidth, w).unwrap();
        dir.write_tag(Tag::ImageLength, h).unwrap();
        dir.write_tag(Tag::BitsPerSample, &[8u16, 8, 8][..])
            .unwrap();
        dir.write_tag(Tag::Compression, 1u16).unwrap();
        dir.write_tag(Tag::PhotometricInterpretation, 2u16).unwrap();
        dir.write_tag(Tag::SamplesPerPixel, 3u16).unwrap();
        dir.write_tag(Tag::PlanarConfiguration, 2u16).unwrap();
        dir.write_tag(Tag::TileWidth, t).unwrap();
        dir.write_tag(Tag::TileLength, t).unwrap();
        dir.write_tag(Tag::TileOffsets, &offsets[..]).unwrap();
        dir.write_tag(Tag::TileByteCounts, &counts[..]).unwrap();
        dir.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn planar_tiles_are_interleaved_into_the_image() {
        let pixel = |x: u32, y: u32, p: u32| (x * 3 + y * 7 + p * 50) as u8;
        let file = planar_tiled(37, 21, 16, pixel);
        let mut reader = Cursor::new(&file);
        assert!(Quirks::read(&mut reader).planar_tiles);
        reader.set_position(0);
        let quirks = Quirks::read(&mut reader);
        reader.set_position(0);
        let image = read_image(&mut reader, &quirks, 1 << 20).unwrap();
        let rgb = image.as_rgb8().expect("RGB8");
        for (x, y, px) in rgb.enumerate_pixels() {
            assert_eq!(
                px.0,
                [pixel(x, y, 0), pixel(x, y, 1), pixel(x, y, 2)],
                "({x}, {y})"
            );
        }
        reader.set_position(0);
        assert!(
            read_image(&mut reader, &quirks, 100).is_err(),
            "over the limit"
        );
    }

    #[test]
    fn packbits_unpacks_literals_and_runs() {
        // Apple's example: literals, a run of 3, a literal, the no-op, a run of 2.
        let packed = [2, 1, 2, 3, 0xFE, 9, 0, 7, 0x80, 0xFF, 4];
        assert_eq!(unpack_bits(&packed, 100), [1, 2, 3, 9, 9, 9, 7, 4, 4]);
        assert_eq!(unpack_bits(&packed, 4), [1, 2, 3, 9, 9, 9]);
        assert_eq!(unpack_bits(&[5, 1], 100), [1], "cut short");
    }

    #[test]
    fn associated_alpha_is_divided_out() {
        let mut image = DynamicImage::from(
            image::RgbaImage::from_raw(3, 1, vec![50, 100, 0, 128, 0, 0, 0, 0, 255, 255, 255, 255])
                .unwrap(),
        );
        unpremultiply(&mut image);
        assert_eq!(
            image.as_bytes(),
            [100, 199, 0, 128, 0, 0, 0, 0, 255, 255, 255, 255]
        );
        let mut gray16 = DynamicImage::from(
            ImageBuffer::<LumaA<u16>, _>::from_raw(1, 1, vec![16384u16, 32768]).unwrap(),
        );
        unpremultiply(&mut gray16);
        assert_eq!(gray16.as_luma_alpha16().unwrap().as_raw(), &[32768, 32768]);
    }

    #[test]
    fn reversed_bits_are_mended_where_they_can_be_and_refused_elsewhere() {
        let q = Quirks {
            reversed_bits: true,
            compression: 1,
            bits: 16,
            ..Quirks::default()
        };
        assert!(q.refused().is_none());
        let mut image = DynamicImage::from(
            ImageBuffer::<Luma<u16>, _>::from_raw(1, 1, vec![0x0180u16]).unwrap(),
        );
        q.mend(&mut image);
        assert_eq!(image.as_luma16().unwrap().as_raw(), &[0x8001]);
        let fax = Quirks {
            compression: 4,
            bits: 1,
            ..q
        };
        assert!(fax.refused().unwrap().contains("FillOrder 2"));
    }

    #[test]
    fn zstandard_is_refused_in_a_build_without_it_and_read_in_one_with_it() {
        let zstd = Quirks {
            compression: 50000,
            ..Quirks::default()
        };
        let said = zstd.refused_in(false).unwrap();
        assert!(
            said.contains("Zstandard") && said.contains("--features zstd"),
            "{said}"
        );
        assert!(zstd.refused_in(true).is_none());
    }
}
