//! The blur on OpenCL devices: device discovery and the profiled queue (`opencl`), and the
//! pipelines that enqueue the kernels of `kernels/*.cl`.

pub mod opencl;
pub mod pipeline;
