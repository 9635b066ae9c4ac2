//! Helpers of the crate's cross-module tests: the OpenCL device the kernel tests run on, the
//! gblur binary, the repository's files and deterministic noise.

use crate::gpu::opencl::{device, ClContext, DeviceInfo};
use crate::pixels::planar::Planar;
use std::path::{Path, PathBuf};

/// The OpenCL device the kernel tests run on (`device::for_tests`).
pub fn require_opencl() -> DeviceInfo {
    device::for_tests()
}

/// A context on the test device (`require_opencl`).
pub fn context() -> ClContext {
    ClContext::new(require_opencl()).expect("creating the OpenCL context")
}

/// The gblur binary of this build, as an `assert_cmd` command.
pub fn gblur() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("gblur").unwrap()
}

/// A path inside the repository (`samples/...`, `tests/fixtures/...`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
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

/// An image file read by gblur's own decoders (libjpeg for JPEG, which the `image` crate is
/// built without), upright.
pub fn open_image(path: &Path) -> image::DynamicImage {
    match crate::codec::decode(path, 4096) {
        Ok(decoded) => decoded.image,
        Err(e) => panic!("{e}"),
    }
}
