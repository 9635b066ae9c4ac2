//! TIFF as gblur reads and writes it beside the `image` crate: what its decoder gets wrong or
//! cannot read (`read`: tiled planes, reversed bit order, associated alpha), and the writer
//! both engines use (`write`: strips of whole rows, with the tags a reader needs and no
//! others: unassociated alpha declared, no predictor on uncompressed data, gray with alpha),
//! and the strip engine's halves: `rows_in` (a strip at a time from a file) and `rows_out`
//! (strips into a file as the rows come).

mod read;
pub mod rows_in;
pub mod rows_out;
pub mod write;

pub use read::{read_image, unpremultiply, Quirks};

use image::DynamicImage;

/// `image` as a TIFF in memory, with its ICC profile; None for a colour type TIFF output does
/// not take (`codec::output_color` converts to one first).
pub fn encode(image: &DynamicImage, icc: Option<&[u8]>) -> Option<Result<Vec<u8>, String>> {
    let layout = |channels| write::Layout {
        width: image.width(),
        height: image.height(),
        channels,
        icc,
    };
    let encoded = match image {
        DynamicImage::ImageLuma8(i) => write::encode(i.as_raw(), layout(1)),
        DynamicImage::ImageLumaA8(i) => write::encode(i.as_raw(), layout(2)),
        DynamicImage::ImageRgb8(i) => write::encode(i.as_raw(), layout(3)),
        DynamicImage::ImageRgba8(i) => write::encode(i.as_raw(), layout(4)),
        DynamicImage::ImageLuma16(i) => write::encode(i.as_raw(), layout(1)),
        DynamicImage::ImageLumaA16(i) => write::encode(i.as_raw(), layout(2)),
        DynamicImage::ImageRgb16(i) => write::encode(i.as_raw(), layout(3)),
        DynamicImage::ImageRgba16(i) => write::encode(i.as_raw(), layout(4)),
        DynamicImage::ImageRgb32F(i) => write::encode(i.as_raw(), layout(3)),
        DynamicImage::ImageRgba32F(i) => write::encode(i.as_raw(), layout(4)),
        _ => return None,
    };
    Some(encoded.map_err(|e| e.to_string()))
}
