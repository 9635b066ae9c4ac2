//! The 8-bit path: 8-bit gray, gray+alpha, RGB and RGBA go up as bytes and come back as bytes
//! into the same memory, converted inside the blocked kernels (`plan::Upload` says which images
//! take it); anything else goes up as planar f32 (`pipeline::blur`).

use crate::filter::Blur2d;
use crate::gpu::opencl::queue::{Arg, U8Scratch};
use crate::gpu::opencl::{ClContext, ClError};
use crate::gpu::pipeline::{blocked_starts, upload_filter, BlockedAxis, Run};
use crate::gpu::plan::{Blocking, Pipeline, Upload};
use crate::pixels;
use crate::report::Pass;
use image::DynamicImage;
use opencl3::memory::Buffer;

/// Enqueues the blur of the 8-bit image in `bytes` (`w`×`h` pixels of `channels` samples), in
/// place: the y axis reads the bytes and writes the f32 intermediate `mid` transposed, the x
/// axis reads `mid` and writes the bytes back upright. Both axes must be recursive.
// `gblur bench` alone uses it (crates/bench), through the internals.
#[cfg(feature = "unstable-internals")]
pub fn enqueue_u8(
    ctx: &ClContext,
    bytes: &Buffer<u8>,
    mid: &Buffer<f32>,
    dims: (usize, usize, usize),
    blur: &Blur2d,
    linear: bool,
    blocked: Blocking,
) -> Result<Vec<crate::gpu::opencl::Enqueued>, ClError> {
    let mut run = Run::new(ctx);
    enqueue_u8_on(&mut run, (bytes, mid), dims, blur, linear, blocked)?;
    run.finish()
}

/// `enqueue_u8` onto `run`, which keeps its tables until the queue has finished.
fn enqueue_u8_on(
    run: &mut Run,
    (bytes, mid): (&Buffer<u8>, &Buffer<f32>),
    (w, h, channels): (usize, usize, usize),
    blur: &Blur2d,
    linear: bool,
    blocked: Blocking,
) -> Result<(), ClError> {
    let ctx = run.ctx();
    let (cx, cy) = (upload_filter(ctx, &blur.x)?, upload_filter(ctx, &blur.y)?);
    let lut = ctx.constant(&pixels::u8_lut(linear))?;
    let [fy, fx] = Upload::U8 { channels, linear }.formats();
    let carries = [
        blocked_starts(ctx, &blur.y, blocked, h, fy)?,
        blocked_starts(ctx, &blur.x, blocked, w, fx)?,
    ];
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
    run.blocked(&x, carry_x)
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
    let samples: &mut [u8] = match image {
        DynamicImage::ImageLuma8(b) => b,
        DynamicImage::ImageLumaA8(b) => b,
        DynamicImage::ImageRgb8(b) => b,
        DynamicImage::ImageRgba8(b) => b,
        _ => unreachable!("Upload::for_image sends only 8-bit images here"),
    };
    let mut images = InPlaceU8::new(ctx, samples.len(), pipeline)?;
    images.add(samples, (w, h, channels), blur, linear, "")?;
    images.finish()
}

/// 8-bit images blurred in place on the device with one wait for them all (a JPEG's three
/// planes): each goes up, is blurred and comes back in queue order through the context's kept
/// buffers, which the in-order queue hands to the next image only after the last one's
/// download. A wait per image left the device idle while the host read the counters and
/// enqueued the next one. Dropped unfinished (an enqueue failed), it still waits for the queue
/// before the images' memory may go.
pub struct InPlaceU8<'a> {
    run: Run<'a>,
    scratch: Option<U8Scratch>,
    blocked: Blocking,
    /// Each image's name for its passes, and the number of commands enqueued before it.
    names: Vec<(usize, String)>,
    /// The images' memory, written by downloads still in the queue.
    images: std::marker::PhantomData<&'a mut [u8]>,
}

impl<'a> InPlaceU8<'a> {
    /// Room for images of up to `largest` samples, on the blocked `pipeline`.
    pub fn new(ctx: &'a ClContext, largest: usize, pipeline: Pipeline) -> Result<Self, ClError> {
        let Pipeline::Blocked { chunk, start } = pipeline else {
            unreachable!("Upload::for_image sends 8-bit images only to the blocked pipeline")
        };
        Ok(Self {
            run: Run::new(ctx),
            scratch: Some(ctx.u8_scratch(largest)?),
            blocked: Blocking { chunk, start },
            names: Vec::new(),
            images: std::marker::PhantomData,
        })
    }

    /// Enqueues the blur of `samples` (`w`×`h` pixels of `channels`, at most `largest` in
    /// all) in place; `name` prefixes its passes' names. Both axes of `blur` must be recursive.
    pub fn add(
        &mut self,
        samples: &'a mut [u8],
        dims: (usize, usize, usize),
        blur: &Blur2d,
        linear: bool,
        name: &str,
    ) -> Result<(), ClError> {
        self.upload(samples, name)?;
        self.blur_and_download(samples, dims, blur, linear)
    }

    /// As `add`, reading the image from `source` and writing the blurred one into
    /// `destination` (of the same length), neither touched until `finish`.
    pub fn add_from(
        &mut self,
        source: &'a [u8],
        destination: &'a mut [u8],
        dims: (usize, usize, usize),
        blur: &Blur2d,
        linear: bool,
    ) -> Result<(), ClError> {
        assert_eq!(source.len(), destination.len(), "one image's samples");
        self.upload(source, "")?;
        self.blur_and_download(destination, dims, blur, linear)
    }

    /// Enqueues the upload of an image's `samples` into the kept buffers; `name` prefixes
    /// its passes' names.
    fn upload(&mut self, samples: &[u8], name: &str) -> Result<(), ClError> {
        let ctx = self.run.ctx();
        let scratch = self.scratch.as_mut().expect("kept until finish");
        assert!(
            samples.len() <= scratch.len(),
            "sized for the largest image"
        );
        self.names.push((self.run.len(), name.to_string()));
        let up = ctx.write(&mut scratch.bytes, samples, "upload (8-bit)")?;
        self.run.transfer(up, samples.len() as u64);
        Ok(())
    }

    /// Enqueues the blur of the image just uploaded and its download into `destination`.
    fn blur_and_download(
        &mut self,
        destination: &'a mut [u8],
        dims: (usize, usize, usize),
        blur: &Blur2d,
        linear: bool,
    ) -> Result<(), ClError> {
        let ctx = self.run.ctx();
        let scratch = self.scratch.as_ref().expect("kept until finish");
        let buffers = (&scratch.bytes, &scratch.mid);
        enqueue_u8_on(&mut self.run, buffers, dims, blur, linear, self.blocked)?;
        let down = ctx.read_later(&scratch.bytes, destination, "download (8-bit)")?;
        self.run.transfer(down, destination.len() as u64);
        Ok(())
    }

    /// Waits for the queue; returns every image's passes, named after their images.
    pub fn finish(self) -> Result<Vec<Pass>, ClError> {
        self.finish_spanned().map(|(passes, _)| passes)
    }

    /// `finish`, with the span of the device's clock the commands took, from the first one's
    /// start to the last one's end (ns).
    pub fn finish_spanned(mut self) -> Result<(Vec<Pass>, (u64, u64)), ClError> {
        let ctx = self.run.ctx();
        let commands = self.run.finish_now()?;
        if let Some(scratch) = self.scratch.take() {
            ctx.keep_u8_scratch(scratch);
        }
        let mut span = (u64::MAX, 0);
        let mut passes = Vec::with_capacity(commands.len());
        for (i, command) in commands.into_iter().enumerate() {
            let (start, end) = (command.timed.span_ns())
                .map_err(|e| ctx.api_error("reading profiling counters", e))?;
            span = (span.0.min(start), span.1.max(end));
            let mut pass = command.into_pass(ctx)?;
            // The image whose commands this one's index falls among: the last to start at
            // or before it.
            let image = self.names.iter().rev().find(|(first, _)| *first <= i);
            if let Some((_, prefix)) = image.filter(|(_, p)| !p.is_empty()) {
                pass.name = format!("{prefix} {}", pass.name);
            }
            passes.push(pass);
        }
        Ok((passes, span))
    }
}
