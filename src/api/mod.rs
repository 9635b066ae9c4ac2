//! The library's public API: `Gaussian` (a checked 2-D blur) and its in-memory blurs of
//! images, raw interleaved samples and planes; `nd` (N-D arrays, scipy's contract); `Device`
//! (opened once, reused); `blur_file` (the command's job for one file); and `Error`.

mod array_cost;
pub mod command;
mod device;
mod error;
mod feature_map;
mod file;
mod gaussian;
mod image;
pub mod nd;
mod page_locked;

pub use device::Device;
pub use error::Error;
pub use feature_map::{feature_map_file, Feature, FeatureOptions, FeatureReport};
pub use file::{blur_file, FileOptions, FileReport, PassTime};
pub use gaussian::{Gaussian, GaussianBuilder};
pub use image::{keep_scratch, Layout, Sample};
pub use page_locked::PageLocked;
