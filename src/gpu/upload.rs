//! What goes up to the device, and the 8-bit path: 8-bit gray, gray+alpha, RGB and RGBA go up
//! as bytes and come back as bytes into the same memory, converted inside the blocked kernels;
//! anything else goes up as planar f32 (`pipeline::blur`).

use crate::filter::Blur2d;
use crate::gpu::defines::PixelFormat;
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::{ClContext, ClError};
use crate::gpu::pipeline::{
    blocked_starts, upload_filter, upload_floats, BlockedAxis, Enqueued, Run,
};
use crate::gpu::plan::{ChunkStart, Pipeline};
use crate::pixels;
use crate::report::{Pass, PassKind};
use image::{ColorType, DynamicImage};
use opencl3::memory::Buffer;

/// What the device receives: premultiplied planar f32 (any image, converted on the host), or
/// the decoded 8-bit samples themselves, converted inside the blocked kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upload {
    PlanarF32,
    U8 { channels: usize, linear: bool },
}

impl Upload {
    /// How an image of colour type `color` goes to a device running `pipeline` for `blur`:
    /// 8-bit gray, gray+alpha, RGB and RGBA as they are when both axes are recursive and the
    /// pipeline is the blocked one, anything else as planar f32.
    pub fn for_image(color: ColorType, linear: bool, pipeline: Pipeline, blur: &Blur2d) -> Upload {
        let Some(channels) = u8_channels(color) else {
            return Upload::PlanarF32;
        };
        let recursive = blur.x.is_recursive() && blur.y.is_recursive();
        match pipeline {
            Pipeline::Blocked { .. } if recursive => Upload::U8 { channels, linear },
            _ => Upload::PlanarF32,
        }
    }

    /// The pixel formats of the y pass and the x pass.
    pub(super) fn formats(self) -> [PixelFormat; 2] {
        match self {
            Upload::PlanarF32 => [PixelFormat::F32; 2],
            Upload::U8 { channels, linear } => [
                PixelFormat {
                    channels,
                    in_u8: true,
                    out_u8: false,
                    linear,
                },
                PixelFormat {
                    channels,
                    in_u8: false,
                    out_u8: true,
                    linear,
                },
            ],
        }
    }

    /// (largest buffer, all buffers) in bytes on the device for a `width`×`height` image.
    pub fn device_bytes(self, width: usize, height: usize, channels: usize) -> (u64, u64) {
        let samples = (width * height * channels) as u64;
        match self {
            Upload::PlanarF32 => (4 * samples, 8 * samples),
            // The bytes (1), the f32 intermediate (4), summaries of at most a quarter of it (1).
            Upload::U8 { .. } => (4 * samples, 6 * samples),
        }
    }
}

/// Samples per pixel of the 8-bit colour types the blocked kernels read and write as bytes.
pub fn u8_channels(color: ColorType) -> Option<usize> {
    match color {
        ColorType::L8 => Some(1),
        ColorType::La8 => Some(2),
        ColorType::Rgb8 => Some(3),
        ColorType::Rgba8 => Some(4),
        _ => None,
    }
}

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
    let mut bytes = ctx.buffer::<u8>(samples.len(), false)?;
    let mid = ctx.buffer::<f32>(samples.len(), false)?;
    let mut commands = vec![Enqueued {
        timed: ctx.write(&mut bytes, samples, "upload (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    }];
    commands.extend(enqueue_u8(
        ctx,
        &bytes,
        &mid,
        (w, h, channels),
        blur,
        linear,
        (chunk, start),
    )?);
    commands.push(Enqueued {
        timed: ctx.read(&bytes, samples, "download (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    });
    commands
        .into_iter()
        .map(|c| c.into_pass(ctx))
        .collect::<Result<Vec<_>, ClError>>()
}
