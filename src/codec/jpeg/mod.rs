//! JPEG through `libjpeg-turbo-rs`: decoding colour files with subsampled chroma to RGB
//! (`decode`) or to their YCbCr planes (`planes`), encoding in stripes on every core, joined
//! by restart markers (`encode`), and reading how a file was written (`header`); the strip
//! engine's halves: `rows_in` (a scanline at a time from libjpeg) and `rows_out` (restart
//! stripes encoded as their rows come).

mod decode;
mod encode;
mod header;
pub mod libjpeg;
mod planes;
pub mod rows_in;
pub mod rows_out;
mod settings;

pub use decode::{decode_inks, decode_pixels, decode_strict};
pub use encode::{encode, encode_stripe, JpegColor, StripePlan};
pub use header::{Chroma, Frame, JpegTraits};
pub use planes::{decode_planes, encode_planes, YccPlanes};
pub use settings::{JpegOptions, JpegSettings, Quality, Subsampling, DEFAULT_QUALITY};
