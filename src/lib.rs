//! gblur: a recursive (IIR) Gaussian blur for images, on OpenCL devices or in Rust.

pub mod banded;
pub mod batch;
pub mod bench;
pub mod cli;
pub mod cpu;
pub mod devices;
pub mod fallback;
pub mod filter;
pub mod gaussian;
pub mod image_io;
pub mod interrupt;
pub mod job;
pub mod jpeg;
pub mod lanes;
pub mod opencl;
pub mod pipeline;
pub mod pixels;
pub mod planar;
pub mod png;
pub mod report;
