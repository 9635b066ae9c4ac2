//! The device stage of a batch: each worker opens its device on its own thread (finding it
//! first where the batch looks for it as it starts), takes decoded images from the codec
//! lanes, blurs them there (the Rust path where the device fails) and hands them back.

use super::{blur_task, show_progress, BlurredTask, DecodedTask, Lane, Shared, Worker};
use crate::batch::summary::FileRecord;
use crossbeam_channel::{Receiver, Sender};
use gblur::command::devices::{self, ClError, OpenedDevice};
use gblur::command::stages::Keep;
use std::sync::atomic::Ordering;

/// The device stage of one worker: takes decoded images until the queue closes, blurs each
/// on its device (the Rust path where the device fails on it), and hands it to the codec lanes.
/// Returns why its device stopped before the end, if it did.
pub(super) fn device_stage(
    worker: &Worker,
    shared: &Shared,
    dec_rx: Receiver<DecodedTask>,
    enc_tx: Sender<BlurredTask>,
    rec_fail: Sender<FileRecord>,
) -> Option<String> {
    let (opened, keep) = open_device(worker, shared);
    // A device looked for as the batch starts and not there: the lanes go on blurring every
    // image themselves. Else they hand their images to the devices from now on.
    if opened.is_err() && worker.find.is_some() {
        shared.warm_up.no_device.store(true, Ordering::Release);
    }
    shared.warm_up.looking.store(false, Ordering::Release);
    let (device, mut stopped) = match opened {
        Ok(device) => (device, None),
        Err(what) => {
            let (why, last) = stop_device(worker, shared, &what);
            if !last {
                return Some(why);
            }
            (None, Some(why))
        }
    };
    let mut device_broken = false;
    while let Ok(d) = dec_rx.recv() {
        show_progress(shared, &d.task.input);
        let device = device.as_ref().filter(|_| !device_broken);
        let slot = Lane {
            index: worker.index,
            keep,
        };
        let (blurred, failure) = match blur_task(slot, device, shared, d) {
            Ok(done) => done,
            Err(failed) => {
                let _ = rec_fail.send(*failed);
                continue;
            }
        };
        let mut leave = false;
        if let Some(ClError::Build { .. }) = failure {
            device_broken = true;
            let (why, last) = stop_device(worker, shared, "the kernels did not build");
            stopped = Some(why);
            leave = !last;
        }
        let _ = enc_tx.send(blurred);
        if leave {
            break;
        }
    }
    stopped
}

/// The worker's device opened, or None for a Rust-path worker, with what its path keeps of a
/// decoded image; a device looked for as the batch starts is found first, and named in the
/// records once it is. The error says why there is no device.
fn open_device(worker: &Worker, shared: &Shared) -> (Result<Option<OpenedDevice>, String>, Keep) {
    let target = match (&worker.target, &worker.find) {
        (Some(target), _) => target.clone(),
        (None, Some(choice)) => match devices::find_target(choice, shared.job.blur.pipeline) {
            Ok(target) => target,
            Err(e) => return (Err(format!("no device was found ({e})")), worker.keep),
        },
        (None, None) => return (Ok(None), worker.keep),
    };
    let keep = shared.plan.path_keep(Some(target.pipeline));
    let _ = shared.names[worker.index].set(target.info.label());
    let opened = OpenedDevice::open(target).map(Some);
    (
        opened.map_err(|e| format!("it could not be opened ({e})")),
        keep,
    )
}

/// A device that could not be opened, or whose kernels did not build (they will not build for
/// the next image either), `what` says which. The device takes no more images while another
/// worker's device still blurs; the last one whose device breaks goes on on the Rust path.
/// Says so on stderr; returns the summary's reason and whether this was the last device still
/// blurring.
fn stop_device(worker: &Worker, shared: &Shared, what: &str) -> (String, bool) {
    let last = shared.alive.fetch_sub(1, Ordering::SeqCst) == 1;
    let then = if last {
        "it blurred the rest of the batch on the built-in Rust path"
    } else {
        "it took no more images, the other devices went on"
    };
    if !shared.job.quiet {
        let who = if shared.workers == 1 {
            worker.name.clone()
        } else {
            format!("{} (device #{})", worker.name, worker.index)
        };
        let now = if last {
            "the rest of the batch runs on the built-in Rust path"
        } else {
            "it takes no more images, the other devices go on"
        };
        shared.bar.suspend(|| {
            gblur::command::report::diagnostic(&format!("gblur: {who}: {what}; {now}"))
        });
    }
    (format!("{what}: {then}"), last)
}
