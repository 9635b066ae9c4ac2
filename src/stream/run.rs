//! One streamed image, start to end: where its blur runs (an OpenCL device's bands, the
//! host's window of strips, or the exact two passes), the output's settings, and the three
//! stages (decode, blur, encode) on their threads, with the report of what each did.

use super::budget;
use super::gpu_bands::{self, BandPlan};
use super::method::{window_plan, Vertical};
use super::report::{report, Busy, Held};
use super::stage::{Feed, Sink};
use super::two_pass;
use super::*;
use crate::codec::rows::{RowSettings, RowsTarget};

/// Blurs `rows` into `job.output` through the strip engine: in bands on `device` (opened for
/// `job.gpu`) where it takes them, on the Rust path's sliding window otherwise.
pub fn run(
    job: &StripJob,
    blur: &Blur2d,
    rows: Rows,
    device: Option<&Device>,
) -> Result<Streamed, StripError> {
    let color = rows.color();
    match color.bytes_per_pixel() / color.channel_count() {
        1 => run_typed::<u8>(job, blur, rows, device),
        _ => run_typed::<u16>(job, blur, rows, device),
    }
}

/// The band plan for `device` where it blurs a `T` image with rows of `row_samples` (and the
/// filter's `reach`) within what `job`'s budget leaves beside the process as it stands (the
/// device's driver alone holds a few hundred MiB) and `beside` (the codecs and the rows in
/// flight); else why the Rust path blurs it.
fn gpu_plan<T: StreamSample>(
    job: &StripJob,
    device: &Device,
    (row_samples, height): (usize, usize),
    reach: usize,
    beside: u64,
) -> Result<(BandPlan, u64), String> {
    if T::as_bytes(&[]).is_none() {
        return Err("the device takes 8-bit images in bands".into());
    }
    let resident = crate::memory::resident_bytes();
    let budget = budget::blur_share(job, resident, beside);
    let alloc = device.ctx.info.max_alloc_mib.saturating_mul(1 << 20);
    let forced = env_number(BAND_ROWS_VAR);
    let plan = BandPlan::new((row_samples, height), reach, budget, alloc, forced);
    let least = (2 * reach).max(16);
    plan.map(|p| (p, resident)).ok_or_else(|| {
        format!("device bands of {least} rows and {reach} rows of reach each side do not fit the memory budget beside the {} MiB the process holds with the device open (raise --max-memory)", resident >> 20)
    })
}

/// Where a streamed image is blurred: an OpenCL device's bands (with the process's resident
/// bytes once it was open), else a window of strips on the host, or the exact two passes
/// (`vertical`); with the set-up passes that took.
struct Placement<'d> {
    bands: Option<(&'d Device, BandPlan, u64)>,
    plan: StripPlan,
    window: u64,
    vertical: Vertical,
    setup: Vec<Pass>,
}

/// Places the blur of `rows` (`T` samples, the filter reaching `reach` rows): on `device`'s
/// bands where they fit (a note says why not where they do not), else in a window of strips
/// within the budget; the device's kernels are built here.
fn place<'d, T: StreamSample>(
    job: &StripJob,
    blur: &Blur2d,
    rows: &Rows,
    device: Option<&'d Device>,
    reach: usize,
    notes: &mut Vec<String>,
) -> Result<Placement<'d>, StripError> {
    let ((width, height), color) = (rows.size(), rows.color());
    let stride = rows.row_samples();
    let bytes = std::mem::size_of::<T>();
    let image = (stride, height as usize);
    let stripes = stripes_at_once(job, width as usize * color.channel_count() as usize);
    let beside = budget::beside_window(job, rows, bytes as u64, stripes as u64);
    let bands = device.and_then(|d| match gpu_plan::<T>(job, d, image, reach, beside) {
        Ok((plan, resident)) => Some((d, plan, resident)),
        Err(why) => {
            notes.push(format!("{why}: blurred on the built-in Rust path"));
            None
        }
    });
    let mut setup = Vec::new();
    let (plan, window, vertical) = match bands {
        // Not used: the device's bands blur the image.
        Some(_) => (StripPlan { strip: 0, reach }, 0, Vertical::Window),
        None => window_plan(
            job,
            (stride, bytes),
            height as usize,
            reach,
            beside,
            env_number(STRIP_ROWS_VAR),
        )?,
    };
    if let Some((device, b, _)) = bands {
        let t = Instant::now();
        let upload = Upload::for_image(color, job.linear, device.pipeline, blur);
        let rows = (b.band + 2 * b.reach).min(height as usize);
        device
            .prepare(blur, (width as usize, rows), upload)
            .map_err(|error| StripError::device(device, error))?;
        setup.push(Pass::host(Stage::Setup, "kernels", t));
    }
    Ok(Placement {
        bands,
        plan,
        window,
        vertical,
        setup,
    })
}

/// What the output is written with: the input's metadata that `--strip` and `--keep` leave,
/// and the encoders' settings resolved against the input, with the notes they owe (the
/// JPEG quality's is returned, for a JPEG output to give).
fn output_settings(
    job: &StripJob,
    rows: &mut Rows,
    notes: &mut Vec<String>,
) -> (Metadata, RowSettings, Option<String>) {
    let mut meta: Metadata = std::mem::take(&mut rows.header_mut().meta);
    notes.append(&mut meta.unread);
    if job.linear {
        notes.extend(meta.icc.as_deref().and_then(crate::codec::icc::linear_note));
    }
    let mut meta = meta.select(job.metadata);
    if let Some(note) = codec::foreign_profile(meta.icc.as_deref(), rows.color().has_color()) {
        meta.icc = None;
        notes.push(note);
    }
    let (jpeg, quality_note) = job.jpeg.resolve(rows.0.jpeg_traits().as_ref());
    let (tiff, tiff_note) = job.tiff.resolve(rows.tiff_compression());
    if job.format == ImageFormat::Tiff {
        notes.extend(tiff_note);
    }
    let (width, color) = (rows.size().0 as usize, rows.color());
    let settings = RowSettings {
        jpeg,
        jpeg_stripes: stripes_at_once(job, width * color.channel_count() as usize),
        tiff: tiff.compression(),
        png: job.png_compression,
    };
    (meta, settings, quality_note)
}

/// How the image was blurred, for the report: the device's bands or the host's strips.
fn pipeline_name(placement: &Placement, two_pass: bool) -> String {
    match placement.bands {
        Some((device, b, _)) => format!(
            "bands of {} rows with {} rows of reach each side, {}, 8-bit in and out",
            b.band,
            b.reach,
            device.pipeline.describe()
        ),
        None => format!(
            "strips of {} rows, banded ({}){}",
            placement.plan.strip,
            crate::cpu::lanes::isa_name(),
            if two_pass { ", exact two-pass" } else { "" }
        ),
    }
}

/// What the output is written with: the input's metadata that is kept, and the encoders'
/// settings.
#[derive(Clone, Copy)]
struct Written<'a> {
    meta: &'a Metadata,
    settings: RowSettings,
}

/// What the three stages hand back: the blur's passes, busy time and note (or why it
/// stopped), the decoder's busy time, and the encoder's busy time and notes (or its error).
type StagesDone = (
    Result<(Vec<Pass>, f64, Option<String>), Stop>,
    Duration,
    Result<(Duration, Vec<String>), ImageIoError>,
);

fn run_typed<T: StreamSample>(
    job: &StripJob,
    blur: &Blur2d,
    mut rows: Rows,
    device: Option<&Device>,
) -> Result<Streamed, StripError> {
    let shape = Shape::of(&rows);
    let table = job.linear.then(|| srgb_table(T::LEVELS));
    let px = Pixels {
        channels: shape.color.channel_count() as usize,
        alpha: shape.color.has_alpha(),
        linear: table.as_deref(),
        mix: None,
        sharpen: None,
    };
    let reach = crate::filter::gaussian::recursive_reach(job.sigma_y);
    let (Some(kx), Some(ky)) = (Axis::of(&blur.x), Axis::of(&blur.y)) else {
        unreachable!("`unsupported` refuses FIR axes");
    };
    let mut notes = Vec::new();
    let placement = place::<T>(job, blur, &rows, device, reach, &mut notes)?;
    let (meta, settings, quality_note) = output_settings(job, &mut rows, &mut notes);
    let two_pass = placement.vertical != Vertical::Window;
    let passes_over = if two_pass { 2 } else { 1 };
    let stride = rows.row_samples();
    let mut bar = RowsBar::new(
        (shape.width, passes_over * shape.height as u64),
        stride,
        job.progress,
        job.on_progress.clone(),
    );
    let (rows, mut first) = match two_pass {
        true => {
            let first = first_pass::<T>(job, rows, &placement, &px, ky, &mut bar)?;
            (two_pass::reopen(job, shape)?, Some(first))
        }
        false => (rows, None),
    };
    // The stages' overlap is measured from here: set-up and pass 1 come before any of them.
    let wall = Instant::now();
    let written = Written {
        meta: &meta,
        settings,
    };
    let exact = first.as_mut().map(|f| &mut f.states);
    let blur_with = (blur, &px, (kx, ky));
    let done = stages::<T>(job, rows, blur_with, (&placement, exact), written, &mut bar);
    bar.finish();
    let Finished {
        passes,
        busy,
        bands_note,
        output_notes,
    } = finish_stages(job, device, done)?;
    let held = match (placement.bands, &first) {
        (Some((_, plan, resident)), _) => Held::Bands {
            plan,
            bytes: plan.bytes(stride),
            resident,
        },
        (None, Some(first)) => Held::TwoPass {
            plan: placement.plan,
            bytes: placement.window,
            reach,
            first_ms: first.wall_ms,
            spilled: first.states.spilled(),
        },
        (None, None) => Held::Window {
            plan: placement.plan,
            bytes: placement.window,
        },
    };
    let (passes, summary) = report(passes, busy, held, wall);
    let first_passes = first.map(|f| f.passes).unwrap_or_default();
    let pipeline = pipeline_name(&placement, two_pass);
    let on_device = placement.bands.is_some();
    let passes = placement
        .setup
        .into_iter()
        .chain(first_passes)
        .chain(passes)
        .collect();
    notes.insert(0, summary);
    notes.extend(bands_note);
    if job.format == ImageFormat::Jpeg {
        notes.extend(quality_note);
    }
    notes.extend(output_notes);
    Ok(Streamed {
        passes,
        on_device,
        notes,
        color: shape.color,
        pipeline,
    })
}
/// Pass 1 of the exact two-pass method over `rows`, in `placement`'s strips (its column
/// states in a temporary file where they spill), the rows counted on `bar`.
fn first_pass<T: StreamSample>(
    job: &StripJob,
    rows: Rows,
    placement: &Placement,
    px: &Pixels,
    ky: Axis,
    bar: &mut RowsBar,
) -> Result<two_pass::FirstPass, StripError> {
    let spill = match placement.vertical {
        Vertical::TwoPass { spill: true } => Some(two_pass::spill_file(job)?),
        _ => None,
    };
    let strip = placement.plan.strip;
    Ok(two_pass::first_pass::<T>(
        job, rows, px, ky, strip, spill, bar,
    )?)
}

/// The decoder and encoder threads, with the blur between them on this thread: in
/// `placement`'s device bands, else in its window of strips (`exact`: the column states of
/// the two-pass method's first pass).
fn stages<T: StreamSample>(
    job: &StripJob,
    rows: Rows,
    (blur, px, axes): (&Blur2d, &Pixels, (Axis, Axis)),
    (placement, exact): (&Placement, Option<&mut ColumnStates>),
    written: Written,
    bar: &mut RowsBar,
) -> StagesDone {
    let shape = Shape::of(&rows);
    let (in_tx, in_rx) = bounded::<DecodedBatch<T>>(2);
    let (out_tx, out_rx) = bounded::<Vec<T>>(1);
    // Buffers that went through each channel come back for the next batch or strip: a fresh
    // one is zeroed (the decoder's) or faulted in page by page (a strip's tens of MiB, from
    // the system each time), which on a gigapixel image cost more than the copies themselves.
    let (in_back, in_spare) = bounded::<Vec<T>>(4);
    let (out_back, out_spare) = bounded::<Vec<T>>(2);
    std::thread::scope(|s| {
        let decoder = s.spawn(move || decode(rows, (in_tx, in_spare)));
        let encoder = s.spawn(move || encode::<T>(job, shape, written, (out_rx, out_back)));
        let dims = shape.dims();
        let feed = Feed::new((in_rx, in_back));
        let sink = Sink::new((out_tx, out_spare, bar), budget::PIECE_BYTES as usize);
        let blurred = match placement.bands {
            Some((device, bands, _)) => {
                let image = (dims.0, dims.1, px.channels);
                gpu_bands::blur_bands(device, image, blur, job.linear, bands, (feed, sink))
            }
            None => blur_stage(dims, px, axes, (placement.plan, exact), (feed, sink))
                .map(|(passes, busy)| (passes, busy, None)),
        };
        (blurred, join(decoder), join(encoder))
    })
}

/// What the stages did, once all three ended well.
struct Finished {
    passes: Vec<Pass>,
    busy: Busy,
    /// Why the device's bands went as they did, where they say.
    bands_note: Option<String>,
    /// What the output could not hold.
    output_notes: Vec<String>,
}

/// The stages' results as one: the first stage to fail says why; a stage that stopped
/// because another did says nothing.
fn finish_stages(
    job: &StripJob,
    device: Option<&Device>,
    (blurred, decode_busy, encoded): StagesDone,
) -> Result<Finished, StripError> {
    let (passes, blur_ms, bands_note) = match blurred {
        Ok(done) => done,
        Err(Stop::Failed(e)) => return Err(e.into()),
        Err(Stop::Device(error)) => {
            let device = device.expect("only a device's bands stop with a device error");
            return Err(StripError::device(device, error));
        }
        Err(Stop::Gone) => return Err(encoded.expect_err("the encoder stopped the blur").into()),
        Err(Stop::Spill(e)) => return Err(two_pass::spill_error(job, e).into()),
    };
    let (encode_busy, output_notes) = encoded?;
    Ok(Finished {
        passes,
        busy: Busy {
            decode: decode_busy,
            blur_ms,
            encode: encode_busy,
        },
        bands_note,
        output_notes,
    })
}

/// The encoder thread: the rows into `job.output` as PNG, TIFF or JPEG (`unsupported` allows
/// no other). Returns the time spent writing, not waiting, and notes on what the output
/// could not hold.
fn encode<T: StreamSample>(
    job: &StripJob,
    shape: Shape,
    written: Written,
    rows: Batches<T>,
) -> Result<(Duration, Vec<String>), ImageIoError> {
    let encoded = codec::guard::catch(|| encode_rows(job, shape, written, rows));
    encoded.unwrap_or_else(|panic| {
        Err(ImageIoError::Encode {
            path: job.output.into(),
            format: format!("{:?}", job.format),
            detail: format!("the encoder failed ({panic})"),
        })
    })
}

/// The rows into `job.output` through its format's row writer.
fn encode_rows<T: StreamSample>(
    job: &StripJob,
    Shape {
        width,
        height,
        color,
    }: Shape,
    Written { meta, settings }: Written,
    rows: Batches<T>,
) -> Result<(Duration, Vec<String>), ImageIoError> {
    let target = RowsTarget {
        path: job.output,
        replace: job.replace,
        size: (width, height),
        color,
        meta,
        settings,
    };
    codec::of(job.format).write_rows(target, T::batches(rows))
}

/// The blur stage, on the calling thread: rows from the decoder through the window to the
/// encoder. Returns the blur's passes and its busy time in ms (the passes and the copies in
/// and out, not the waits).
fn blur_stage<T: StreamSample>(
    dims: (usize, usize),
    px: &Pixels,
    axes: (Axis, Axis),
    plan: (StripPlan, Option<&mut ColumnStates>),
    (mut feed, mut sink): (Feed<T>, Sink<T>),
) -> Result<(Vec<Pass>, f64), Stop> {
    let fill = |dst: &mut [T]| feed.fill(dst);
    let emit = |rows: &[T]| sink.emit(rows);
    let passes = blur_streamed(dims, px, axes, plan, fill, emit)?;
    let copies = feed.copies + sink.copies;
    let busy = passes.iter().map(|p| p.ms).sum::<f64>() + copies.as_secs_f64() * 1e3;
    let passes = passes
        .into_iter()
        .map(|p| Pass::host_ms(Stage::Blur, p.name, p.ms))
        .collect();
    Ok((passes, busy))
}
