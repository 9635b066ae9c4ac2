//! JPEG through `libjpeg-turbo-rs`: decoding colour files with subsampled chroma (`decode`)
//! and encoding in stripes on every core, joined by restart markers (`encode`).

mod decode;
mod encode;

pub use decode::decode_pixels;
pub use encode::{encode, JpegColor};
