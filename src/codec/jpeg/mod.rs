//! JPEG through libjpeg (libjpeg-turbo's C code and SIMD, built by the `mozjpeg` crate):
//! decoding to gray or RGB (`decode`) or to the YCbCr planes (`planes`), encoding in stripes
//! on every core, joined by restart markers (`encode`, through `compress`), recovering damaged
//! files (`libjpeg`), and reading how a file was written (`header`); the strip engine's halves:
//! `rows_in` (a scanline at a time) and `rows_out` (restart stripes encoded as their rows
//! come). CMYK, YCCK and 12-bit files go to the `image` crate's decoder (zune-jpeg).

mod compress;
mod decode;
mod encode;
mod errors;
mod header;
pub mod libjpeg;
mod pieces;
mod planes;
pub mod rows_in;
pub mod rows_out;
mod settings;

pub use decode::{decode_inks, decode_pixels, decode_strict};
pub use compress::{Chroma, JpegColor};
pub use encode::{encode, encode_stripe, StripePlan};
pub use header::{Frame, JpegTraits};
pub use planes::{decode_planes, encode_planes, YccPlanes};
pub use settings::{JpegOptions, JpegSettings, Quality, Subsampling, DEFAULT_QUALITY};
