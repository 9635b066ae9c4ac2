//! gblur: a recursive (IIR) Gaussian blur for images, on OpenCL devices or in Rust.
//!
//! Layers, top to bottom: the command line (`cli` builds every request); the commands (`job`,
//! `batch`, which reuses the main command's `BlurJob`, `bench`, `devices`); the per-image work
//! they share (`work`, with `backend` choosing the device and pipeline once); the engines
//! (`codec`, `cpu`, `gpu`, over `filter` and `pixels`); and what every layer may use (`report`'s
//! passes, `interrupt`, `fault`'s test hooks). Nothing imports upwards, and
//! `tests/architecture.rs` fails on an import cycle.

mod api;
pub use api::{
    blur_file, nd, Device, Error, FileOptions, FileReport, Gaussian, GaussianBuilder, Layout,
    PassTime, Sample,
};
pub use filter::{EdgeMode, Method};

pub mod backend;
pub mod batch;
pub mod bench;
pub mod cli;
pub mod codec;
pub mod cpu;
pub mod devices;
pub mod fault;
pub mod filter;
pub mod gpu;
pub mod interrupt;
pub mod job;
pub mod mask;
pub mod memory;
pub mod pixels;
pub mod report;
pub mod stream;
pub mod work;
