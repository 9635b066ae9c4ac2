//! TIFF rows in: the header and metadata as the whole-image decode reads them (the `image`
//! crate's decoder, with the codec's `read_metadata`), then the pixels a strip at a time from
//! the `tiff` crate, so that only one strip of the file is held at once.

use crate::codec::read::Input;
use crate::codec::rows::{decode_error, file_of, Header, InputFile, RowSample};
use crate::codec::ImageIoError;
use image::codecs::tiff::TiffDecoder;
use image::{ColorType, ImageFormat};
use std::path::PathBuf;
use tiff::decoder::{ChunkType, Decoder};
use tiff::tags::{PhotometricInterpretation, PlanarConfiguration, Tag};

/// A strip-organised TIFF being read strip by strip.
pub struct TiffRows {
    decoder: Decoder<InputFile>,
    pub path: PathBuf,
    pub header: Header,
    /// The samples of the strip being read, and how many of them were handed out.
    strip: Vec<u16>,
    strip_bytes: Vec<u8>,
    taken: usize,
    next_strip: u32,
    /// The bytes of one strip's samples, which the reader holds (and the `tiff` crate its
    /// compressed bytes beside them).
    pub strip_held: u64,
    /// The Compression tag (1: none), for `--tiff-compression same`.
    pub compression: u16,
}

/// The colour types the strip engine streams from a TIFF (the banded blur's).
const STREAMED_COLORS: [ColorType; 6] = [
    ColorType::L8,
    ColorType::Rgb8,
    ColorType::Rgba8,
    ColorType::L16,
    ColorType::Rgb16,
    ColorType::Rgba16,
];

/// Opens `input` (a TIFF file) for reading by strips. `Err(why)` inside the Ok: a TIFF the strip
/// engine does not stream (tiles, separate planes, gray float, a colour model or depth the
/// banded blur does not take here, an EXIF orientation, or strips over `most_strip_bytes`
/// each), which the whole-image path reads instead.
pub fn open(
    input: &Input,
    most_strip_bytes: u64,
) -> Result<Result<TiffRows, String>, ImageIoError> {
    let path = input.name.as_path();
    let quirks = super::Quirks::read(&mut file_of(input)?);
    if quirks.gray_float {
        return Ok(Err("it is gray float, which is read whole".into()));
    }
    // What the whole-image path refuses, it refuses in its own words.
    if let Some(why) = quirks.refused() {
        return Ok(Err(why));
    }
    let mut header = match crate::codec::rows::read(input, ImageFormat::Tiff, TiffDecoder::new)? {
        Ok(header) => header,
        Err(why) => return Ok(Err(why)),
    };
    let (color, width) = (header.color, header.width);
    if !STREAMED_COLORS.contains(&color) {
        return Ok(Err(format!("its layout {color:?}")));
    }
    let mut decoder = Decoder::new(file_of(input)?).map_err(|e| decode_error(path, e))?;
    if decoder.get_chunk_type() != ChunkType::Strip {
        return Ok(Err("it is tiled".into()));
    }
    if quirks.pages > 1 {
        // The whole-image path reads the first page and says that the others were left.
        return Ok(Err("it holds several pages".into()));
    }
    // Overviews and masks beside the one page are not read; the report says so.
    header.meta.unread.extend(quirks.not_pages.note());
    let compression = match stored_chunky(&mut decoder, color) {
        Ok(compression) => compression,
        Err(why) => return Ok(Err(why.into())),
    };
    let row_bytes = width as u64 * color.bytes_per_pixel() as u64;
    let strip_bytes = decoder.chunk_dimensions().1 as u64 * row_bytes;
    if strip_bytes > most_strip_bytes {
        return Ok(Err(format!(
            "its strips hold {} MiB each, over the memory budget's share",
            strip_bytes >> 20
        )));
    }
    Ok(Ok(TiffRows {
        decoder,
        path: path.into(),
        header,
        strip: Vec::new(),
        strip_bytes: Vec::new(),
        taken: 0,
        next_strip: 0,
        strip_held: strip_bytes,
        compression,
    }))
}

/// The Compression tag (1 where none) of a TIFF whose samples lie pixel by pixel as gray
/// (black is zero) or RGB, as the banded blur takes `color`; why not where they do not.
fn stored_chunky(decoder: &mut Decoder<InputFile>, color: ColorType) -> Result<u16, &'static str> {
    let mut tag = |t| decoder.find_tag_unsigned::<u16>(t).ok().flatten();
    if tag(Tag::PlanarConfiguration).is_some_and(|p| p != PlanarConfiguration::Chunky.to_u16()) {
        return Err("its samples are stored plane by plane");
    }
    let compression = tag(Tag::Compression).unwrap_or(1);
    let expected = match color.channel_count() {
        1 => PhotometricInterpretation::BlackIsZero,
        _ => PhotometricInterpretation::RGB,
    };
    if tag(Tag::PhotometricInterpretation) != Some(expected.to_u16()) {
        return Err("its colour model is not gray (black is zero) or RGB");
    }
    Ok(compression)
}

impl TiffRows {
    /// Fills `out` with the next rows (whole rows).
    pub fn read<T: RowSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let mut filled = 0;
        while filled < out.len() {
            let held = self.strip.len().max(self.strip_bytes.len());
            if self.taken == held {
                self.next()?;
                continue;
            }
            let n = (out.len() - filled).min(held - self.taken);
            let dst = &mut out[filled..filled + n];
            let (at, to) = (self.taken, self.taken + n);
            let same_depth = match self.strip_bytes.is_empty() {
                true => T::from_native(&self.strip[at..to], dst),
                false => T::from_native(&self.strip_bytes[at..to], dst),
            };
            if !same_depth {
                return Err(decode_error(&self.path, "a strip of another bit depth"));
            }
            self.taken += n;
            filled += n;
        }
        Ok(())
    }

    /// Decodes the next strip into the strip buffer of its depth, which the strips share.
    fn next(&mut self) -> Result<(), ImageIoError> {
        let err = |e: tiff::TiffError| decode_error(&self.path, e);
        let strips = self.decoder.strip_count().map_err(err)?;
        if self.next_strip >= strips {
            return Err(decode_error(&self.path, "the image data ends early"));
        }
        let (w, rows) = self.decoder.chunk_data_dimensions(self.next_strip);
        let color = self.header.color;
        let samples = w as usize * rows as usize * color.channel_count() as usize;
        let read = match color.bytes_per_pixel() / color.channel_count() {
            1 => {
                self.strip_bytes.resize(samples, 0);
                self.decoder
                    .read_chunk_bytes(self.next_strip, &mut self.strip_bytes)
            }
            _ => {
                self.strip.resize(samples, 0);
                // SAFETY: any bytes are valid u16 halves; the decoder writes the samples in
                // native order, as `read_chunk` would return them.
                let bytes = unsafe {
                    std::slice::from_raw_parts_mut(
                        self.strip.as_mut_ptr().cast::<u8>(),
                        samples * 2,
                    )
                };
                self.decoder.read_chunk_bytes(self.next_strip, bytes)
            }
        };
        read.map_err(|e| decode_error(&self.path, e))?;
        if samples == 0 {
            return Err(decode_error(&self.path, "an empty strip"));
        }
        self.taken = 0;
        self.next_strip += 1;
        Ok(())
    }
}
