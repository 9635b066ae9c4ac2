//! The main command on a TIFF of several pages (a z-stack, a time series, a scanned
//! document). Every page is blurred as the image it is, and written into one TIFF of as many
//! pages, each with its own ICC profile, EXIF and XMP; an output format that holds one image
//! is a usage error that names `--page N`, which takes one page alone into any format.
//! `--sigma-z` blurs pages of one size and colour type as a volume instead: the filter runs
//! along z (across pages) as it runs along y and x, with the same edge modes, all three axes
//! in f32 and the result rounded once.
//!
//! A stack is held in memory: the file, the blurred pages (and for a volume its f32 copy),
//! all within `--max-memory`.

use super::{
    blur_selected, choose, explain, load_selected, prepare_device, probe_reader, setup_text,
    stdio_name, summary, BlurJob, Destination, Header, ImagePlan, JobError,
};
use crate::backend::{Choice, Device};
use crate::codec::metadata::{self, Metadata};
use crate::codec::read::Input;
use crate::codec::tiff::pages::Pages;
use crate::codec::{self, ImageIoError};
use crate::cpu::axis::{self, AxisFilter, Element};
use crate::filter::{Blur2d, EdgeMode, LineFilter};
use crate::report::Log;
use crate::report::{Pass, Report, Stage};
use crate::stream::Engine;
use crate::work::blur::failure_note;
use crate::work::edges::{EdgePlan, Edges};
use crate::work::load::{load_with, Decoding, Source};
use crate::work::save::{to_samples, Output};
use crate::work::{Keep, Loaded, Working};
use image::{ColorType, DynamicImage, ImageBuffer, ImageFormat, Luma, Pixel, Rgb};
use std::path::Path;
use std::time::Instant;

/// What the job reads, once the input's pages are known.
pub(super) enum Selected {
    /// One image: the input as it was, or the page `--page` took out of a stack read from
    /// stdin, a pipe or a device, as a TIFF of that page alone in memory.
    One(Input),
    /// The page `--page` took out of a TIFF file of `count` pages, read whole: a TIFF of that
    /// page alone, in memory.
    Page {
        input: Input,
        page: usize,
        count: usize,
    },
    /// A TIFF of several pages, in memory, for `run`.
    Stack(Stack),
}

pub(super) struct Stack {
    bytes: Vec<u8>,
    pages: Pages,
}

/// The flag that asks for pages, where one was given.
fn page_flag(job: &BlurJob) -> Option<&'static str> {
    match (job.page, job.sigma_z) {
        (Some(_), _) => Some("--page"),
        (None, Some(_)) => Some("--sigma-z"),
        (None, None) => None,
    }
}

/// Looks at the input's pages: a TIFF of several
/// pages is a stack, or the page `--page` names; anything else is one image. `--page` and
/// `--sigma-z` given for an input without pages to choose from are usage errors, as is a
/// stack written to a format of one image.
pub(super) fn select(
    job: &BlurJob,
    input: Input,
    header: &mut Header,
    out_format: ImageFormat,
    passes: &mut Vec<Pass>,
) -> Result<Selected, JobError> {
    let name = stdio_name(&job.input, "stdin");
    if !header.format.is_some_and(codec::holds_pages) {
        return match page_flag(job) {
            Some(flag) => Err(setup_text(format!(
                "{flag} applies to a TIFF of several pages, and {} is not a TIFF",
                name.display()
            ))),
            None => Ok(Selected::One(input)),
        };
    }
    let pages = header.pages.take();
    let count = pages.as_ref().map_or(1, Pages::count);
    if let Some(n) = job.page.filter(|&n| n >= count) {
        return Err(setup_text(format!(
            "--page {n}: {} holds {count} page{} (--page counts from 0)",
            name.display(),
            if count == 1 { "" } else { "s" }
        )));
    }
    let Some(pages) = pages.filter(|_| count > 1) else {
        if job.sigma_z.is_some() {
            return Err(setup_text(format!(
                "--sigma-z blurs the pages of a TIFF stack as a volume, and {} holds one page",
                name.display()
            )));
        }
        return Ok(Selected::One(input));
    };
    if job.page.is_none() {
        whole_stack_written(job, name, count, out_format)?;
    }
    let read = !input.is_file();
    let bytes = read_whole(job, input, passes)?;
    let page = |bytes, n| Input::from_bytes(name, pages.single(bytes, n));
    Ok(match job.page {
        Some(n) if read => Selected::One(page(bytes, n)),
        Some(n) => Selected::Page {
            input: page(bytes, n),
            page: n,
            count,
        },
        None => Selected::Stack(Stack { bytes, pages }),
    })
}

/// Whether a stack of `count` pages can be written whole: into a TIFF, on the whole-image
/// engine.
fn whole_stack_written(
    job: &BlurJob,
    name: &Path,
    count: usize,
    out_format: ImageFormat,
) -> Result<(), JobError> {
    if !codec::holds_pages(out_format) {
        return Err(setup_text(format!(
            "{} is a TIFF of {count} pages, and {} holds one image: take one with --page N (0 to {}), or write a TIFF, which keeps every page",
            name.display(),
            codec::format_name(out_format),
            count - 1
        )));
    }
    if job.engine == Engine::Strips {
        return Err(setup_text(format!(
            "--engine strips: {} holds several pages ({count}), which are blurred in memory, not streamed",
            name.display()
        )));
    }
    Ok(())
}

/// The input's content, whole, within the memory budget: a file read, timed as a pass;
/// bytes read already, as they are.
fn read_whole(job: &BlurJob, input: Input, passes: &mut Vec<Pass>) -> Result<Vec<u8>, JobError> {
    let t = Instant::now();
    let file = input.is_file();
    let bytes = input
        .into_bytes(job.max_memory_mib)
        .map_err(JobError::failed)?;
    if file {
        passes.push(Pass::host(Stage::Decode, "read input", t));
    }
    Ok(bytes)
}

/// One blurred page as written: its samples, its metadata, and what its input was.
struct Page {
    image: DynamicImage,
    meta: Metadata,
    input_color: ColorType,
    tiff_compression: Option<u16>,
    /// Gray float held as RGB(A) (`Loaded::gray_float`).
    gray_float: bool,
}

/// What the pages' blur gave, for the report.
struct Blurred {
    pages: Vec<Page>,
    pipeline: String,
    on_device: Option<String>,
}

/// A batch's TIFF stack: every page of `job.input` blurred into `job.output` (a TIFF) as
/// `gblur IN OUT.tif` blurs them, the output replacing what `replace` lets it (the batch's
/// rules); None where the input is not a TIFF of several pages.
pub fn blur_stack(job: &BlurJob, replace: codec::Replace) -> Result<Option<Report>, JobError> {
    let started = Instant::now();
    let mut passes = Vec::new();
    // An input that does not open is the usual decode's to report.
    let Ok(input) = codec::read::open(&job.input, job.max_memory_mib) else {
        return Ok(None);
    };
    let mut header = Header::read(&input);
    match select(job, input, &mut header, ImageFormat::Tiff, &mut passes)? {
        Selected::Stack(stack) => {
            let tiff = Destination {
                format: ImageFormat::Tiff,
                replace,
            };
            run(job, stack, tiff, passes).map(|r| Some(super::timed(job, r, started)))
        }
        Selected::One(_) | Selected::Page { .. } => Ok(None),
    }
}

/// Blurs every page of `stack` (each as an image, or together as a volume), writes them into
/// one TIFF (replacing what `replace` lets it) and reports.
pub(super) fn run(
    job: &BlurJob,
    mut stack: Stack,
    Destination {
        format: out_format,
        replace,
    }: Destination,
    mut passes: Vec<Pass>,
) -> Result<Report, JobError> {
    let first_page = || {
        let mut bytes = std::io::Cursor::new(&stack.bytes[..]);
        probe_reader(&mut bytes, Path::new("stack.tif"), Some(ImageFormat::Tiff))
    };
    let chosen = choose(job, first_page)?;
    let blur = &job.filter;
    if job.explain {
        explain(job, &chosen);
    }
    let Choice { target, why, .. } = chosen;
    // Each page is read alone (`Pages::with_page`): the overviews and masks between them are not.
    let mut notes: Vec<String> = stack.pages.not_pages().note().into_iter().collect();
    let mut page_passes = Vec::new();
    let blurred = match job.sigma_z {
        Some(sigma_z) => {
            if target.is_some() {
                notes.push("the volume blur runs on the host's cores".into());
            }
            let log = &mut Log {
                passes: &mut page_passes,
                notes: &mut notes,
            };
            volume(job, &mut stack, blur, sigma_z, log)?
        }
        None => {
            let t = Instant::now();
            let device = target
                .map(Device::open)
                .transpose()
                .map_err(JobError::setup)?;
            if device.is_some() {
                passes.push(Pass::host(Stage::Setup, "open device", t));
            }
            let log = &mut Log {
                passes: &mut page_passes,
                notes: &mut notes,
            };
            each_page(job, &mut stack, blur, out_format, device.as_ref(), log)?
        }
    };
    passes.extend(merged(page_passes));
    let n = blurred.pages.len();
    let first = &blurred.pages[0];
    let size = (first.image.width(), first.image.height());
    let name = stdio_name(&job.input, "stdin");
    let color = |c| codec::color_name(c, first.gray_float);
    let input = summary(name, ImageFormat::Tiff, size, color(first.input_color));
    let out_color = color(first.image.color());
    let log = &mut Log {
        passes: &mut passes,
        notes: &mut notes,
    };
    write(job, &blurred.pages, replace, log)?;
    let mut seen = std::collections::HashSet::new();
    notes.retain(|note| seen.insert(note.clone()));
    let outcome = super::Outcome {
        device: blurred.on_device,
        input,
        output: summary(
            stdio_name(&job.output, "stdout"),
            out_format,
            size,
            out_color,
        ),
        method: blur.method_name(),
        pipeline: blurred.pipeline,
        linear: job.linear,
        pages: Some(n),
        passes,
        why,
        notes,
    };
    Ok(super::report(job, outcome))
}

/// The passes of every page, one line per pass with the pages' times added up.
fn merged(page_passes: Vec<Pass>) -> Vec<Pass> {
    let mut out: Vec<Pass> = Vec::new();
    for p in page_passes {
        match out
            .iter_mut()
            .find(|q| q.name == p.name && q.stage == p.stage)
        {
            Some(q) => {
                q.ms += p.ms;
                q.bytes += p.bytes;
            }
            None => out.push(p),
        }
    }
    out
}

/// A page's error, saying which page.
fn on_page(e: JobError, page: usize, count: usize) -> JobError {
    let at = |e: anyhow::Error| anyhow::anyhow!("{e:#} (page {page} of {count}, from 0)");
    match e {
        JobError::Setup(e) => JobError::Setup(at(e)),
        JobError::Failed(e) => JobError::Failed(at(e)),
    }
}

/// The bytes the pages hold so far and the file with them, against the budget.
fn check_held(job: &BlurJob, held: u64, page: usize, count: usize) -> Result<(), JobError> {
    let limit = job.max_memory_mib.saturating_mul(1 << 20);
    if held <= limit {
        return Ok(());
    }
    Err(JobError::failed(anyhow::anyhow!(
        "{}: its {count} pages need more than --max-memory {} MiB held at once (passed at page {page}): raise it, or take one page with --page N",
        job.input.display(),
        job.max_memory_mib
    )))
}

/// Each page blurred as the main command blurs one image, on `device` where it builds its
/// kernels, else on the Rust path.
fn each_page(
    job: &BlurJob,
    stack: &mut Stack,
    blur: &Blur2d,
    out_format: ImageFormat,
    device: Option<&Device>,
    log: &mut Log,
) -> Result<Blurred, JobError> {
    let plan = ImagePlan::new(job);
    let keep = plan.keep(device.map(|d| d.pipeline), out_format);
    let name = stdio_name(&job.input, "stdin");
    let count = stack.pages.count();
    let mut held = stack.bytes.len() as u64;
    let mut pages = Vec::with_capacity(count);
    let mut ran = (String::new(), None);
    let output = Output {
        path: &job.output,
        format: out_format,
        encode: job.encode,
        metadata: job.metadata,
        replace: codec::Replace::Any,
        max_memory_mib: Some(job.max_memory_mib),
    };
    for i in 0..count {
        let Stack {
            bytes,
            pages: chain,
        } = stack;
        let page = chain.with_page(bytes, i, |view| {
            let source = Source::Memory { name, bytes: view };
            let (mut loaded, masked) = load_selected(&plan, source, keep, log)?;
            let device = device.filter(|d| match prepare_device(d, blur, &loaded, log) {
                Ok(()) => true,
                Err(e) => {
                    log.notes.push(failure_note(&format!("{e:#}")));
                    false
                }
            });
            let (pipeline, on_device) =
                blur_selected(&plan, source, out_format, device, &mut loaded, masked, log)?;
            ran = (pipeline, device.filter(|_| on_device).map(Device::name));
            Ok(finish_page(loaded, output, log))
        });
        let page = page.map_err(|e| on_page(e, i, count))?;
        held += page.image.as_bytes().len() as u64;
        check_held(job, held, i, count)?;
        pages.push(page);
    }
    Ok(Blurred {
        pages,
        pipeline: ran.0,
        on_device: ran.1,
    })
}

/// A blurred page as the samples its output holds, with its metadata.
fn finish_page(mut loaded: Loaded, output: Output, log: &mut Log) -> Page {
    let meta = std::mem::take(&mut loaded.meta).select(output.metadata);
    let (input_color, tiff_compression) = (loaded.color, loaded.tiff_compression);
    let gray_float = loaded.gray_float;
    Page {
        image: to_samples(loaded, output, log.passes, log.notes),
        meta,
        input_color,
        tiff_compression,
        gray_float,
    }
}

/// Encodes the pages into one TIFF, their metadata into each page, and writes it atomically,
/// replacing what `replace` lets it (stdout: once whole).
fn write(
    job: &BlurJob,
    pages: &[Page],
    replace: codec::Replace,
    log: &mut Log,
) -> Result<(), JobError> {
    let out_name = stdio_name(&job.output, "stdout");
    let t = Instant::now();
    let (tiff, tiff_note) = job.encode.tiff.resolve(pages[0].tiff_compression);
    log.notes.extend(tiff_note);
    let images: Vec<_> = pages
        .iter()
        .map(|p| codec::tiff::Page {
            image: &p.image,
            icc: p.meta.icc.as_deref(),
            gray_float: p.gray_float,
            inks: false,
        })
        .collect();
    let encode_error = |detail| ImageIoError::Encode {
        path: out_name.into(),
        format: "Tiff".into(),
        detail,
    };
    let bytes = codec::tiff::encode_pages(&images, tiff.compression())
        .expect("pages are in colour types TIFF holds (to_samples)")
        .map_err(encode_error)
        .map_err(JobError::failed)?;
    log.passes.push(Pass::host(Stage::Encode, "encode", t));
    let t = Instant::now();
    let metas: Vec<_> = pages
        .iter()
        .map(|p| (&p.meta, (p.image.width(), p.image.height())))
        .collect();
    let (bytes, lost) = metadata::embed_pages(bytes, &metas, out_name).map_err(JobError::failed)?;
    log.notes.extend(lost);
    log.passes.push(Pass::host(Stage::Encode, "metadata", t));
    let t = Instant::now();
    codec::write_output(&job.output, &bytes, replace).map_err(JobError::failed)?;
    log.passes.push(Pass::host(Stage::Encode, "write", t));
    Ok(())
}

/// The stack's pages blurred together as a volume (z, y, x, channel) by `blur` across each
/// page and `sigma_z` across pages, in f32, rounded once into each page's own sample type.
/// Each page goes into the volume as it is decoded, and the file is let go before the blur:
/// at most the volume in f32 and the blurred pages are held at once.
fn volume(
    job: &BlurJob,
    stack: &mut Stack,
    blur: &Blur2d,
    sigma_z: f64,
    log: &mut Log,
) -> Result<Blurred, JobError> {
    refuse_for_volume(job)?;
    let z = Blur2d::checked(job.filter.method, sigma_z, sigma_z)
        .map_err(|e| setup_text(format!("--sigma-z: {e}")))?
        .with_truncate(job.filter.truncate)
        .x;
    let count = stack.pages.count();
    let (volume, kept, (w, h, color, gray_float)) = read_volume(job, stack, blur, log)?;
    stack.bytes = Vec::new();
    let t = Instant::now();
    // Gray float is filtered as its one channel, and handed back as RGB with three equal ones.
    let channels = if gray_float {
        1
    } else {
        color.channel_count() as usize
    };
    let shape = [count, h as usize, w as usize, channels];
    // The volume, and an f32 copy for integer samples blurred along more than one axis.
    let axes: Vec<(usize, AxisFilter)> = [
        (0, &z, job.edges.y),
        (1, &blur.y, job.edges.y),
        (2, &blur.x, job.edges.x),
    ]
    .into_iter()
    .filter(|(_, f, _)| !f.is_identity())
    .map(|(a, f, edge)| (a, axis_filter(f, edge, color)))
    .collect();
    let f32_copy = match (&volume, axes.len()) {
        (Volume::F32(..), _) | (_, 0 | 1) => 0,
        (v, _) => 4 * v.len(),
    };
    // The pages cut from it are held beside it: as large, or three times for gray float
    // (written back as RGB with equal channels).
    let pages_bytes = volume.bytes() * if gray_float { 3 } else { 1 };
    check_held(
        job,
        (volume.bytes() + f32_copy + pages_bytes) as u64,
        count - 1,
        count,
    )?;
    let images = volume.blurred(&shape, &axes);
    log.passes
        .push(Pass::host(Stage::Blur, "volume (z, y, x)", t));
    let pages = images
        .into_iter()
        .zip(kept)
        .map(|(image, (meta, tiff_compression))| Page {
            image,
            meta: meta.select(job.metadata),
            input_color: color,
            tiff_compression,
            gray_float,
        })
        .collect();
    let describe = |f: &LineFilter| match f.is_identity() {
        true => "none".to_string(),
        false => f.describe(),
    };
    let (z, y, x) = (describe(&z), describe(&blur.y), describe(&blur.x));
    Ok(Blurred {
        pages,
        pipeline: format!("volume: z {z}, y {y}, x {x}"),
        on_device: None,
    })
}

/// A page's kept metadata and TIFF compression.
type KeptPage = (Metadata, Option<u16>);

/// A page's width, height, colour type and whether it is gray float.
type PageKind = (u32, u32, ColorType, bool);

/// The stack's pages decoded one by one into a volume, each checked against the first and the
/// memory held so far: the volume, each page's metadata, and the pages' (width, height, colour
/// type, gray float).
fn read_volume(
    job: &BlurJob,
    stack: &mut Stack,
    blur: &Blur2d,
    log: &mut Log,
) -> Result<(Volume, Vec<KeptPage>, PageKind), JobError> {
    let name = stdio_name(&job.input, "stdin");
    let count = stack.pages.count();
    // No edge extension: the volume's filters take the edges.
    let plan = EdgePlan::new(Edges::default(), blur);
    let mut volume: Option<Volume> = None;
    let mut kept = Vec::with_capacity(count);
    let mut first = None;
    for i in 0..count {
        let Stack { bytes, pages } = stack;
        let page = pages.with_page(bytes, i, |view| {
            let source = Source::Memory { name, bytes: view };
            let sanitize = job.mask.sanitize();
            let decoding = Decoding {
                linear: false,
                ..job.decoding()
            };
            load_with(source, decoding, Keep::Decoded, sanitize, &plan, log.passes)
        });
        let mut page = page.map_err(|e| on_page(JobError::failed(e), i, count))?;
        log.notes.append(&mut page.notes);
        let Working::Decoded(image) = &page.working else {
            unreachable!("Keep::Decoded without --linear keeps the decoded image")
        };
        let this = (
            image.width(),
            image.height(),
            image.color(),
            page.gray_float,
        );
        check_page(name, i, this, *first.get_or_insert(this))?;
        // The file, the volume so far, and this page.
        let page_bytes = image.as_bytes().len();
        check_held(job, (bytes.len() + (i + 2) * page_bytes) as u64, i, count)?;
        volume
            .get_or_insert_with(|| Volume::with_pages(image, count, page.gray_float))
            .push(image);
        kept.push((std::mem::take(&mut page.meta), page.tiff_compression));
    }
    let volume = volume.expect("a stack has pages");
    Ok((volume, kept, first.expect("a stack has pages")))
}

/// A page's size and colour type: `this` is page `i`'s (width, height, colour type, gray
/// float), `first` page 0's. The volume takes pages of one size and colour type, gray or RGB
/// without alpha.
fn check_page(name: &Path, i: usize, this: PageKind, first: PageKind) -> Result<(), JobError> {
    let (w0, h0, color0, gray0) = first;
    if this != first {
        return Err(JobError::failed(anyhow::anyhow!(
            "{}: --sigma-z needs pages of one size and colour type: page {i} is {}x{} {}, page 0 {w0}x{h0} {}",
            name.display(), this.0, this.1, codec::color_name(this.2, this.3), codec::color_name(color0, gray0)
        )));
    }
    if matches!(
        this.2,
        ColorType::L8 | ColorType::L16 | ColorType::Rgb8 | ColorType::Rgb16 | ColorType::Rgb32F
    ) {
        return Ok(());
    }
    let why = match this.2.has_alpha() {
        true => "has alpha",
        false => "is of a colour type",
    };
    Err(setup_text(format!(
        "--sigma-z: {} {why} ({:?}) which the volume blur does not take; blur its pages one by one without --sigma-z",
        name.display(), this.2
    )))
}

/// The options the volume blur does not take, refused before any page is read.
fn refuse_for_volume(job: &BlurJob) -> Result<(), JobError> {
    let refused = [
        (job.linear, "--linear"),
        (job.mask.active(), "--region and --mask"),
        (job.sharpen.is_some(), "sharpening"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag));
    match refused {
        Some(flag) => Err(setup_text(format!(
            "--sigma-z: {flag} is not taken with the volume blur; blur the pages one by one without --sigma-z"
        ))),
        None => Ok(()),
    }
}

/// Samples of `image`.
fn samples(image: &DynamicImage) -> usize {
    image.width() as usize * image.height() as usize * image.color().channel_count() as usize
}

/// `filter` along an axis whose edges are `edge`, a constant given as a fraction of the full
/// scale of `color`'s samples.
fn axis_filter(filter: &LineFilter, edge: EdgeMode, color: ColorType) -> AxisFilter {
    let full_scale = match color {
        ColorType::L8 | ColorType::Rgb8 => 255.0,
        ColorType::L16 | ColorType::Rgb16 => 65535.0,
        _ => 1.0,
    };
    let cval = match edge {
        EdgeMode::Constant(v) => v * full_scale,
        _ => 0.0,
    };
    AxisFilter {
        filter: filter.clone(),
        edge,
        cvals: vec![cval],
        footprint: None,
    }
}

/// A stack's samples, page after page, in their own type.
enum Volume {
    U8(Vec<u8>, ColorType),
    U16(Vec<u16>, ColorType),
    /// Float samples; `true`: gray float, of which one channel is held.
    F32(Vec<f32>, bool),
}

impl Volume {
    /// An empty volume of `pages` pages like `image` (L8, Rgb8, L16, Rgb16 or Rgb32F, which
    /// `gray_float` says is gray float held as RGB).
    fn with_pages(image: &DynamicImage, pages: usize, gray_float: bool) -> Volume {
        let n = pages * samples(image);
        match image.color() {
            c @ (ColorType::L8 | ColorType::Rgb8) => Volume::U8(Vec::with_capacity(n), c),
            c @ (ColorType::L16 | ColorType::Rgb16) => Volume::U16(Vec::with_capacity(n), c),
            _ if gray_float => Volume::F32(Vec::with_capacity(n / 3), true),
            _ => Volume::F32(Vec::with_capacity(n), false),
        }
    }

    /// Appends a page of the volume's colour type.
    fn push(&mut self, image: &DynamicImage) {
        match (self, image) {
            (Volume::U8(v, _), DynamicImage::ImageLuma8(i)) => v.extend_from_slice(i.as_raw()),
            (Volume::U8(v, _), DynamicImage::ImageRgb8(i)) => v.extend_from_slice(i.as_raw()),
            (Volume::U16(v, _), DynamicImage::ImageLuma16(i)) => v.extend_from_slice(i.as_raw()),
            (Volume::U16(v, _), DynamicImage::ImageRgb16(i)) => v.extend_from_slice(i.as_raw()),
            (Volume::F32(v, true), DynamicImage::ImageRgb32F(i)) => {
                v.extend(i.pixels().map(|p| p.0[0]))
            }
            (Volume::F32(v, false), DynamicImage::ImageRgb32F(i)) => {
                v.extend_from_slice(i.as_raw())
            }
            _ => unreachable!("the pages' colour types are checked first"),
        }
    }

    fn len(&self) -> usize {
        match self {
            Volume::U8(v, _) => v.len(),
            Volume::U16(v, _) => v.len(),
            Volume::F32(v, _) => v.len(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Volume::U8(v, _) => v.len(),
            Volume::U16(v, _) => 2 * v.len(),
            Volume::F32(v, _) => 4 * v.len(),
        }
    }

    /// The volume (of `shape`: pages, rows, columns, channels) filtered along each of
    /// `axes`, cut into pages.
    fn blurred(self, shape: &[usize; 4], axes: &[(usize, AxisFilter)]) -> Vec<DynamicImage> {
        match self {
            Volume::U8(mut v, ColorType::L8) => {
                filter_axes(&mut v, shape, axes);
                cut::<Luma<u8>>(v, shape)
            }
            Volume::U8(mut v, _) => {
                filter_axes(&mut v, shape, axes);
                cut::<Rgb<u8>>(v, shape)
            }
            Volume::U16(mut v, ColorType::L16) => {
                filter_axes(&mut v, shape, axes);
                cut::<Luma<u16>>(v, shape)
            }
            Volume::U16(mut v, _) => {
                filter_axes(&mut v, shape, axes);
                cut::<Rgb<u16>>(v, shape)
            }
            Volume::F32(mut v, true) => {
                use rayon::prelude::*;
                filter_axes(&mut v, shape, axes);
                let [_, h, w, _] = *shape;
                v.par_chunks_exact(h * w)
                    .map(|page| {
                        let rgb = page.iter().flat_map(|&g| [g, g, g]).collect();
                        let buffer = ImageBuffer::<Rgb<f32>, _>::from_raw(w as u32, h as u32, rgb);
                        DynamicImage::from(buffer.expect("a page's samples"))
                    })
                    .collect()
            }
            Volume::F32(mut v, false) => {
                filter_axes(&mut v, shape, axes);
                cut::<Rgb<f32>>(v, shape)
            }
        }
    }
}

/// `data` filtered along each of `axes` in turn. Integer samples blurred along more than one
/// axis go through an f32 copy, filled by the first axis's pass and emptied by the last's, so
/// that they are rounded once.
fn filter_axes<T: Element>(data: &mut [T], shape: &[usize; 4], axes: &[(usize, AxisFilter)]) {
    if T::FLOAT || axes.len() <= 1 {
        for (a, f) in axes {
            axis::filter_axis_in_place(data, shape, *a, f);
        }
        return;
    }
    let ((first, f0), rest) = axes.split_first().expect("two axes or more");
    let ((last, fl), middle) = rest.split_last().expect("two axes or more");
    let mut work = vec![0f32; data.len()];
    axis::filter_axis(data, &mut work, shape, *first, f0);
    for (a, f) in middle {
        axis::filter_axis_in_place(&mut work, shape, *a, f);
    }
    axis::filter_axis(&work, data, shape, *last, fl);
}

/// The volume `data` (of `shape`) cut into pages of `P`.
fn cut<P>(data: Vec<P::Subpixel>, shape: &[usize; 4]) -> Vec<DynamicImage>
where
    P: Pixel + 'static,
    P::Subpixel: Send + Sync,
    DynamicImage: From<ImageBuffer<P, Vec<P::Subpixel>>>,
{
    use rayon::prelude::*;
    let [_, h, w, c] = *shape;
    data.par_chunks_exact(h * w * c)
        .map(|page| {
            let buffer = ImageBuffer::<P, _>::from_raw(w as u32, h as u32, page.to_vec());
            DynamicImage::from(buffer.expect("a page's samples"))
        })
        .collect()
}
