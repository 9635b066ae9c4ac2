//! N-D arrays on the device: a contiguous f32 array of any rank, uploaded once, filtered
//! along each axis that has a filter, downloaded once. The last two axes are the rows and
//! columns of a stack of planes (the planar pipeline's own passes); an earlier axis k is a
//! column pass over `prod(shape[..k])` stacked images of `prod(shape[k+1..])` columns and
//! `shape[k]` rows, one work-item per column, which is where a volume's z pass lies. Every
//! pass starts from the clamped edge; other edge modes extend the array on the host first.

use super::opencl::{ClContext, ClError, Enqueued};
use super::pipeline::{self, upload_filter, Along, DeviceImage, Run};
use super::plan::Pipeline;
use crate::filter::{Blur2d, LineFilter, Method};
use crate::report::{Pass, PassKind};

/// Blurs `data`, an array of `shape`, on the device, `filters[k]` along axis k (None: left
/// alone); returns every pass with its device time.
pub fn blur(
    ctx: &ClContext,
    data: &mut [f32],
    shape: &[usize],
    filters: &[Option<LineFilter>],
    pipeline: Pipeline,
) -> Result<Vec<Pass>, ClError> {
    assert_eq!(shape.len(), filters.len(), "one filter per axis");
    assert_eq!(data.len(), shape.iter().product::<usize>(), "array size");
    if data.is_empty() || filters.iter().all(Option::is_none) {
        return Ok(Vec::new());
    }
    // Rank 1 is one row of a single plane.
    let (mut shape, mut filters) = (shape.to_vec(), filters.to_vec());
    if shape.len() == 1 {
        shape.insert(0, 1);
        filters.insert(0, None);
    }
    let r = shape.len();
    let (w, h) = (shape[r - 1], shape[r - 2]);
    let planes: usize = shape[..r - 2].iter().product();
    let bytes = data.len() as u64 * 4;
    let mut dev = DeviceImage::new(ctx, w, h, planes)?;
    let mut commands = vec![Enqueued {
        timed: ctx.write(&mut dev.a, data, "upload")?,
        kind: PassKind::Transfer,
        bytes,
    }];
    // The planes: the pipeline's own 2-D blur where both of their axes are filtered.
    let (fy, fx) = (&filters[r - 2], &filters[r - 1]);
    let mut in_a = true;
    if let (Some(fy), Some(fx)) = (fy, fx) {
        let blur = Blur2d {
            x: fx.clone(),
            y: fy.clone(),
            method: Method::Auto,
            truncate: None,
        };
        commands.extend(pipeline::enqueue(ctx, &dev, &blur, pipeline)?);
    }
    let mut run = Run::new(ctx);
    let single = match (fy, fx) {
        (Some(f), None) => Some((f, Along::Columns, "column pass (axis -2)")),
        (None, Some(f)) => Some((f, Along::Rows, "row pass (axis -1)")),
        _ => None,
    };
    if let Some((f, along, name)) = single {
        let f = upload_filter(ctx, f)?;
        run.filter(&f, (&dev.a, &dev.b), (w, h, planes), along, name)?;
        in_a = false;
    }
    for (k, f) in filters[..r - 2].iter().enumerate() {
        let Some(f) = f else { continue };
        let f = upload_filter(ctx, f)?;
        let dims = (
            shape[k + 1..].iter().product(),
            shape[k],
            shape[..k].iter().product(),
        );
        let (src, dst) = if in_a {
            (&dev.a, &dev.b)
        } else {
            (&dev.b, &dev.a)
        };
        run.filter(
            &f,
            (src, dst),
            dims,
            Along::Columns,
            &format!("column pass (axis {k})"),
        )?;
        in_a = !in_a;
    }
    let result = if in_a { &dev.a } else { &dev.b };
    let t = ctx.read(result, data, "download")?;
    run.transfer(t, bytes);
    commands.extend(run.finish()?);
    commands.into_iter().map(|c| c.into_pass(ctx)).collect()
}
