//! OpenCL plumbing: device discovery and selection, program builds with their logs, and a
//! profiled in-order queue whose every command keeps its event, so each pass can be timed.

pub mod cache;
pub mod device;
pub mod pinned;
pub mod program;
pub mod queue;
pub mod staged;

pub use device::{DeviceChoice, DeviceInfo};
pub use queue::{ClContext, Enqueued, Timed};

use thiserror::Error;

/// Failures at the OpenCL seam, carrying what a user needs to act on them.
#[derive(Debug, Error)]
pub enum ClError {
    #[error("no OpenCL runtime is installed (libOpenCL.so.1 could not be loaded)")]
    NoRuntime,
    #[error("no OpenCL device matches --device {choice} (available: {available})")]
    NoMatch { choice: String, available: String },
    #[error("{what} failed on {device}: {code}")]
    Api {
        device: String,
        what: String,
        code: String,
    },
    #[error(
        "building {source_file} for {device} failed (options: '{options}'); compiler log:\n{log}"
    )]
    Build {
        device: String,
        source_file: String,
        options: String,
        log: String,
    },
    #[error("kernel {kernel} (options '{options}') failed to enqueue on {device}: {code}")]
    Enqueue {
        device: String,
        kernel: String,
        options: String,
        code: String,
    },
    #[error("{device} cannot hold the image: {need_mib} MiB per buffer, the device allows {max_mib} MiB (try --device rust)")]
    TooLarge {
        device: String,
        need_mib: u64,
        max_mib: u64,
    },
}

/// Whether an OpenCL ICD loader can be loaded at all (the binary links it at run time).
pub fn runtime_available() -> bool {
    cl3::is_opencl_runtime_available()
}
