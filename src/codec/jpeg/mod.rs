//! JPEG through `libjpeg-turbo-rs`: decoding the common layouts (`decode`) and encoding in
//! stripes on every core, joined by restart markers (`encode`).

mod decode;
mod encode;

pub use decode::decode_pixels;
pub use encode::{encode, JpegColor};
