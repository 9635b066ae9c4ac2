//! Tests that cross the crate's modules and need its internals: every kernel against the Rust
//! reference, each path's accuracy against an exact Gaussian, the program cache, JPEG planes'
//! layouts and the fuzzers' regressions. What a user sees (the
//! command, the public API) is tested from outside, in `tests/it`.

mod accuracy;
mod common;
mod derivatives;
mod device_derivatives;
mod fuzz_regressions;
mod jpeg_planes;
mod kept_scratch;
mod non_finite;
mod opencl_vs_reference;
mod planes;
mod program_cache;
mod staged;
