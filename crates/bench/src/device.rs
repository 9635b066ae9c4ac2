//! What every bench shares on the device side: opening the OpenCL device, deterministic input
//! data, the float4 copy kernel (every bench's yardstick), moving buffers to and from the
//! device, and the element-wise check of a result against the host's.

use crate::kernels::COPY;
use anyhow::Context as _;
use gblur::gpu::opencl::queue::Arg;
use gblur::gpu::opencl::{device, ClContext, ClError, DeviceChoice, Timed};
use gblur::pixels::planar::Planar;
use opencl3::memory::Buffer;

/// Benchmarks need an OpenCL device: `rust` or no device at all is an error here.
pub fn open_device(choice: &DeviceChoice) -> anyhow::Result<ClContext> {
    let info = device::select(choice)?
        .context("bench needs an OpenCL device, and none was found (gblur devices lists them)")?;
    Ok(ClContext::new(info)?)
}

/// Deterministic values in [0, 1).
pub fn noise(n: usize) -> Vec<f32> {
    noise_seeded(n, 7)
}

/// `noise` from another seed: an xorshift stream, the same on every machine.
pub fn noise_seeded(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// A planar noise image's worth of values, deterministic.
pub fn noise_planar(w: usize, h: usize, c: usize, seed: u64) -> Planar {
    let mut p = Planar::new(w, h, c);
    p.data = noise_seeded(w * h * c, seed);
    p
}

/// Enqueues a float4 copy of `n` floats (`n` a multiple of 4, buffers at least that long).
pub fn enqueue_copy4(
    ctx: &ClContext,
    src: &Buffer<f32>,
    dst: &Buffer<f32>,
    n: usize,
) -> Result<Timed, ClError> {
    copy_kernel(ctx, "copy_float4", "", src, dst, n / 4, "copy float4")
}

/// Enqueues one of `kernels/copy.cl`'s kernels over `items` work-items, built with `defines`.
pub fn copy_kernel(
    ctx: &ClContext,
    kernel: &str,
    defines: &str,
    src: &Buffer<f32>,
    dst: &Buffer<f32>,
    items: usize,
    name: &str,
) -> Result<Timed, ClError> {
    let k = ctx.kernel(COPY, kernel, defines)?;
    ctx.run(
        &k,
        &[Arg::Buf(src), Arg::Buf(dst), Arg::U32(items as u32)],
        &[items.max(1)],
        None,
        name,
    )
}

/// Device buffers holding `data` (padded to a multiple of 4 floats) and a scratch twin.
pub fn upload_pair(
    ctx: &ClContext,
    data: &[f32],
) -> Result<(Buffer<f32>, Buffer<f32>, usize), ClError> {
    let n = data.len().div_ceil(4) * 4;
    let mut padded = data.to_vec();
    padded.resize(n, 0.0);
    let mut src = ctx.buffer(n, false)?;
    let dst = ctx.buffer(n, false)?;
    ctx.write(&mut src, &padded, "upload")?;
    ctx.finish()?;
    Ok((src, dst, n))
}

/// The first `n` floats of `buf`, read back.
pub fn download(ctx: &ClContext, buf: &Buffer<f32>, n: usize) -> Result<Vec<f32>, ClError> {
    let mut v = vec![0f32; n];
    ctx.read(buf, &mut v, "download")?;
    Ok(v)
}

/// Checks a device result against the host's, naming the first mismatch.
pub fn verify(got: &[f32], want: &[f32], tol: f32) -> Result<(), String> {
    match got
        .iter()
        .zip(want)
        // NaN never compares within tolerance, so it is reported too.
        .position(|(a, b)| {
            (a - b).abs().partial_cmp(&tol) != Some(std::cmp::Ordering::Less)
                && (a - b).abs() != tol
        }) {
        None => Ok(()),
        Some(i) => Err(format!("element {i}: got {}, want {}", got[i], want[i])),
    }
}
