//! The images a batch's codec lanes blur themselves, on the Rust path and their own cores,
//! while the batch's one device is looked for and opened as the batch starts
//! (`devices::found_as_batch_starts`), or all of them where it is not there.

use super::{blur_task, encode_task, load, DecodedTask, Lane, Shared, Task};
use crate::batch::summary::{FileRecord, Outcome};
use gblur::command::stages::Keep;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The worker index of the images the codec lanes blur themselves while a device is looked for
/// and opened (`WarmUp`): their records name no worker.
pub(super) const WARM_UP: usize = usize::MAX;

/// What the codec lanes blur themselves, on the Rust path, where the batch's one device is
/// looked for and opened as the batch starts (`devices::found_as_batch_starts`).
pub(super) struct WarmUp {
    /// True while the worker looks for its device and opens it: the lanes blur what they
    /// decode themselves.
    pub(super) looking: AtomicBool,
    /// Set where the device was not found or not opened: the lanes then blur every image
    /// themselves, as a Rust-path batch's lanes do, rather than hand it to the worker's one
    /// thread.
    pub(super) no_device: AtomicBool,
    /// The test hook's split instead of `looking` (`FoundAsBatchStarts::warm_ups`): the lanes
    /// blur this many images themselves, counted by `claims`, whatever the device's state.
    limit: Option<usize>,
    claims: AtomicUsize,
    /// The images the lanes blurred themselves.
    pub(super) done: AtomicUsize,
}

impl WarmUp {
    pub(super) fn new(looking: bool, limit: Option<usize>) -> WarmUp {
        WarmUp {
            looking: AtomicBool::new(looking),
            no_device: AtomicBool::new(false),
            limit,
            claims: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        }
    }

    /// Whether the next image a codec lane takes is one it blurs itself.
    fn takes_next(&self) -> bool {
        // `looking` first: once it reads false, `no_device`, stored before it, reads as stored.
        let looking = self.looking.load(Ordering::Acquire);
        let within = match self.limit {
            Some(n) => self.claims.fetch_add(1, Ordering::Relaxed) < n,
            None => looking,
        };
        within || self.no_device.load(Ordering::Acquire)
    }
}

/// A file decoded as its device's path takes it (`keep`), or its record where it failed or the
/// lane blurred it itself while the device is looked for and opened (`WarmUp::takes_next`:
/// decoded as the Rust path takes it).
pub(super) fn decode_or_warm_up(
    shared: &Shared,
    keep: Keep,
    task: Task,
) -> Result<DecodedTask, Box<FileRecord>> {
    let warm = shared.warm_up.takes_next();
    let keep = match warm {
        true => shared.plan.path_keep(None),
        false => keep,
    };
    match load::decode_task(shared, keep, task) {
        Ok(decoded) if !warm => Ok(decoded),
        done => Err(done.map_or_else(|failed| failed, |d| Box::new(warm_up(shared, d)))),
    }
}

/// An image a codec lane blurs itself, on the Rust path and its own core, as a Rust-path
/// batch's lane does, while the device is still being looked for and opened; its record.
fn warm_up(shared: &Shared, decoded: DecodedTask) -> FileRecord {
    let rust = Lane {
        index: WARM_UP,
        keep: shared.plan.path_keep(None),
    };
    let record = blur_task(rust, None, shared, decoded)
        .map_or_else(|failed| *failed, |(b, _)| encode_task(shared, b));
    if record.outcome == Outcome::Blurred {
        shared.warm_up.done.fetch_add(1, Ordering::Relaxed);
    }
    record
}
