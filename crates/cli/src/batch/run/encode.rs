//! The encode stage of a batch: a blurred image saved to its output and its record made.

use super::{BlurredTask, Shared, Task};
use crate::batch::made_with::SettingsLog;
use crate::batch::plan;
use crate::batch::summary::{FileRecord, Outcome};
use gblur::command::formats::{self, ImageIoError};
use gblur::command::report::{self, Pass, Stage};
use gblur::command::stages::{self, Working};
use gblur::command::stages::{save, Output};

/// The record of `task`, blurred by `worker` (`on_device`: on its device, else on the Rust
/// path), with its decode and encode times from `passes`.
fn blurred_record(
    shared: &Shared,
    task: &Task,
    (worker, on_device): (usize, bool),
    passes: &[Pass],
) -> FileRecord {
    let mut record = FileRecord::new(&task.input, Outcome::Blurred, &task.output);
    record.decode_ms = report::stage_ms(passes, Stage::Decode);
    record.encode_ms = report::stage_ms(passes, Stage::Encode);
    record.device = Some(match on_device {
        true => shared.names[worker].get().cloned().unwrap_or_default(),
        false => shared.rust_name.to_string(),
    });
    record.worker = (worker != super::WARM_UP).then_some(worker);
    record.replaced_stale = task.replaces_stale;
    record
}

/// Writes one blurred image; returns its record.
pub(super) fn encode_task(shared: &Shared, b: BlurredTask) -> FileRecord {
    let (mut passes, mut notes) = (b.passes, b.notes);
    let output = &b.task.output;
    let megapixels = b.loaded.width as f64 * b.loaded.height as f64 * 1e-6;
    let mut loaded = b.loaded;
    let mut pinned = false;
    if let (Some(staging), Working::Ycc(planes)) = (&b.staging, &mut loaded.working) {
        pinned = stages::unstage_planes(planes, staging);
    }
    // The slot goes back to the codec lanes.
    drop(b.staging);
    if let Some(m) = b.masked {
        m.finish(&mut loaded, &mut passes);
    }
    let record_in_journal = |meta: &std::fs::Metadata| match shared.journal {
        Some(journal) => journal.record(output, meta),
        None => Ok(()),
    };
    let replace = match (shared.journal.is_some(), shared.job.overwrite) {
        (true, _) => formats::Replace::Recorded(&record_in_journal),
        (false, true) => formats::Replace::Any,
        (false, false) if b.task.replaces_stale => formats::Replace::Any,
        (false, false) => formats::Replace::Never,
    };
    let saved = plan::check_inside(shared.out_dir, output)
        .and_then(|()| plan::create_parent(output))
        .and_then(|()| {
            let to = Output {
                path: output,
                format: b.task.format,
                encode: shared.job.blur.encode,
                metadata: shared.job.blur.metadata,
                replace,
                max_memory_mib: None,
            };
            save(loaded, to, &mut passes, &mut notes)
        });
    let mut record = blurred_record(shared, &b.task, (b.worker, b.on_device), &passes);
    (record.megapixels, record.blur_ms) = (megapixels, b.blur_ms);
    (record.notes, record.pinned) = (notes, pinned);
    match saved {
        Ok(_) => {
            let logged = SettingsLog::note_written(shared.made, output, &b.task.input);
            record.notes.extend(logged);
        }
        // Another writer's file appeared at the output meanwhile: it stays, and counts as an
        // output that exists.
        Err(e @ ImageIoError::Appeared { .. }) => {
            record.outcome = Outcome::SkippedExisting;
            record.notes.push(report::one_line(&e.to_string()));
        }
        Err(e) => {
            record.outcome = Outcome::Failed;
            record.error = Some(report::one_line(&e.to_string()));
        }
    }
    record
}
