//! gblur: a recursive (IIR) Gaussian blur for images, on OpenCL devices or in Rust.
//!
//! Layers, top to bottom: the commands (`cli` builds their requests; `job`, `batch`, `bench`,
//! `devices` run them), the per-image work they share (`work`, `backend`, `report`), and the
//! engines below (`codec`, `pixels`, `filter`, `cpu`, `gpu`). Nothing imports upwards.

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
pub mod pixels;
pub mod report;
pub mod work;
