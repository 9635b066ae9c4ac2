//! The main command's jobs the strip engine streams: whether it takes the input (`--engine`,
//! the memory budget), and the run with its report.

use super::{report, setup_text, stdio_name, summary, BlurJob, JobError, Outcome};
use crate::backend::{Device, Target};
use crate::codec::read::Input;
use crate::filter::Blur2d;
use crate::gpu::plan::Pipeline;
use crate::report::{Pass, Report, Stage};
use crate::stream::{self, Engine, Opened, Rows, StripJob};
use crate::work::edges::EdgeMode;
use image::ImageFormat;
use std::time::Instant;

/// An input the strip engine streams: its rows, opened, and the job as the engine sees it.
pub(super) struct Streamed<'a> {
    rows: Rows,
    job: StripJob<'a>,
}

/// The formats a job reads and writes, and where its input is read from.
pub(super) struct Ends<'a> {
    /// The input, opened.
    pub source: &'a Input,
    /// The input's format, from its head (None: not one gblur reads).
    pub input: Option<ImageFormat>,
    pub output: ImageFormat,
    pub held: Held,
}

/// Where a job's input is read from: the strip engine streams a file, and nothing held in
/// memory already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// A file, decoded as it is read.
    File,
    /// Stdin, a pipe or a device, read into memory.
    Read,
    /// Page `page` of a TIFF file of `count` pages, which `--page` took out of the file in
    /// memory.
    Page { page: usize, count: usize },
}

/// The PNG to stream where `--engine` takes the strip engine for this job; None for the
/// whole-image path. `auto` streams a job the engine runs whose decoded image (with a JPEG's
/// bytes, which the whole-image path holds too) is over `--max-memory` (which the whole-image
/// path refuses); `strips` makes a job it does not run a set-up error that says why.
///
/// Where `auto` leaves a job to the whole-image path because the engine does not run it,
/// `declined` says why, for an error should the image then be over the budget.
pub(super) fn strip_input<'a>(
    job: &'a BlurJob,
    gpu: Option<Pipeline>,
    blur: &Blur2d,
    ends: Ends<'a>,
    declined: &mut Option<String>,
) -> Result<Option<Streamed<'a>>, JobError> {
    let forced = job.engine == Engine::Strips;
    let mut refuse = |why: String| match forced {
        true => Err(setup_text(format!("--engine strips: {why}"))),
        false => {
            *declined = Some(why);
            Ok(None)
        }
    };
    if job.engine == Engine::Whole {
        return Ok(None);
    }
    if job.sharpen.is_some() {
        return refuse("it blurs; sharpening runs on the whole image".into());
    }
    match ends.held {
        Held::File => {}
        Held::Read => {
            return refuse(format!(
                "{}: the input is read into memory (stdin, a pipe or a device), not streamed",
                stdio_name(&job.input, "stdin").display()
            ))
        }
        Held::Page { page, count } => {
            return refuse(format!(
                "{} holds several pages ({count}), and --page {page} takes one out of it in memory, not streamed (the strip engine streams a TIFF of one page)",
                job.input.display()
            ))
        }
    }
    let strip_job = strip_job(job, gpu, &ends);
    if let Some(why) = stream::unsupported(&strip_job, blur) {
        return refuse(why);
    }
    let opened = match stream::open(&strip_job) {
        Ok(opened) => opened,
        Err(e) if forced => return Err(JobError::failed(e)),
        // The whole-image path decodes it again and says what is wrong.
        Err(_) => return Ok(None),
    };
    match opened {
        Opened::Unsupported(why) => refuse(format!("{}: {why}", job.input.display())),
        Opened::Rows(rows) => {
            let over =
                stream::whole_image_bytes(&rows) > job.max_memory_mib.saturating_mul(1 << 20);
            Ok((forced || over).then_some(Streamed {
                rows: *rows,
                job: strip_job,
            }))
        }
    }
}

/// `job` as the strip engine sees it.
fn strip_job<'a>(job: &'a BlurJob, gpu: Option<Pipeline>, ends: &Ends<'a>) -> StripJob<'a> {
    StripJob {
        input: &job.input,
        source: ends.source,
        input_format: ends.input,
        output: &job.output,
        format: ends.output,
        replace: job.replace(),
        sigma_y: job.filter.y.sigma(),
        linear: job.linear,
        max_memory_mib: job.max_memory_mib,
        png_compression: job.encode.png_compression,
        jpeg: job.encode.jpeg,
        tiff: job.encode.tiff,
        gpu,
        masked: job.mask.active(),
        clamp: job.edges.x == EdgeMode::Clamp && job.edges.y == EdgeMode::Clamp,
        progress: job.progress,
        on_progress: job.on_progress.clone(),
        metadata: job.metadata,
        to_srgb: job.to_srgb,
    }
}

/// Blurs `rows` through the strip engine, on `target`'s device where one is chosen, and builds
/// the report.
pub(super) fn run_strips(
    Streamed {
        rows,
        job: strip_job,
    }: Streamed,
    job: &BlurJob,
    blur: &Blur2d,
    target: Option<Target>,
    why: Option<String>,
) -> Result<Report, JobError> {
    let strip_job = &strip_job;
    let size = rows.size();
    let name = stdio_name(&job.input, "stdin");
    let input = summary(name, rows.format(), size, format!("{:?}", rows.color()));
    let t = Instant::now();
    let device = target
        .map(Device::open)
        .transpose()
        .map_err(JobError::setup)?;
    let opened = device
        .as_ref()
        .map(|_| Pass::host(Stage::Setup, "open device", t));
    let done = stream::run(strip_job, blur, rows, device.as_ref()).map_err(|e| match e {
        // The file's own error, as the whole-image path gives it (`run` reads an output
        // that appeared under --no-clobber from it).
        stream::StripError::Io(e) => JobError::failed(e),
        e => JobError::failed(e),
    })?;
    let outcome = Outcome {
        device: device.as_ref().filter(|_| done.on_device).map(Device::name),
        input,
        output: summary(
            &job.output,
            strip_job.format,
            size,
            format!("{:?}", done.color),
        ),
        method: blur.method_name(),
        pipeline: done.pipeline,
        linear: job.linear,
        pages: None,
        passes: opened.into_iter().chain(done.passes).collect(),
        why,
        notes: done.notes,
    };
    Ok(report(job, outcome))
}
