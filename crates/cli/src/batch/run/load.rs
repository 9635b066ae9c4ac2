//! The batch's decode side: an image loaded in the form its workers blur, with its selection
//! where the batch masks.

use super::{DecodedTask, FileRecord, Shared, Task};
use gblur::command::formats::{self, ImageIoError};
use gblur::command::report::{Log, Pass};
use gblur::command::stages::ImagePlan;
use gblur::command::stages::Masked;
use gblur::command::stages::Source;
use gblur::command::stages::{self, Keep, Loaded, Working};
use gblur::command::stages::{Staging, StagingPool};
use image::ImageFormat;
use std::path::Path;
use std::sync::Arc;

/// Loads one task's image (`load_masked`), or says why it could not.
pub(super) fn decode_task(
    shared: &Shared,
    keep: Keep,
    task: Task,
) -> Result<DecodedTask, Box<FileRecord>> {
    let mut passes = Vec::new();
    match load_masked(shared, (&task.input, task.format), keep, &mut passes) {
        Ok((loaded, masked)) => {
            let staging = shared
                .staging
                .as_ref()
                .and_then(|pool| stage(pool, &loaded));
            Ok(DecodedTask {
                task,
                loaded,
                passes,
                masked,
                staging,
            })
        }
        Err(e) => Err(Box::new(FileRecord::failed(
            &task.input,
            &task.output,
            e,
            &passes,
        ))),
    }
}

/// `loaded`'s planes copied into a free slot of `pool`, if it is a JPEG's planes and a slot
/// that holds them is free.
pub(super) fn stage(pool: &Arc<StagingPool>, loaded: &Loaded) -> Option<Staging> {
    let Working::Ycc(planes) = &loaded.working else {
        return None;
    };
    let mut staging = pool.take(planes.bytes() as usize)?;
    stages::stage_planes(planes, &mut staging).then_some(staging)
}

/// Loads `input` as `keep` says (as YCbCr planes where a JPEG goes to JPEG and every worker
/// takes them: `ImagePlan::with_planes`), or as the selection needs it, and builds its
/// selection; a mask of another size or a rectangle outside the image fails this image alone.
pub(super) fn load_masked(
    shared: &Shared,
    (input, format): (&Path, ImageFormat),
    keep: Keep,
    passes: &mut Vec<Pass>,
) -> Result<(Loaded, Option<Masked>), String> {
    let plan = shared.plan;
    let load_keep = match shared.planes {
        true => plan.with_planes(keep, format),
        false => keep,
    };
    let opened = formats::open(input, plan.job().max_memory_mib).map_err(|e| e.to_string())?;
    let mut loaded = plan
        .decode(Source::Input(&opened), load_keep, passes)
        .map_err(|e| e.to_string())?;
    let mut notes = std::mem::take(&mut loaded.notes);
    let log = &mut Log {
        passes,
        notes: &mut notes,
    };
    let masked = plan.select(&mut loaded, shared.mask_file, input, log);
    loaded.notes = notes;
    let masked = masked?;
    if masked.is_none() {
        plan.fit(&mut loaded, None, keep, passes);
    }
    Ok((loaded, masked))
}

/// `input` decoded again for the Rust path, with `masked`'s selection: the second decode after
/// a device could not blur the image.
pub(super) fn reload(
    plan: &ImagePlan,
    (input, format): (&Path, ImageFormat),
    masked: Option<&Masked>,
) -> Result<Loaded, ImageIoError> {
    let opened = formats::open(input, plan.job().max_memory_mib)?;
    plan.reload(Source::Input(&opened), masked, format)
}
