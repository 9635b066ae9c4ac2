//! JPEG through libjpeg (libjpeg-turbo's C code and SIMD, built by the `mozjpeg` crate):
//! decoding to gray or RGB (`decode`) or to the YCbCr planes (`planes`), encoding in stripes
//! on every core, joined by restart markers (`encode`, through `compress`), recovering damaged
//! files (`libjpeg`), and reading how a file was written (`header`); the strip engine's halves:
//! `rows_in` (a scanline at a time) and `rows_out` (restart stripes encoded as their rows
//! come); the header and metadata through the `image` crate's decoder interface
//! (`head_decoder`), so that libjpeg is the one JPEG library, but for `entropy`: the planes of
//! a file without restart markers decoded on every core, byte for byte as libjpeg decodes
//! them (a file libjpeg cut at restart markers decodes in `pieces`).

mod codec;
mod compress;
mod decode;
mod encode;
mod entropy;
pub(super) mod errors;
mod head_decoder;
mod header;
pub mod libjpeg;
mod pieces;
pub(super) mod planes;
pub mod rows_in;
pub mod rows_out;
mod settings;

pub(in crate::codec) use codec::check_end;
pub use codec::Jpeg;
pub use compress::{Chroma, JpegColor};
pub use decode::{decode_inks, decode_pixels, frame_within, inks_by_formula, working_bytes};
pub use encode::{encode, encode_stripe, StripePlan};
pub use head_decoder::JpegHead;
pub use header::{Frame, JpegTraits};
pub use planes::{decode_planes, encode_planes, YccPlanes};
pub use settings::{JpegOptions, JpegSettings, Quality, Subsampling, DEFAULT_QUALITY};
