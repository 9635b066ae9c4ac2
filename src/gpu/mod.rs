//! The blur on OpenCL devices: device discovery and the profiled queue (`opencl`), and the
//! pipelines that enqueue the kernels of `kernels/*.cl`, each a module of its own: `plan`
//! (which pipeline, what goes up to the device, and each blocked pass's chunk and reach),
//! `format` (the pixels as the blocked kernels see them), `defines` (the `-D` options and
//! work-group shapes those plans build with), `transpose` (the transpose strategies),
//! `pipeline` (the enqueue engine over planar f32 images, on `device_image`'s buffers),
//! `upload` (the 8-bit path), `volume` (N-D arrays) and `host_array` (an N-D array's host
//! side in staged transfers).

pub mod defines;
pub mod device_image;
pub mod format;
pub mod host_array;
pub mod opencl;
pub mod pipeline;
pub mod plan;
pub mod transpose;
pub mod upload;
pub mod volume;
