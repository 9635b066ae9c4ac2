//! Shared test helpers: the gblur binary, the repository's files, the OpenCL device the
//! kernel tests run on, and deterministic noise.
#![allow(dead_code)]

use gblur::opencl::{device, ClContext, DeviceChoice};
use gblur::planar::Planar;
use std::path::{Path, PathBuf};

/// The gblur binary this test build made, as an `assert_cmd` command.
pub fn gblur() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("gblur").unwrap()
}

/// A path inside the repository (`samples/...`, `tests/fixtures/...`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

/// The first OpenCL device (PoCL in CI). The kernel tests must run, not skip: without a device
/// they fail with the instruction to install one, unless GBLUR_SKIP_OPENCL_TESTS=1.
pub fn context() -> Option<ClContext> {
    if std::env::var_os("GBLUR_SKIP_OPENCL_TESTS").is_some() {
        eprintln!("GBLUR_SKIP_OPENCL_TESTS set: skipping an OpenCL test");
        return None;
    }
    let choice = std::env::var("GBLUR_TEST_DEVICE")
        .map(|s| DeviceChoice::parse(&s))
        .unwrap_or(DeviceChoice::Auto);
    let info = device::select(&choice)
        .expect("OpenCL device selection failed")
        .expect("no OpenCL device: install one (Debian: apt-get install pocl-opencl-icd ocl-icd-libopencl1) or set GBLUR_SKIP_OPENCL_TESTS=1");
    Some(ClContext::new(info).expect("creating the OpenCL context"))
}

/// Deterministic pseudo-random image in [0, 1).
pub fn noise(width: usize, height: usize, channels: usize, seed: u64) -> Planar {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    let mut p = Planar::new(width, height, channels);
    for v in &mut p.data {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        *v = (s >> 40) as f32 / (1u64 << 24) as f32;
    }
    p
}
