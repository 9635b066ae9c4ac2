//! The batch's decode side: an image loaded in the form its worker blurs, with its selection
//! where the batch masks, and the reload that gives a device's failure to the Rust path.

use super::{DecodedTask, FileRecord, Shared, Task};
use crate::codec::ImageIoError;
use crate::gpu::opencl::pinned::{Staging, StagingPool};
use crate::job;
use crate::mask::{self, Masked};
use crate::report::{Pass, Stage};
use crate::work::edges::EdgePlan;
use crate::work::load::{load_with, Source};
use crate::work::{self, Keep, Loaded, Working};
use image::ImageFormat;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;


/// Loads one task's image (`load_masked`), or says why it could not.
pub(super) fn decode_task(shared: &Shared, keep: Keep, task: Task) -> Result<DecodedTask, Box<FileRecord>> {
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
    work::blur::stage_planes(planes, &mut staging).then_some(staging)
}

/// Loads `input` as `keep` says (as YCbCr planes where a JPEG goes to JPEG on the Rust path:
/// `job::planes_keep`), or as the selection needs it (`mask::MaskOptions::keep`), and builds
/// its selection; a mask of another size or a rectangle outside the image fails this image
/// alone.
pub(super) fn load_masked(
    shared: &Shared,
    (input, format): (&Path, ImageFormat),
    keep: Keep,
    passes: &mut Vec<Pass>,
) -> Result<(Loaded, Option<Masked>), String> {
    let blur_job = &shared.job.blur;
    let opts = &blur_job.mask;
    let source = Source::File(input);
    let plan = EdgePlan::new(blur_job.edges, shared.blur);
    let mut loaded = load_with(
        source,
        blur_job.decoding(),
        opts.keep(match shared.planes {
            true => job::planes_keep(blur_job, keep, format, &plan),
            false => keep,
        }),
        opts.sanitize(),
        &plan,
        passes,
    )
    .map_err(|e| e.to_string())?;
    if !opts.active() {
        return Ok((loaded, None));
    }
    let mut notes = std::mem::take(&mut loaded.notes);
    let t = Instant::now();
    let how = (&plan, shared.blur);
    let masked = Masked::new(opts, shared.mask_file, &mut loaded, how, input, &mut notes)?;
    passes.push(Pass::host(Stage::Decode, "selection", t));
    loaded.notes = notes;
    if masked.is_none() {
        loaded.adapt(keep, blur_job.linear, passes);
    }
    Ok((loaded, masked))
}

/// The image loaded again as the Rust path takes it alone (with its selection; as planes
/// where a JPEG goes to JPEG), for a device that could not blur it.
pub(super) fn reload_for_rust(
    shared: &Shared,
    (input, format): (&Path, ImageFormat),
    masked: Option<&Masked>,
) -> Result<Loaded, ImageIoError> {
    let blur_job = &shared.job.blur;
    let plan = EdgePlan::new(blur_job.edges, shared.blur);
    let rust = job::planes_keep(blur_job, job::keep_for(blur_job, None, shared.blur), format, &plan);
    mask::reload(
        Source::File(input),
        &blur_job.mask,
        masked,
        blur_job.decoding(),
        &plan,
        rust,
    )
}
