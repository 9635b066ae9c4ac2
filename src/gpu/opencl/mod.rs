//! OpenCL plumbing: device discovery and selection, program builds with their logs, and a
//! profiled in-order queue whose every command keeps its event, so each pass can be timed.

pub mod cache;
pub mod device;
pub mod lanes;
pub mod pinned;
pub mod program;
pub mod queue;
pub mod staged;

pub use device::{DeviceChoice, DeviceInfo};
pub use queue::{Arg, ClContext, Enqueued, Timed};

use thiserror::Error;

/// Failures at the OpenCL seam, carrying what a user needs to act on them.
#[derive(Debug, Error)]
pub enum ClError {
    /// No OpenCL loader (libOpenCL.so.1) on this system.
    #[error("no OpenCL runtime is installed (libOpenCL.so.1 could not be loaded)")]
    NoRuntime,
    /// `--device` named a device that is not there.
    #[error("no OpenCL device matches --device {choice} (available: {available})")]
    NoMatch {
        /// What was asked for.
        choice: String,
        /// The devices there are, by index and name.
        available: String,
    },
    /// An OpenCL call failed.
    #[error("{what} failed on {device}: {code}")]
    Api {
        /// The device's name.
        device: String,
        /// The call.
        what: String,
        /// The error code's name.
        code: String,
    },
    /// A kernel did not compile.
    #[error(
        "building {source_file} for {device} failed (options: '{options}'); compiler log:\n{log}"
    )]
    Build {
        /// The device's name.
        device: String,
        /// The kernel file (`kernels/*.cl`).
        source_file: String,
        /// The `-D` defines it was built with.
        options: String,
        /// The compiler's log.
        log: String,
    },
    /// A kernel could not be enqueued.
    #[error("kernel {kernel} (options '{options}') failed to enqueue on {device}: {code}")]
    Enqueue {
        /// The device's name.
        device: String,
        /// The kernel's name.
        kernel: String,
        /// The `-D` defines it was built with.
        options: String,
        /// The error code's name.
        code: String,
    },
    /// The image needs a buffer larger than the device allows.
    #[error("{device} cannot hold the image: {need_mib} MiB per buffer, the device allows {max_mib} MiB (try --device rust)")]
    TooLarge {
        /// The device's name.
        device: String,
        /// The largest buffer the job needs.
        need_mib: u64,
        /// The device's largest allocation.
        max_mib: u64,
    },
}

/// Whether an OpenCL ICD loader can be loaded at all (the binary links it at run time).
pub fn runtime_available() -> bool {
    cl3::is_opencl_runtime_available()
}
