//! The integration tests, as a user meets gblur: the `gblur` command (through its binary) and
//! the library's public API, in one test binary (one link instead of one per file).
//! `tests/stream_memory.rs` stays a binary of its own: Linux counts a spawning process's
//! memory in its child's peak, and those tests measure their children's peaks.

mod common;
mod support;

mod api;
mod architecture;
mod auto_choice;
mod avif_output;
mod bad_inputs;
mod batch;
mod batch_devices;
mod bench;
mod cli;
mod cluster;
mod cmyk_kept;
mod device_faults;
mod device_open;
mod edges;
mod faults;
mod function_length;
mod golden;
mod gradient;
mod gray_float;
mod hdr;
mod heif;
mod icc;
mod iptc;
mod jxl;
mod links;
mod lossy_webp;
mod masks;
mod metadata;
mod one_axis;
mod opens_once;
mod other_writers;
mod pages;
mod pipes;
mod real_files;
mod sharpen;
mod stream;
mod stream_gpu;
mod stream_jpeg;
mod tiff_output;
mod work_safety;
