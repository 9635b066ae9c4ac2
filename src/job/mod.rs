//! The main command: one file in, one blurred file out, every pass timed into a report.

use crate::backend::{self, Choice, Device, Target, Work};
use crate::codec::read::Input;
use crate::codec::{self, ImageIoError};
use crate::filter::Blur2d;
use crate::gpu::opencl::ClError;
use crate::gpu::plan::Upload;
use crate::mask::Masked;
use crate::report::Log;
use crate::report::{diagnostic, Backend, ImageSummary, Pass, Report, Stage};
use crate::work::blur::failure_note;
use crate::work::load::Source;
use crate::work::save::{save, Output};
use crate::work::{self, Keep, Loaded, Working};
use image::ImageFormat;
use std::path::Path;
use std::time::Instant;

mod inks;
mod pages;
pub mod plan;
mod request;
mod strips;

pub use inks::needs_colour;
pub use pages::blur_stack;
use plan::Header;
pub use plan::ImagePlan;
pub use request::{BlurJob, JobError};

/// Blurs a CMYK JPEG or TIFF file into a JPEG or TIFF keeping its inks (`inks`), its output
/// replacing what `replace` lets it; None where the input is not CMYK (or the job needs colour).
pub fn blur_inks(job: &BlurJob, replace: codec::Replace) -> Result<Option<Report>, JobError> {
    let started = Instant::now();
    let format = job
        .output_format
        .ok_or_else(|| JobError::setup(anyhow::anyhow!("no output format")))?;
    let mut passes = Vec::new();
    // An input that does not open is the usual decode's to report.
    let Ok(input) = codec::read::open(&job.input, job.max_memory_mib) else {
        return Ok(None);
    };
    let destination = Destination { format, replace };
    let report = inks::run(job, &input, input.sniffed, destination, &mut passes)?;
    Ok(report.map(|r| timed(job, r, started)))
}

/// How one kind of job ended (a whole image, the strip engine, a TIFF's pages, CMYK inks), in
/// its own words; `report` makes it the job's report.
pub(crate) struct Outcome {
    /// The OpenCL device that blurred, by name; None: the host's cores.
    pub device: Option<String>,
    pub input: ImageSummary,
    pub output: ImageSummary,
    /// The filter that ran: `recursive`, `fir`, or one per axis.
    pub method: String,
    pub pipeline: String,
    /// Whether it blurred in linear light.
    pub linear: bool,
    /// Pages blurred, where the input is a TIFF of several.
    pub pages: Option<usize>,
    pub passes: Vec<Pass>,
    /// Why `--device auto` ran this path, where it chose.
    pub why: Option<String>,
    pub notes: Vec<String>,
}

/// The report of `job` from how it ended: the one place a job's `Report` is built. Its total
/// is set by the entry point that started the job's clock (`timed`).
pub(crate) fn report(job: &BlurJob, done: Outcome) -> Report {
    let (device, backend) = match done.device {
        Some(name) => (name, Backend::Opencl),
        None => (backend::rust_device_name(), Backend::Rust),
    };
    Report {
        device,
        backend,
        input: done.input,
        output: done.output,
        sigma_x: job.filter.x.sigma(),
        sigma_y: job.filter.y.sigma(),
        sigma_z: done.pages.and(job.sigma_z),
        pages: done.pages,
        method: done.method,
        pipeline: done.pipeline,
        linear: done.linear,
        passes: done.passes,
        total_ms: 0.0,
        why: done.why,
        notes: done.notes,
    }
}

/// `report` of a job that succeeded, its total time since `started` set; the job's progress
/// callback is told it is done.
fn timed(job: &BlurJob, mut report: Report, started: Instant) -> Report {
    report.total_ms = started.elapsed().as_secs_f64() * 1e3;
    if let Some(on) = &job.on_progress {
        on.done();
    }
    report
}

/// The device being opened on its own thread while the input decodes.
type Opening = std::thread::JoinHandle<Result<Device, ClError>>;

/// Starts creating `target`'s context (None: the Rust path) on its own thread, so that the
/// driver's set-up overlaps the decode.
fn start_opening(target: Option<Target>) -> Option<Opening> {
    target.map(|target| std::thread::spawn(move || Device::open(target)))
}

/// Waits for the device `opening` opens, timing the wait as a set-up pass; a context that
/// cannot be created is a set-up error.
fn join_device(
    opening: Option<Opening>,
    passes: &mut Vec<Pass>,
) -> Result<Option<Device>, JobError> {
    let Some(opening) = opening else {
        return Ok(None);
    };
    let t = Instant::now();
    let opened = opening
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let device = opened.map_err(JobError::setup)?;
    passes.push(Pass::host(Stage::Setup, "open device", t));
    Ok(Some(device))
}

/// Builds the kernels `loaded` needs on `device`, timed as a set-up pass; kernels that do not
/// build are an error, for the Rust path to take over.
fn prepare_device(
    device: &Device,
    blur: &Blur2d,
    loaded: &Loaded,
    log: &mut Log,
) -> Result<(), anyhow::Error> {
    let t = Instant::now();
    // An image the device does not take needs no kernels; the planar ones do no harm.
    let upload = loaded
        .upload(device.pipeline, blur)
        .unwrap_or(Upload::PlanarF32);
    let mut prepared = device.prepare(blur, loaded.size(), upload);
    // YCbCr planes: the chroma planes' own sizes and sigmas too, where the device blurs them.
    if let (Working::Ycc(planes), Ok(())) = (&loaded.working, &prepared) {
        let chroma = blur.subsampled(planes.chroma.factors());
        let (w, h) = planes.planes[1].dimensions();
        if chroma.x.is_recursive() && chroma.y.is_recursive() {
            prepared = device.prepare(&chroma, (w as usize, h as usize), upload);
        }
    }
    let builds = device.ctx.builds();
    if builds.rejected > 0 {
        log.notes.push(format!(
            "program cache: {} kept program(s) were damaged, stale or refused by the driver, and were compiled again",
            builds.rejected
        ));
    }
    prepared?;
    let name = match builds.compiled {
        0 if builds.cached > 0 => "kernels (from cache)",
        _ => "kernels (compiled)",
    };
    log.passes.push(Pass::host(Stage::Setup, name, t));
    Ok(())
}

/// `device` where its kernels for `loaded` build; else None, with a note, for the Rust path.
fn usable_device(
    device: Option<Device>,
    blur: &Blur2d,
    loaded: &Loaded,
    log: &mut Log,
) -> Option<Device> {
    let device = device?;
    match prepare_device(&device, blur, loaded, log) {
        Ok(()) => Some(device),
        Err(e) => {
            log.notes.push(failure_note(&format!("{e:#}")));
            None
        }
    }
}

fn summary(
    name: &Path,
    format: ImageFormat,
    loaded_size: (u32, u32),
    color: String,
) -> ImageSummary {
    ImageSummary {
        path: name.display().to_string(),
        format: codec::format_name(format),
        width: loaded_size.0,
        height: loaded_size.1,
        color,
    }
}

/// The output format, checked before any work: for stdout `job.output_format`, else the
/// input's own (from its head) where gblur writes it; for a file also its folder, and that it
/// is not the input.
fn output_format(job: &BlurJob, input: &Input) -> Result<ImageFormat, JobError> {
    let format = stdout_or_file_format(job, input)?;
    let name = stdio_name(&job.output, "stdout").display();
    if let Some(why) = job.encode.quality_refused(format) {
        return Err(setup_text(why));
    }
    for (flag, applies_to, format_name) in job.encode.given() {
        if !applies_to.contains(&format) {
            return Err(setup_text(format!(
                "{flag} applies to {format_name} output, and {name} is {}",
                codec::format_name(format)
            )));
        }
    }
    Ok(format)
}

/// `output_format` before the encoder options' checks.
fn stdout_or_file_format(job: &BlurJob, input: &Input) -> Result<ImageFormat, JobError> {
    if job.no_clobber && !codec::is_stdio(&job.output) && job.output.symlink_metadata().is_ok() {
        return Err(setup_text(format!(
            "{}: the output exists, and --no-clobber keeps it",
            job.output.display()
        )));
    }
    if !codec::is_stdio(&job.output) {
        return codec::check_output(&job.input, &job.output, job.output_format)
            .map_err(JobError::setup);
    }
    match job.output_format {
        Some(f) if codec::can_write(f) => Ok(f),
        Some(f) => Err(JobError::Setup(anyhow::anyhow!(
            "stdout: gblur cannot write {f:?}"
        ))),
        None => {
            match input.own_format() {
                Some(f) if codec::can_write(f) => Ok(f),
                // A HEIC file is written back as HEIC to a .heic file; stdout's HEIF is AV1.
                None if input.sniffed == Some(codec::heif::HEIF) => Err(setup_text(
                    "stdout: a HEIC input is written as HEIC to a .heic file only: pass --format avif (HEIF in AV1), jpg, png, ... or a prefix such as avif:-".into(),
                )),
                known => Err(JobError::Setup(anyhow::anyhow!(
                    "stdout: gblur does not write {}: pass --format png|jpg|... or a prefix such as png:-",
                    known.map_or("the input's format".into(), |f| format!("{}, the input's format", codec::format_name(f)))
                ))),
            }
        }
    }
}

/// Opens the job's input once, for every reader of the job: a file stays open; stdin, a named
/// pipe or a device is read into memory within the budget, timed as a pass.
fn open_input(job: &BlurJob, passes: &mut Vec<Pass>) -> Result<Input, JobError> {
    let t = Instant::now();
    let input = codec::read::open(&job.input, job.max_memory_mib).map_err(JobError::failed)?;
    if !input.is_file() {
        let name = match codec::is_stdio(&job.input) {
            true => "read stdin",
            false => "read input",
        };
        passes.push(Pass::host(Stage::Decode, name, t));
    }
    Ok(input)
}

/// A decode over the memory budget, with why the strip engine, which streams such images,
/// did not take it (`declined`) and what would let it: a job that can stream runs at any size.
fn not_streamed(e: JobError, declined: Option<&str>) -> JobError {
    let over = |e: &anyhow::Error| {
        matches!(
            e.downcast_ref::<ImageIoError>(),
            Some(ImageIoError::OverLimit { .. } | ImageIoError::ReadOverLimit { .. })
        )
    };
    match (e, declined) {
        (JobError::Failed(e), Some(why)) if over(&e) => JobError::Failed(anyhow::anyhow!(
            "{e:#}; the strip engine, which streams images over the budget, does not take this \
             job: {why}"
        )),
        (e, _) => e,
    }
}

fn setup_text(e: String) -> JobError {
    JobError::Setup(anyhow::anyhow!(e))
}

/// What the report and errors call `path`: `name` for `-`.
fn stdio_name<'a>(path: &'a Path, name: &'static str) -> &'a Path {
    if codec::is_stdio(path) {
        Path::new(name)
    } else {
        path
    }
}

/// The device, checked before any work (a wrong `--device` is a set-up error). `auto` weighs
/// the paths for the image's work, which `work` reads from its header.
fn choose(job: &BlurJob, work: impl FnOnce() -> Option<Work>) -> Result<Choice, JobError> {
    let choice = job.device.single().ok_or_else(|| {
        JobError::Setup(anyhow::anyhow!(
            "--device {}: one image runs on one device; `all` and device lists are for gblur batch",
            job.device
        ))
    })?;
    backend::choose_device(choice, job.pipeline, work).map_err(JobError::Setup)
}

/// The work of `input`, in the format its head says (None: by the file's extension, as a TGA,
/// which has no signature, is known), as its header describes it; None where the header
/// cannot be read (the decode then says why, or reads a format the probe does not know).
fn probe(input: &Input) -> Option<Work> {
    let format = input.sniffed;
    // HEIF and JPEG XL have gblur's own decoders: the image crate reads neither header.
    if format.is_some_and(|f| f == codec::heif::HEIF || f == codec::jxl::JXL) {
        return None;
    }
    // A JPEG's frame header, found without reading the file: the `image` crate's JPEG
    // decoder reads the whole file, and anything after the image with it.
    if format == Some(ImageFormat::Jpeg) {
        let frame = codec::jpeg::Frame::read(&mut input.reader())?;
        // Colour JPEGs (YCbCr, CMYK) decode to RGB.
        let channels = frame.components.min(3) as u32;
        return Some(work(
            (frame.width, frame.height),
            channels,
            frame.precision == 8,
        ));
    }
    probe_reader(&mut *input.reader(), &input.name, format)
}

/// The work of the image `reader` holds, in `format` (None: by `name`'s extension, else
/// guessed), from its header as the `image` crate reads it.
fn probe_reader(
    reader: &mut dyn codec::source::Seekable,
    name: &Path,
    format: Option<ImageFormat>,
) -> Option<Work> {
    use image::ImageDecoder;
    let decoder = match format.or_else(|| ImageFormat::from_path(name).ok()) {
        Some(format) => image::ImageReader::with_format(reader, format).into_decoder(),
        None => image::ImageReader::new(reader)
            .with_guessed_format()
            .ok()?
            .into_decoder(),
    };
    let decoder = decoder.ok()?;
    let ((w, h), color) = (decoder.dimensions(), decoder.color_type());
    let eight_bit = color.bytes_per_pixel() == color.channel_count();
    Some(work((w, h), color.channel_count() as u32, eight_bit))
}

/// The work of an image of `size` with `channels` of 8 bits (`eight_bit`) or more.
fn work((w, h): (u32, u32), channels: u32, eight_bit: bool) -> Work {
    Work {
        pixels: w as u64 * h as u64,
        channels,
        bytes_per_sample: if eight_bit { 1 } else { 4 },
        threads: rayon::current_num_threads(),
    }
}

/// `--explain`: why this path, on stderr before the work starts.
fn explain(job: &BlurJob, chosen: &Choice) {
    match &chosen.why {
        Some(why) => diagnostic(&format!("explain: --device auto: {why}")),
        None => diagnostic(&format!(
            "explain: --device {} names the path: no prediction",
            job.device
        )),
    }
    for line in &chosen.explain {
        diagnostic(&format!("explain:   {line}"));
    }
}

/// Where a job's result goes: the output's format, and what an existing file there may be
/// replaced by.
#[derive(Clone, Copy)]
pub(crate) struct Destination<'a> {
    pub format: ImageFormat,
    pub replace: codec::Replace<'a>,
}

/// The stages of a whole-image job, as its progress bar names them.
const STAGES: [&str; 3] = ["decode", "blur", "encode and write"];

/// Runs the main command's `job`. An output that another writer put in place while it ran,
/// which `--no-clobber` keeps, is refused as one there at the start is (exit 2).
pub fn run(job: &BlurJob) -> Result<Report, JobError> {
    let started = Instant::now();
    run_job(job)
        .map(|r| timed(job, r, started))
        .map_err(|e| match e {
            JobError::Failed(e) => match e.downcast_ref::<ImageIoError>() {
                Some(ImageIoError::Appeared { path }) => setup_text(format!(
                    "{}: the output appeared while gblur ran, and --no-clobber keeps it; the \
                 blurred image was not written",
                    path.display()
                )),
                _ => JobError::Failed(e),
            },
            e => e,
        })
}

fn run_job(job: &BlurJob) -> Result<Report, JobError> {
    crate::memory::set_subject(stdio_name(&job.input, "stdin"));
    let mut passes = Vec::new();
    let opened = open_input(job, &mut passes)?;
    let mut header = Header::read(&opened);
    let out_format = output_format(job, &opened)?;
    let destination = Destination {
        format: out_format,
        replace: job.replace(),
    };
    let (input, held) = match pages::select(job, opened, &mut header, out_format, &mut passes)? {
        pages::Selected::One(input) => {
            let held = match input.is_file() {
                true => strips::Held::File,
                false => strips::Held::Read,
            };
            (input, held)
        }
        pages::Selected::Page { input, page, count } => (input, strips::Held::Page { page, count }),
        pages::Selected::Stack(stack) => {
            return pages::run(job, stack, destination, passes);
        }
    };
    let input = &input;
    if let Some(report) = inks::run(job, input, header.format, destination, &mut passes)? {
        return Ok(report);
    }
    let chosen = choose(job, || probe(input))?;
    let blur = &job.filter;
    if job.explain {
        explain(job, &chosen);
    }
    let gpu = chosen.target.as_ref().map(|t| t.pipeline);
    let mut declined = None;
    let ends = strips::Ends {
        source: input,
        input: header.format,
        output: out_format,
        held,
    };
    let streamed = strips::strip_input(job, gpu, blur, ends, &mut declined)?;
    crate::memory::use_huge_pages(streamed.is_none());
    if let Some(streamed) = streamed {
        let Choice { target, why, .. } = chosen;
        return strips::run_strips(streamed, job, blur, target, why);
    }
    let Choice { target, why, .. } = chosen;
    let declined = declined.as_deref();
    let mut report = run_whole(job, input, blur, (target, declined), out_format, passes)?;
    report.why = why;
    Ok(report)
}

/// The whole-image path: `input` decoded (`declined`: why the strip engine did not take it,
/// for an error over the budget), blurred on `target`'s device (None: the Rust path) or the
/// Rust path, and saved as `out_format`; the report's total and reason are the caller's.
fn run_whole(
    job: &BlurJob,
    input: &Input,
    blur: &Blur2d,
    (target, declined): (Option<Target>, Option<&str>),
    out_format: ImageFormat,
    mut passes: Vec<Pass>,
) -> Result<Report, JobError> {
    let bar = crate::progress::StageBar::new(&STAGES, job.progress, job.on_progress.clone());
    bar.stage(STAGES[0]);
    let mut notes = Vec::new();
    let plan = ImagePlan::new(job);
    let keep = plan.keep(target.as_ref().map(|t| t.pipeline), out_format);
    let opening = start_opening(target);
    let source = Source::Input(input);
    let log = &mut Log {
        passes: &mut passes,
        notes: &mut notes,
    };
    let (mut loaded, masked) =
        load_selected(&plan, source, keep, log).map_err(|e| not_streamed(e, declined))?;
    let device = join_device(opening, log.passes)?;
    let device = usable_device(device, blur, &loaded, log);

    bar.stage(STAGES[1]);
    let device = device.as_ref();
    let done = blur_selected(&plan, source, out_format, device, &mut loaded, masked, log)?;
    let on_device = device.filter(|_| done.1);
    bar.stage(STAGES[2]);
    let ran = Ran {
        method: blur.method_name(),
        pipeline: done.0,
    };
    finish(job, loaded, on_device, ran, out_format, passes, notes)
}

/// Blurs `loaded` (`masked`: its selection) on `device`, or on the Rust path, which a
/// fallback reloads `source` for; returns the pipeline that ran and whether the device ran it.
fn blur_selected(
    plan: &ImagePlan,
    source: Source,
    out_format: ImageFormat,
    device: Option<&Device>,
    loaded: &mut Loaded,
    masked: Option<Masked>,
    log: &mut Log,
) -> Result<(String, bool), JobError> {
    let (job, blur) = (plan.job(), plan.blur());
    if job.linear && !loaded.layout.linear {
        log.notes
            .push("--linear ignored: float images are linear already".into());
    } else if job.linear {
        log.notes
            .extend(loaded.meta.icc.as_deref().and_then(codec::icc::linear_note));
    }
    // A fallback loads the image as `--device rust` would: as planes where that path takes them.
    let reload = || plan.reload(source, masked.as_ref(), out_format);
    let sharpen = job.sharpen.as_ref();
    let mut done = work::blur::blur(device, loaded, blur, sharpen, log.passes, reload, None)
        .map_err(JobError::failed)?;
    log.notes.extend(done.note);
    if let Some(m) = masked {
        done.pipeline = format!("{}, {}", done.pipeline, m.describe());
        m.finish(loaded, log.passes);
    }
    Ok((done.pipeline, done.on_device))
}

/// Loads the input as `keep`'s path blurs it, with its selection when the job masks: the
/// decoded image is kept for the selection's blend, then put in the path's form
/// (`ImagePlan::fit`).
fn load_selected(
    plan: &ImagePlan,
    source: Source,
    keep: Keep,
    log: &mut Log,
) -> Result<(Loaded, Option<Masked>), JobError> {
    let job = plan.job();
    // `--mask` decodes on its own thread while the image does: neither needs the other until
    // the selection is built.
    let (loaded, mask_file) = std::thread::scope(|s| {
        let mask = s.spawn(|| {
            let t = Instant::now();
            job.mask
                .open(job.max_memory_mib)
                .map(|file| (file, t.elapsed()))
        });
        let loaded = plan.decode(source, keep, log.passes);
        (loaded, mask.join())
    });
    let mask_file = match mask_file.unwrap_or_else(|panic| std::panic::resume_unwind(panic)) {
        Ok((Some(file), took)) => {
            let ms = took.as_secs_f64() * 1e3;
            log.passes
                .push(Pass::host_ms(Stage::Decode, "decode mask (overlapped)", ms));
            Some(file)
        }
        Ok((None, _)) => None,
        // A mask that cannot be read is a set-up error (exit 2), whatever the image's decode did.
        Err(e) => return Err(setup_text(e)),
    };
    let mut loaded = loaded.map_err(JobError::failed)?;
    log.notes.append(&mut loaded.notes);
    let name = stdio_name(&job.input, "stdin");
    let mut masked = plan
        .select(&mut loaded, mask_file.as_ref(), name, log)
        .map_err(setup_text)?;
    // The selection may share the mask's values: let it own them.
    drop(mask_file);
    plan.fit(&mut loaded, masked.as_mut(), keep, log.passes);
    Ok((loaded, masked))
}

/// What blurred an image, as the report names it: the filter (`recursive`, `fir`, or one
/// per axis) and the pipeline.
struct Ran {
    method: String,
    pipeline: String,
}

/// Saves the blurred image and builds the report (its total time is the caller's to set):
/// `on_device` is the device that blurred it, None for the Rust path; `ran` what blurred it.
fn finish(
    job: &BlurJob,
    loaded: Loaded,
    on_device: Option<&Device>,
    Ran { method, pipeline }: Ran,
    out_format: ImageFormat,
    mut passes: Vec<Pass>,
    mut notes: Vec<String>,
) -> Result<Report, JobError> {
    let size = (loaded.width, loaded.height);
    let input = summary(
        stdio_name(&job.input, "stdin"),
        loaded.format,
        size,
        codec::color_name(loaded.color, loaded.gray_float),
    );
    let linear = loaded.layout.linear;
    let output = Output {
        path: &job.output,
        format: out_format,
        encode: job.encode,
        metadata: job.metadata,
        replace: job.replace(),
        max_memory_mib: Some(job.max_memory_mib),
    };
    let out_color = save(loaded, output, &mut passes, &mut notes).map_err(JobError::failed)?;

    let output = summary(
        stdio_name(&job.output, "stdout"),
        out_format,
        size,
        out_color,
    );
    Ok(report(
        job,
        Outcome {
            device: on_device.map(Device::name),
            input,
            output,
            method,
            pipeline,
            linear,
            pages: None,
            passes,
            why: None,
            notes,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::{probe, Header};
    use crate::codec::{self, read::Input};
    use std::path::Path;

    /// A TGA has no signature: its head says nothing, and the cost model learns its size from
    /// the file's extension, as the decode reads it.
    #[test]
    fn a_tga_is_probed_by_its_extension() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small.tga");
        image::RgbImage::new(7, 5).save(&path).unwrap();
        let input = codec::read::open(&path, 64).unwrap();
        let header = Header::read(&input);
        assert_eq!(header.format, None);
        let work = probe(&input).expect("probed");
        assert_eq!(
            (work.pixels, work.channels, work.bytes_per_sample),
            (35, 3, 1)
        );
    }

    /// Formats the image crate does not read are not probed by it.
    #[test]
    fn heif_and_jpeg_xl_are_not_probed() {
        let heic = [&[0, 0, 0, 24][..], b"ftypheic", &[0; 12]].concat();
        let jxl = vec![0xFF, 0x0A, 0, 0];
        for (bytes, format) in [(heic, codec::heif::HEIF), (jxl, codec::jxl::JXL)] {
            let input = Input::from_bytes(Path::new("x"), bytes);
            assert_eq!(input.sniffed, Some(format));
            assert!(probe(&input).is_none());
        }
    }
}
