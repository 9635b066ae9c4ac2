//! The 8-bit path: 8-bit gray, gray+alpha, RGB and RGBA go up as bytes and come back as bytes
//! into the same memory, converted inside the blocked kernels (`plan::Upload` says which images
//! take it); anything else goes up as planar f32 (`pipeline::blur`).

use crate::filter::Blur2d;
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::{ClContext, ClError, Enqueued};
use crate::gpu::pipeline::{blocked_starts, upload_filter, upload_floats, BlockedAxis, Run};
use crate::gpu::plan::{ChunkStart, Pipeline, Upload};
use crate::pixels;
use crate::report::{Pass, PassKind};
use image::DynamicImage;
use opencl3::memory::Buffer;

/// Enqueues the blur of the 8-bit image in `bytes` (`w`×`h` pixels of `channels` samples), in
/// place: the y axis reads the bytes and writes the f32 intermediate `mid` transposed, the x
/// axis reads `mid` and writes the bytes back upright. Both axes must be recursive.
pub fn enqueue_u8(
    ctx: &ClContext,
    bytes: &Buffer<u8>,
    mid: &Buffer<f32>,
    (w, h, channels): (usize, usize, usize),
    blur: &Blur2d,
    linear: bool,
    blocked: (usize, ChunkStart),
) -> Result<Vec<Enqueued>, ClError> {
    let (cx, cy) = (upload_filter(ctx, &blur.x)?, upload_filter(ctx, &blur.y)?);
    let lut = upload_floats(ctx, &pixels::u8_lut(linear))?;
    let [fy, fx] = Upload::U8 { channels, linear }.formats();
    let carries = [
        blocked_starts(ctx, &blur.y, blocked, h, fy)?,
        blocked_starts(ctx, &blur.x, blocked, w, fx)?,
    ];
    let mut run = Run::new(ctx);
    let [carry_y, carry_x] = carries;
    let y = BlockedAxis {
        coef: &cy.coef,
        lut: &lut,
        src: Arg::Bytes(bytes),
        dst: Arg::Buf(mid),
        dims: (w, h, 1),
        format: fy,
        name: "y",
    };
    run.blocked(&y, carry_y)?;
    let x = BlockedAxis {
        coef: &cx.coef,
        lut: &lut,
        src: Arg::Buf(mid),
        dst: Arg::Bytes(bytes),
        dims: (h, w, 1),
        format: fx,
        name: "x",
    };
    run.blocked(&x, carry_x)?;
    run.finish()
}

/// Blurs an 8-bit image (gray, gray+alpha, RGB, RGBA) on the device in place: its samples go
/// up as bytes and come back as bytes into the same memory, so the host holds no other copy.
/// `pipeline` must be the blocked one and both axes recursive (`Upload::for_image`).
pub fn blur_u8(
    ctx: &ClContext,
    image: &mut DynamicImage,
    blur: &Blur2d,
    linear: bool,
    pipeline: Pipeline,
) -> Result<Vec<Pass>, ClError> {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let channels = image.color().channel_count() as usize;
    let Pipeline::Blocked { chunk, start } = pipeline else {
        unreachable!("Upload::for_image sends 8-bit images only to the blocked pipeline")
    };
    let samples: &mut [u8] = match image {
        DynamicImage::ImageLuma8(b) => b,
        DynamicImage::ImageLumaA8(b) => b,
        DynamicImage::ImageRgb8(b) => b,
        DynamicImage::ImageRgba8(b) => b,
        _ => unreachable!("Upload::for_image sends only 8-bit images here"),
    };
    let n = samples.len() as u64;
    let mut scratch = ctx.u8_scratch(samples.len())?;
    let mut commands = vec![Enqueued {
        timed: ctx.write(&mut scratch.bytes, samples, "upload (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    }];
    commands.extend(enqueue_u8(
        ctx,
        &scratch.bytes,
        &scratch.mid,
        (w, h, channels),
        blur,
        linear,
        (chunk, start),
    )?);
    commands.push(Enqueued {
        timed: ctx.read(&scratch.bytes, samples, "download (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    });
    // The blocking download has finished every command that used the buffers.
    ctx.keep_u8_scratch(scratch);
    commands
        .into_iter()
        .map(|c| c.into_pass(ctx))
        .collect::<Result<Vec<_>, ClError>>()
}
