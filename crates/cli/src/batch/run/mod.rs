//! The batch scheduler. On the Rust path alone (`--device rust`, or what auto picks without a
//! usable OpenCL device) every core takes whole images: it decodes, blurs and encodes one image
//! on its own, as a pool of single-threaded processes would (striping one image over threads
//! beside the other stages left a batch at 40% of its codec ceiling on 16 cores). Fewer images
//! than cores share the cores out.
//!
//! With a device, codec lanes (a core each, less one per device on 8 cores or more) encode a
//! blurred image wherever one waits and else decode the next file, and blurring runs on one
//! worker per device (`--device all` or a list gives several), which opens its device as the
//! lanes start; they meet through bounded queues: the device workers all take from one queue of
//! decoded images, so a faster device takes more of them. At most `2 × threads + 4 + devices`
//! images are in memory at once, whatever the folder's size. Where the one device is looked for
//! as the batch starts (`--device gpu`: `devices::found_as_batch_starts`), the lanes blur what
//! they decode themselves, on the Rust path, until it is open.

use super::journal::Journal;
use super::made_with::{self, SettingsLog};
use super::plan::{self, Task};
use super::stacks;
use super::summary::{FileRecord, Summary, WorkerSummary};
use super::BatchJob;
use crossbeam_channel::{bounded, unbounded, Receiver, Select, SendError, Sender};
use gblur::command::devices::ClError;
use gblur::command::devices::{self, DeviceChoice, OpenedDevice, Pipeline, Target};
use gblur::command::formats;
use gblur::command::job::{BlurJob, JobError};
use gblur::command::report::{Backend, Pass};
use gblur::command::stages::ImagePlan;
use gblur::command::stages::{self, Keep, Loaded, Working};
use gblur::command::stages::{MaskFile, Masked};
use gblur::command::stages::{Staging, StagingPool};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

mod device;
use device::device_stage;
mod encode;
use encode::encode_task;
mod load;
mod warm_up;
use warm_up::{decode_or_warm_up, WarmUp, WARM_UP};

/// Depth of each queue between stages. It stays 2 whatever the number of device workers: each
/// worker holds the one image it is blurring, so memory grows by one image per device.
const QUEUE: usize = 2;

/// Pinned slots a batch's device worker may stage images in (`StagingPool`), for `threads`
/// codec lanes: one for each image in the two queues and in the device worker's hands, and one
/// for each lane, which holds its slot until the devices' queue takes the image (a lane that
/// finds none free sends its image by pageable memory). `STAGING_BYTES` bounds them too.
fn staging_slots(threads: usize) -> usize {
    2 * QUEUE + 2 + threads
}

/// A bound on the page-locked memory, which the system cannot swap, that a batch takes.
const STAGING_BYTES: usize = 256 << 20;

/// An image on its way from a codec lane to a device worker.
struct DecodedTask {
    task: Task,
    loaded: Loaded,
    passes: Vec<Pass>,
    /// Its selection and input, where the batch blurs part of each image (`mask`).
    masked: Option<Masked>,
    /// Its planes copied into pinned memory for the device (`Shared::staging`).
    staging: Option<Staging>,
}

/// An image on its way from a device worker to an encoder.
struct BlurredTask {
    task: Task,
    loaded: Loaded,
    passes: Vec<Pass>,
    notes: Vec<String>,
    blur_ms: f64,
    /// The worker that took it, and whether its device blurred it (else the Rust path did).
    /// The encoder puts the device's name in the record: the device thread allocates nothing
    /// per image that lives to the end. A name allocated there did, and with the malloc heap
    /// of that thread pinned under freed image buffers, peak memory grew with the folder
    /// (Rust path, 3 MP JPEGs: 84 MiB for 10 images, 200 to 420 MiB for 120).
    worker: usize,
    on_device: bool,
    masked: Option<Masked>,
    /// Where the device left the blurred planes, if it used pinned memory.
    staging: Option<Staging>,
}

/// Which worker blurs an image, and what its path blurs as decoded.
#[derive(Clone, Copy)]
struct Lane {
    index: usize,
    keep: Keep,
}

/// One device-stage worker: its device (None: the Rust path), which it opens on its own thread
/// with its own context, and so its own queue, built programs and buffers.
struct Worker {
    index: usize,
    target: Option<Target>,
    /// The device it looks for on its own thread as the batch starts, where `target` is None
    /// (`devices::found_as_batch_starts`).
    find: Option<DeviceChoice>,
    name: String,
    /// What its path blurs as decoded (`stages::Keep::for_path`).
    keep: Keep,
}

impl Worker {
    fn lane(&self) -> Lane {
        Lane {
            index: self.index,
            keep: self.keep,
        }
    }

    fn backend(&self) -> Backend {
        match self.has_device() {
            true => Backend::Opencl,
            false => Backend::Rust,
        }
    }

    /// Whether it blurs on a device (one it found, or one it looks for as the batch starts).
    fn has_device(&self) -> bool {
        self.target.is_some() || self.find.is_some()
    }
}

/// What every stage shares.
struct Shared<'a> {
    job: &'a BatchJob,
    /// The forms of the batch's images, as the main command plans one image's.
    plan: &'a ImagePlan<'a>,
    bar: &'a indicatif::ProgressBar,
    t_total: Instant,
    megapixels_done: &'a AtomicU64,
    /// Workers whose device still blurs (a Rust-path worker always does).
    alive: &'a AtomicUsize,
    workers: usize,
    interrupted: &'a AtomicBool,
    out_dir: &'a Path,
    /// Each worker's device name, and the Rust path's, for the records (a device looked for
    /// as the batch starts is named once found).
    names: &'a [OnceLock<String>],
    rust_name: &'a str,
    /// `--mask`, decoded once for every image.
    mask_file: Option<&'a MaskFile>,
    /// Every worker blurs a JPEG going to JPEG as its YCbCr planes where it can
    /// (`ImagePlan::with_planes`: the Rust path, the blocked pipeline), so the codec lanes may load
    /// them so.
    planes: bool,
    /// Pinned memory the codec lanes copy JPEG planes into for the device, where one device
    /// worker blurs planes alone (no selection): its transfers then skip the driver's own
    /// staging copy.
    staging: Option<Arc<StagingPool>>,
    /// An in-place batch's journal of the files it replaced.
    journal: Option<&'a Journal>,
    /// What settings made each output (every batch but an in-place one).
    made: Option<&'a SettingsLog>,
    /// The codec lanes' own blurring while a device is looked for as the batch starts.
    warm_up: &'a WarmUp,
}

/// The checked folders, devices and files of a batch.
struct Setup {
    in_dir: PathBuf,
    out_dir: PathBuf,
    workers: Vec<Worker>,
    device_note: Option<String>,
    /// `FoundAsBatchStarts::warm_ups`, where the batch looks for its device as it starts.
    warm_up_limit: Option<usize>,
    mask_file: Option<MaskFile>,
    journal: Option<Journal>,
    made: Option<SettingsLog>,
}

/// Checks everything that can be wrong before any file is touched: the folders, the devices
/// (a --device that names nothing is refused before OUT_DIR is created), the output format and
/// the sigma. The devices are opened by their workers, as the codec lanes start.
fn set_up(job: &BatchJob) -> anyhow::Result<Setup> {
    let (in_dir, out_dir) = (&job.blur.input, &job.blur.output);
    anyhow::ensure!(in_dir.is_dir(), "{}: not a folder", in_dir.display());
    let (workers, device_note, warm_up_limit) = workers_of(&job.blur)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", out_dir.display()))?;
    let in_dir = in_dir.canonicalize()?;
    let out_dir = out_dir.canonicalize()?;
    plan::check_folders(job, (&in_dir, &out_dir))?;
    if let Some(f) = job.format {
        anyhow::ensure!(
            formats::can_write(f),
            "--format {f:?}: gblur cannot write it"
        );
    }
    let mask_file = job
        .blur
        .mask
        .open(job.blur.max_memory_mib)
        .map_err(anyhow::Error::msg)?;
    let journal = job
        .in_place
        .then(|| Journal::open(&in_dir, job.shard.unwrap_or((1, 1))))
        .transpose()
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot keep the in-place journal there: {e}",
                in_dir.display()
            )
        })?;
    let made = (!job.in_place)
        .then(|| {
            let shard = job.shard.unwrap_or((1, 1));
            SettingsLog::open(&out_dir, shard, made_with::fingerprint(job))
        })
        .transpose()
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot keep the settings log there: {e}",
                out_dir.display()
            )
        })?;
    Ok(Setup {
        in_dir,
        out_dir,
        workers,
        device_note,
        warm_up_limit,
        mask_file,
        journal,
        made,
    })
}

/// The batch's workers, the note on what `auto` or `all` chose, and the test hook's warm-up
/// split: one worker that looks for its device as the batch starts
/// (`devices::found_as_batch_starts`), or one for each device `choose_devices` found.
type Workers = (Vec<Worker>, Option<String>, Option<usize>);

fn workers_of(job: &BlurJob) -> anyhow::Result<Workers> {
    if let Some(found) = devices::found_as_batch_starts(&job.device, job.pipeline) {
        return Ok((
            vec![Worker::finding(found.choice, job)],
            None,
            found.warm_ups,
        ));
    }
    let (targets, note) = devices::choose_devices(&job.device, job.pipeline)?;
    Ok((workers_for(targets, job), note, None))
}

/// One worker per target. Each opens its device's context on its own thread as the batch
/// starts, while the codec lanes decode, and the context stays there.
fn workers_for(targets: Vec<Option<Target>>, job: &BlurJob) -> Vec<Worker> {
    targets
        .into_iter()
        .enumerate()
        .map(|(index, target)| {
            let name = target
                .as_ref()
                .map_or_else(devices::rust_device_name, |t| t.info.label());
            let keep = ImagePlan::new(job).path_keep(target.as_ref().map(|t| t.pipeline));
            Worker {
                index,
                target,
                find: None,
                name,
                keep,
            }
        })
        .collect()
}

impl Worker {
    /// The one worker of a batch whose device is looked for on its thread as the batch starts,
    /// on the blocked pipeline (`devices::found_as_batch_starts`).
    fn finding(choice: DeviceChoice, job: &BlurJob) -> Worker {
        Worker {
            index: 0,
            target: None,
            name: format!("--device {choice}"),
            keep: ImagePlan::new(job).path_keep(Some(Pipeline::BLOCKED)),
            find: Some(choice),
        }
    }
}

/// Blurs every file under IN_DIR into OUT_DIR and accounts for each one.
pub fn run(job: &BatchJob) -> Result<Summary, JobError> {
    let t_total = Instant::now();
    let Setup {
        in_dir,
        out_dir,
        workers,
        device_note,
        warm_up_limit,
        mask_file,
        journal,
        made,
    } = set_up(job).map_err(JobError::Setup)?;
    let asked: Vec<String> = workers.iter().map(|w| w.name.clone()).collect();
    let names: Vec<OnceLock<String>> = workers
        .iter()
        .map(|w| match w.find {
            None => OnceLock::from(w.name.clone()),
            Some(_) => OnceLock::new(),
        })
        .collect();
    let backends: Vec<Backend> = workers.iter().map(Worker::backend).collect();
    let keep = lanes_keep(&workers);

    if job.name.is_some() || job.format.is_some() {
        plan::check_names(job, &in_dir, &out_dir)
            .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))?;
    }
    let (tasks, mut records) =
        plan::plan(job, (&in_dir, &out_dir), journal.as_ref(), made.as_ref());
    // Every task that runs adds one record to the plan's, whatever its outcome (written,
    // failed, or kept because another writer's file appeared at its output).
    let planned = records.len();
    let encoder_notes = plan::encoder_options_apply(job, &tasks).map_err(JobError::Setup)?;
    let total = tasks.len();
    let interrupted = interrupt_flag();
    let bar =
        gblur::command::process::progress_bar(total, job.quiet, gblur::command::process::FILES);
    let megapixels_done = AtomicU64::new(0);
    let alive = AtomicUsize::new(workers.len());
    let rust_name = devices::rust_device_name();
    let planes = workers
        .iter()
        .all(|w| matches!(w.keep, Keep::Decoded | Keep::Decoded8Bit));
    let selects = mask_file.is_some() || job.blur.mask.active();
    let staging = staging_for(&workers, planes && !selects);
    let image_plan = ImagePlan::new(&job.blur);
    let warm_up = WarmUp::new(workers.iter().any(|w| w.find.is_some()), warm_up_limit);
    let mut shared = Shared {
        job,
        plan: &image_plan,
        bar: &bar,
        t_total,
        megapixels_done: &megapixels_done,
        alive: &alive,
        workers: workers.len(),
        interrupted: &interrupted,
        out_dir: &out_dir,
        names: &names,
        rust_name: &rust_name,
        mask_file: mask_file.as_ref(),
        planes,
        staging,
        journal: journal.as_ref(),
        made: made.as_ref(),
        warm_up: &warm_up,
    };
    // TIFF stacks keep every page, CMYK files their inks: each is blurred whole, one at a time
    // after the rest (`stacks`).
    let (stacks, tasks): (Vec<Task>, Vec<Task>) =
        tasks.into_iter().partition(|t| t.whole.is_some());
    let stopped = run_stages(&shared, tasks, workers, keep, &mut records);
    let stack_cx = stacks::Stacks {
        job,
        out_dir: &out_dir,
        journal: journal.as_ref(),
        made: made.as_ref(),
        rust_name: &rust_name,
    };
    records.extend(stack_cx.blur_all(&stacks, &bar, &interrupted));
    // Every thread is done with the pinned slots: free them now, not with the summary.
    drop(shared.staging.take());
    bar.finish_and_clear();

    let interrupted = interrupted.load(Ordering::SeqCst);
    let not_started = total.saturating_sub(records.len() - planned);
    let total_s = t_total.elapsed().as_secs_f64();
    let mut summary = Summary::of(records, not_started, total_s, interrupted);
    let warmed_up = warm_up.done.load(Ordering::Relaxed);
    let warm_up_note =
        summarise_workers(&mut summary, (names, asked), (backends, stopped), warmed_up);
    summary.notes = (device_note.into_iter())
        .chain(warm_up_note)
        .chain(encoder_notes)
        .collect();
    Ok(summary)
}

/// The summary's devices, each worker's under the name of the device it found (a device never
/// found keeps the name it was asked for by, and stderr has said why); returns the note on the
/// `warmed_up` images the codec lanes blurred while the device was looked for and opened,
/// where it was.
fn summarise_workers(
    summary: &mut Summary,
    (names, asked): (Vec<OnceLock<String>>, Vec<String>),
    (backends, stopped): (Vec<Backend>, Vec<Option<String>>),
    warmed_up: usize,
) -> Option<String> {
    let opened = names.iter().all(|n| n.get().is_some()) && stopped.iter().all(Option::is_none);
    let names = names
        .into_iter()
        .zip(asked)
        .map(|(found, asked)| found.into_inner().unwrap_or(asked));
    let workers = names.zip(backends).zip(stopped);
    summary.devices = workers
        .enumerate()
        .map(|(k, ((device, backend), stopped))| {
            WorkerSummary::of(k, device, backend, stopped, &summary.files)
        })
        .collect();
    summary.device = summary
        .devices
        .iter()
        .map(|d| d.device.as_str())
        .collect::<Vec<_>>()
        .join(" + ");
    (opened && warmed_up > 0).then(|| {
        format!(
            "{warmed_up} of {} images were blurred on the built-in Rust path while {} was \
             looked for and opened",
            summary.blurred, summary.device
        )
    })
}

/// Pinned memory for the JPEG planes the codec lanes decode, where one device worker blurs
/// them alone (`planes`: every worker blurs JPEG planes, and nothing is selected).
fn staging_for(workers: &[Worker], planes: bool) -> Option<Arc<StagingPool>> {
    let one_device = matches!(workers, [w] if w.has_device());
    let threads = rayon::current_num_threads();
    (planes && one_device)
        .then(|| Arc::new(StagingPool::new(staging_slots(threads), STAGING_BYTES)))
}

/// The form the codec lanes load each image in, once for every worker: as their paths all
/// keep it (stages::Keep) where they agree, else as decoded, and a worker converts to planar
/// f32 what its own path does not keep (`Loaded::adapt`).
fn lanes_keep(workers: &[Worker]) -> Keep {
    match workers.split_first() {
        Some((first, rest)) if rest.iter().all(|w| w.keep == first.keep) => first.keep,
        _ => Keep::Decoded,
    }
}

/// The flag Ctrl-C sets (and asks every running blur to stop).
fn interrupt_flag() -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    // Only one handler per process; a second batch in the same process keeps the first.
    let _ = ctrlc::set_handler(move || {
        flag.store(true, Ordering::SeqCst);
        gblur::command::process::stop_requested();
    });
    interrupted
}

/// Runs every task until it has a record in `records`: on the Rust path alone, one whole
/// image per core (`whole_images`); with a device, through the codec lanes and the device
/// workers. Returns why each worker's device stopped early, if it did.
fn run_stages(
    shared: &Shared,
    tasks: Vec<Task>,
    workers: Vec<Worker>,
    keep: Keep,
    records: &mut Vec<FileRecord>,
) -> Vec<Option<String>> {
    let threads = rayon::current_num_threads();
    let images = tasks.len();
    let (task_tx, task_rx) = unbounded::<Task>();
    for t in tasks {
        task_tx.send(t).expect("receiver alive");
    }
    drop(task_tx);
    let (rec_tx, rec_rx) = unbounded::<FileRecord>();
    if let [rust @ Worker {
        target: None,
        find: None,
        ..
    }] = &workers[..]
    {
        let rust = rust.lane();
        let lanes = threads.min(images).max(1);
        std::thread::scope(|scope| {
            for _ in 0..lanes {
                let (task_rx, rec_tx) = (task_rx.clone(), rec_tx.clone());
                let run = move || whole_images(rust, shared, keep, task_rx, rec_tx);
                scope.spawn(move || on_own_threads(threads / lanes, run));
            }
            drop(rec_tx);
            collect(shared, rec_rx, records);
        });
        // The Rust path never stops early.
        return vec![None];
    }
    std::thread::scope(|scope| {
        let handles = staged(scope, shared, (threads, keep), task_rx, workers, rec_tx);
        collect(shared, rec_rx, records);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Records arrive as images finish; the bar counts them.
fn collect(shared: &Shared, rec_rx: Receiver<FileRecord>, records: &mut Vec<FileRecord>) {
    for r in rec_rx.iter() {
        shared.bar.inc(1);
        records.push(r);
    }
}

/// Runs `work` where the codecs' and the blur's parallel loops (rayon) get `threads` threads
/// of their own, and so do not spread one image over the cores that other images' lanes are
/// busy on. A pool that cannot be built leaves the global one.
fn on_own_threads(threads: usize, work: impl FnOnce() + Send) {
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|_| "gblur-lane".into())
        .build()
    {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

/// One lane of the Rust path: decodes, blurs and encodes whole images, one after another,
/// until there are none left or the batch is interrupted.
fn whole_images(
    worker: Lane,
    shared: &Shared,
    keep: Keep,
    task_rx: Receiver<Task>,
    rec_tx: Sender<FileRecord>,
) {
    while let Ok(task) = task_rx.recv() {
        if shared.interrupted.load(Ordering::SeqCst) {
            break;
        }
        show_progress(shared, &task.input);
        let record = load::decode_task(shared, keep, task)
            .and_then(|d| blur_task(worker, None, shared, d))
            .map_or_else(|failed| *failed, |(b, _)| encode_task(shared, b));
        let _ = rec_tx.send(record);
    }
}

type StageHandle<'scope> = std::thread::ScopedJoinHandle<'scope, Option<String>>;

/// Starts the codec lanes and the device workers on `scope`; returns the device
/// workers' threads.
fn staged<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    shared: &'env Shared<'env>,
    (threads, keep): (usize, Keep),
    task_rx: Receiver<Task>,
    workers: Vec<Worker>,
    rec_tx: Sender<FileRecord>,
) -> Vec<StageHandle<'scope>> {
    let (dec_tx, dec_rx) = bounded::<DecodedTask>(QUEUE);
    let (enc_tx, enc_rx) = bounded::<BlurredTask>(QUEUE);
    // Codec lanes, each on a core of its own (spreading one image's decode over cores the
    // other lanes are busy on gains nothing, and the parallel decode of a JPEG without restart
    // markers reads every code twice), on 8 cores or more one core left to each device worker:
    // with a decoder and an encoder thread per core, the 32 threads of 16 cores kept a GPU
    // batch's device worker waiting for a core at every step.
    // On a few cores a core kept back costs the codecs more than the worker's waits do.
    let devices = workers.iter().filter(|w| w.has_device()).count();
    let lanes = match threads >= 8 {
        true => threads.saturating_sub(devices).max(1),
        false => threads,
    };
    for _ in 0..lanes {
        let (task_rx, dec_tx, rec_tx) = (task_rx.clone(), dec_tx.clone(), rec_tx.clone());
        let enc_rx = enc_rx.clone();
        let lane = move || codec_lane(shared, keep, task_rx, (dec_tx, enc_rx), rec_tx);
        scope.spawn(move || on_own_threads(1, lane));
    }
    drop((dec_tx, enc_rx));
    // The device stage: one worker per device, each on its own thread with its own
    // context, all taking from the one queue of decoded images.
    workers
        .into_iter()
        .map(|worker| {
            let (dec_rx, enc_tx, rec_fail) = (dec_rx.clone(), enc_tx.clone(), rec_tx.clone());
            scope.spawn(move || device_stage(&worker, shared, dec_rx, enc_tx, rec_fail))
        })
        .collect()
}

/// A codec lane: encodes a blurred image wherever one waits, else decodes the next file, until
/// the files are done (or the batch is interrupted) and every image it could be handed is
/// written. A decoded image waits for room in the devices' queue while the lane encodes.
fn codec_lane(
    shared: &Shared,
    keep: Keep,
    task_rx: Receiver<Task>,
    (dec_tx, enc_rx): (Sender<DecodedTask>, Receiver<BlurredTask>),
    rec_tx: Sender<FileRecord>,
) {
    let encode = |b: BlurredTask| {
        let _ = rec_tx.send(encode_task(shared, b));
    };
    loop {
        if let Ok(b) = enc_rx.try_recv() {
            encode(b);
            continue;
        }
        let task = match shared.interrupted.load(Ordering::SeqCst) {
            true => None,
            false => task_rx.try_recv().ok(),
        };
        let Some(task) = task else { break };
        let decoded = match decode_or_warm_up(shared, keep, task) {
            Ok(decoded) => decoded,
            Err(record) => {
                let _ = rec_tx.send(*record);
                continue;
            }
        };
        // Room in the devices' queue, or a blurred image to encode meanwhile.
        loop {
            let mut ready = Select::new();
            let (to_devices, from_devices) = (ready.send(&dec_tx), ready.recv(&enc_rx));
            let op = ready.select();
            match op.index() {
                i if i == to_devices => {
                    if let Err(SendError(d)) = op.send(&dec_tx, decoded) {
                        // Every device worker is gone (a panic, raised again at the join).
                        let why = "no device worker was left to blur it".to_string();
                        let failed =
                            FileRecord::failed(&d.task.input, &d.task.output, why, &d.passes);
                        let _ = rec_tx.send(failed);
                    }
                    break;
                }
                i if i == from_devices => {
                    if let Ok(b) = op.recv(&enc_rx) {
                        encode(b);
                    }
                }
                _ => unreachable!("two operations"),
            }
        }
    }
    // No more files for this lane: the devices' queue closes once every lane is here.
    drop(dec_tx);
    for b in enc_rx.iter() {
        encode(b);
    }
}

/// The progress bar's rate and the file being worked on.
fn show_progress(shared: &Shared, input: &Path) {
    let done_mp = shared.megapixels_done.load(Ordering::Relaxed) as f64 * 1e-6;
    let secs = shared.t_total.elapsed().as_secs_f64();
    let input = input.display();
    shared
        .bar
        .set_message(format!("{:.1} MP/s  {input}", done_mp / secs));
}

/// Blurs one decoded image for the worker `index`, whose device path keeps `keep`, on `device`
/// (None: the Rust path), the Rust path taking it where the device fails on it. Returns it with the device's error, if there was one, or the
/// image's failure record.
fn blur_task(
    Lane { index, keep }: Lane,
    device: Option<&OpenedDevice>,
    shared: &Shared,
    d: DecodedTask,
) -> Result<(BlurredTask, Option<ClError>), Box<FileRecord>> {
    let DecodedTask {
        task,
        mut loaded,
        mut passes,
        mut masked,
        mut staging,
    } = d;
    if let (Some(pool), Some(device), None, Working::Ycc(planes)) =
        (&shared.staging, device, &staging, &loaded.working)
    {
        // No slot was free or large enough: make one for the images to come.
        pool.grow(&device.ctx, planes.bytes() as usize);
    }
    let plan = shared.plan;
    let keep = match device {
        Some(_) => keep,
        None => plan.path_keep(None),
    };
    plan.fit(&mut loaded, masked.as_mut(), keep, &mut passes);
    let t = Instant::now();
    let mut notes = std::mem::take(&mut loaded.notes);
    // Too large for the device, out of device memory and the like: this image goes
    // the Rust way (stages::blur).
    let reload = || load::reload(plan, (&task.input, task.format), masked.as_ref());
    let done = stages::blur(
        device,
        &mut loaded,
        &shared.job.blur.filter,
        shared.job.blur.sharpen.as_ref(),
        &mut passes,
        reload,
        staging.as_mut(),
    );
    let done = match done {
        Ok(done) => done,
        Err(e) => {
            let failed = FileRecord::failed(&task.input, &task.output, e.to_string(), &passes);
            return Err(Box::new(failed));
        }
    };
    notes.extend(done.note);
    let megapixels = loaded.width as u64 * loaded.height as u64;
    shared
        .megapixels_done
        .fetch_add(megapixels, Ordering::Relaxed);
    let blurred = BlurredTask {
        task,
        loaded,
        passes,
        notes,
        blur_ms: t.elapsed().as_secs_f64() * 1e3,
        worker: index,
        on_device: done.on_device,
        masked,
        staging,
    };
    Ok((blurred, done.failure))
}
