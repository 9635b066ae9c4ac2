//! PNG rows in: the header and metadata as the whole-image decode reads them (the `image`
//! crate's decoder, with the codec's `read_metadata`), then the pixels one row at a time from
//! the `png` crate, expanded as the `image` crate expands them (palette and low bit depths to
//! 8 bits, tRNS to alpha).

use crate::codec::read::Input;
use crate::codec::rows::{decode_error, file_of, Header, InputFile, RowSample};
use crate::codec::ImageIoError;
use image::codecs::png::PngDecoder;
use image::ImageFormat;
use std::path::PathBuf;

/// A PNG being read row by row.
pub struct PngRows {
    reader: png::Reader<InputFile>,
    pub path: PathBuf,
    pub header: Header,
}

/// Opens `input` (a PNG file) for reading by rows. `Err(why)` inside the Ok: a PNG the strip engine
/// does not stream (interlaced, turned by its EXIF orientation, or a layout the banded blur
/// does not take), which the whole-image path reads instead.
pub fn open(input: &Input) -> Result<Result<PngRows, String>, ImageIoError> {
    let header = match crate::codec::rows::read(input, ImageFormat::Png, PngDecoder::new)? {
        Ok(header) => header,
        Err(why) => return Ok(Err(why)),
    };
    let path = input.name.as_path();
    let file = file_of(input)?;
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::EXPAND);
    let reader = decoder.read_info().map_err(|e| decode_error(path, e))?;
    if reader.info().interlaced {
        return Ok(Err("it is interlaced (Adam7)".into()));
    }
    let (color, width) = (header.color, header.width);
    let expected = color.bytes_per_pixel() as usize * width as usize;
    if reader.output_line_size(width) != Some(expected) {
        return Ok(Err(format!("its layout {color:?}")));
    }
    Ok(Ok(PngRows {
        reader,
        path: path.into(),
        header,
    }))
}

impl PngRows {
    /// Fills `out` with the next rows (whole rows), in native order.
    pub fn read<T: RowSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let n = self.header.row_samples();
        for dst in out.chunks_exact_mut(n) {
            let row = self
                .reader
                .next_row()
                .map_err(|e| decode_error(&self.path, e))?
                .ok_or_else(|| decode_error(&self.path, "the image data ends early"))?;
            T::from_png(row.data(), dst);
        }
        Ok(())
    }
}
