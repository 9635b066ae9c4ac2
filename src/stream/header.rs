//! What both streamed decoders read before the pixels: the header and metadata as the
//! whole-image decode reads them (the `image` crate's decoder, with
//! `metadata::read_container`).

use crate::codec::metadata::{self, Metadata};
use crate::codec::ImageIoError;
use image::{ColorType, ImageDecoder, ImageFormat, ImageResult};
use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::Path;

/// A file's metadata, sample layout and size.
pub struct Header {
    pub meta: Metadata,
    pub color: ColorType,
    pub width: u32,
    pub height: u32,
}

impl Header {
    /// Samples per row.
    pub fn row_samples(&self) -> usize {
        self.width as usize * self.color.channel_count() as usize
    }
}

pub fn decode_error(path: &Path, detail: impl ToString) -> ImageIoError {
    ImageIoError::Decode {
        path: path.into(),
        detail: detail.to_string(),
    }
}

pub fn open_error(path: &Path) -> impl Fn(std::io::Error) -> ImageIoError + '_ {
    move |cause| ImageIoError::Open {
        path: path.into(),
        cause,
    }
}

/// The header of `path`, a `format` file that `decoder` reads. `Err(why)` inside the Ok: its
/// orientation (EXIF, the TIFF's own tag or XMP) turns the image, which the strip engine does
/// not do, or its alpha is associated (premultiplied). An image without pixels is an error.
pub fn read<D: ImageDecoder>(
    path: &Path,
    format: ImageFormat,
    decoder: impl FnOnce(BufReader<File>) -> ImageResult<D>,
) -> Result<Result<Header, String>, ImageIoError> {
    let mut file = BufReader::new(File::open(path).map_err(open_error(path))?);
    let from_file = metadata::read_container(format, &mut file);
    file.rewind().map_err(open_error(path))?;
    let mut head = decoder(file).map_err(|e| decode_error(path, e))?;
    let meta = Metadata::read(Some(&mut head), from_file).map_err(|e| decode_error(path, e))?;
    if meta.orientation.is_some() {
        return Ok(Err("its orientation turns the image".into()));
    }
    if meta.associated_alpha {
        return Ok(Err("its alpha is associated (premultiplied)".into()));
    }
    let color = head.color_type();
    let (width, height) = head.dimensions();
    if width == 0 || height == 0 {
        return Err(decode_error(
            path,
            format!("the image has no pixels ({width} × {height})"),
        ));
    }
    Ok(Ok(Header {
        meta,
        color,
        width,
        height,
    }))
}
