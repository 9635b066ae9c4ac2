//! The `-D` build options of the blocked kernels (kernels/recursive_blocks.cl): one string per
//! pixel format, chunk length and reach, with the work-group shapes they imply, so that the
//! pipeline that enqueues them and the reports that name them agree. `GBLUR_BLOCKED_TUNE`
//! overrides the shapes for tuning sweeps.

use crate::gpu::format::PixelFormat;
#[cfg(feature = "unstable-internals")]
use crate::{
    filter::LineFilter,
    gpu::plan::{blocked_plan, Blocking},
};

/// The defines a blocked pass over columns of `len` pixels of `format` is built with, as
/// `blocked_plan` decides for `f` and `blocked`: `block_overlap`'s where the chunks overlap,
/// the carried kernels' otherwise (for reports such as `gblur bench blur`'s).
// `gblur bench` alone uses it (crates/bench), through the internals.
#[cfg(feature = "unstable-internals")]
pub fn pass_defines(f: &LineFilter, blocked: Blocking, len: usize, format: PixelFormat) -> String {
    let plan = blocked_plan(f, blocked, len, format);
    match plan.reach {
        Some(reach) => overlap_defines(plan.chunk, format, reach).0,
        None => blocked_defines(plan.chunk, format).0,
    }
}

/// The build options and work-group shape of `block_overlap`, and the work-items it puts
/// across one pixel: pixels of several channels walk one sample column per work-item
/// (`layout_defines`). The reach sets the length of its sums (a constant, so that their
/// weights sit at constant offsets).
pub fn overlap_defines(
    chunk: usize,
    format: PixelFormat,
    reach: usize,
) -> (String, [usize; 2], usize) {
    let samples = format.channels > 1;
    let (defines, shape, _) = layout_defines(chunk, format, Walks::Overlapped);
    let lanes = if samples { format.channels } else { 1 };
    (format!("{defines} -DREACH={reach}"), shape, lanes)
}

/// The build options and work-group shapes of the blocked kernels for `chunk` rows per chunk
/// and pixels of `format`: `[TILE, GROUP_CHUNKS]` of the final pass (TILE columns ×
/// GROUP_CHUNKS chunks, a local tile of about 34 KB, under the 48 KB OpenCL devices promise)
/// and `[SUM_LANES, SPLIT]` of the summaries (SUM_LANES columns × SPLIT work-items per chunk).
/// `GBLUR_BLOCKED_TUNE` (`tile=N,group=N,batch=N,pre=0|1,lanes=N,split=N,vec=N`, any of them)
/// overrides the shapes, the rows loaded ahead and whether they are double-buffered, the
/// work-group width of the summaries and carries and the columns each of their work-items
/// takes (`summary_vectors`), for tuning sweeps with `gblur bench blur`; normal use never
/// sets it.
pub fn blocked_defines(chunk: usize, format: PixelFormat) -> (String, [usize; 2], [usize; 2]) {
    layout_defines(chunk, format, Walks::Carried)
}

/// Which kernels the defines are for: the carried ones, or `block_overlap`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Walks {
    Carried,
    Overlapped,
}

impl Walks {
    /// Bytes of local memory a work-group's tile is sized to. block_overlap's work-groups hold
    /// half the carried final pass's: two c64 chunks of 1-channel f32 where the carried pass
    /// holds four (H200 host, 8192², c64, walks loading 8 rows at a time, two rounds: 0.550 /
    /// 0.551 ms at σ 5 against 0.572 / 0.574, 0.664 / 0.665 at σ 10 against 0.684).
    fn local_budget(self) -> usize {
        match self {
            Walks::Carried => 34 * 1024,
            Walks::Overlapped => 17 * 1024,
        }
    }
}

/// Rows block_overlap's walks load before stepping through them. Fewer rows in registers
/// leave room for more work-items at once: H200 host, 8192² 1 ch f32, c64, two rounds, 0.498
/// ms at σ 2, 0.572 at σ 5 and 0.684 at σ 10 with 8 rows, against 0.567, 0.649–0.655 and
/// 1.043–1.051 with 32 (4: 0.608, 0.699, 0.884; 12: 0.546, 0.651–0.658, 0.723–0.729).
const OVERLAP_BATCH: usize = 8;

/// `blocked_defines`, or those of `block_overlap`, which walks one sample column per
/// work-item for pixels of several channels (-DSAMPLES): TILE counts sample columns, whole
/// pixels of them (32, or 96 for 3 channels), and the walks are those of 1-channel f32.
fn layout_defines(
    chunk: usize,
    format: PixelFormat,
    walks: Walks,
) -> (String, [usize; 2], [usize; 2]) {
    let samples = walks == Walks::Overlapped && format.channels > 1;
    let bytes = format.local_bytes();
    let tune = blocked_tune();
    let (tile, column_bytes, stride) = if samples {
        let tile = if format.channels == 3 { 96 } else { 32 };
        (tile, 4, tile + format.channels)
    } else {
        let tile = tune.tile.unwrap_or(if bytes >= 16 { 16 } else { 32 });
        (tile, bytes, tile + 1)
    };
    let group_chunks = tune
        .group
        .unwrap_or((walks.local_budget() / (chunk * stride * column_bytes)).clamp(1, 8));
    // SPLIT must divide the chunk; the partial sums (8 pixels per work-item) stay within
    // 32 KB of local memory.
    let split = tune
        .split
        .filter(|&s| s.is_power_of_two() && s <= 8 && chunk.is_multiple_of(s))
        .unwrap_or(SUMMARY_SPLIT);
    let sum_lanes = tune
        .lanes
        .unwrap_or(SUMMARY_LANES)
        .min((32 * 1024 / (8 * split * bytes)).max(1));
    let mut defines = format!(
        "-DCHUNK={chunk} -DTILE={tile} -DGROUP_CHUNKS={group_chunks} -DCH={} \
         -DSPLIT={split} -DSUM_LANES={sum_lanes}",
        format.channels
    );
    defines.push_str(&walk_defines(format, walks, samples, &tune));
    (defines, [tile, group_chunks], [sum_lanes, split])
}

/// The defines of how the walks load their rows (BATCH, PREFETCH) and read and write their
/// pixels (SAMPLES, IN_U8, OUT_U8, U8_LUT, LINEAR), each starting with a space.
fn walk_defines(format: PixelFormat, walks: Walks, samples: bool, tune: &BlockedTune) -> String {
    // The walks of 1-channel f32 pixels load 32 rows ahead, double-buffered (PREFETCH): on an
    // H100, 16 MP, the final passes went from 0.079 / 0.075 to 0.073 / 0.069 ms per axis; 32
    // rows alone gave 0.077 / 0.073, 8 rows double-buffered 0.091 / 0.087. Wider pixels keep 16
    // rows, double-buffered only where they are read as 8-bit samples: RGBA8's y final went
    // from 0.296-0.301 to 0.275-0.283 ms, while its x final (reading f32 RGBA) lost up to 0.009.
    // block_overlap's walks load OVERLAP_BATCH rows at a time.
    let mut defines = String::new();
    let f32_1 = format == PixelFormat::F32 || samples;
    let batch = tune.batch.or(match walks {
        Walks::Carried => f32_1.then_some(32),
        Walks::Overlapped => Some(OVERLAP_BATCH),
    });
    if let Some(batch) = batch {
        defines.push_str(&format!(" -DBATCH={batch}"));
    }
    // block_overlap's walks load without it: H200 host, 8192² σ 5, c128, three runs, 1 ch
    // f32 0.585 / 0.610 / 0.619 ms against 0.627 / 0.635 / 0.638 with it, 4 f32 planes 2.29
    // against 2.51, RGBA8 in and out 3.54 against 3.79; level at σ 2. The carried final
    // passes keep it (0.684 against 0.718 ms).
    let prefetch = (f32_1 || format.in_u8) && walks == Walks::Carried;
    if tune.prefetch.unwrap_or(prefetch) {
        defines.push_str(" -DPREFETCH");
    }
    for (on, flag) in [
        (samples, " -DSAMPLES"),
        (format.in_u8, " -DIN_U8"),
        (format.out_u8, " -DOUT_U8"),
        (format.in_u8 && format.linear, " -DU8_LUT"),
        (format.out_u8 && format.linear, " -DLINEAR"),
    ] {
        if on {
            defines.push_str(flag);
        }
    }
    defines
}

/// How many neighbouring columns one work-item of the summaries takes, as one column of
/// OpenCL vectors: 1-channel f32 columns side by side are, to that kernel, a float4 (float2)
/// image of a quarter (half) the width with the very same floats in the very same places, so
/// the same summaries come out of wider loads (H100, 16 MP: 0.046 / 0.039 ms per axis with
/// float4 against 0.065 / 0.049 with single columns, both with SPLIT 4–8). 8-bit sources (their
/// conversion depends on the channel count) and multi-channel pixels keep one column each.
/// The carries keep one column per work-item: their walk is a chain, and a quarter of the
/// work-items made them 2.5× slower (0.025 against 0.009–0.010 ms).
pub(super) fn summary_vectors(width: usize, format: PixelFormat) -> usize {
    if format != PixelFormat::F32 {
        return 1;
    }
    let most = blocked_tune()
        .vec
        .filter(|v| [1, 2, 4].contains(v))
        .unwrap_or(SUMMARY_VECTORS);
    [4, 2, 1]
        .into_iter()
        .find(|&v| v <= most && width.is_multiple_of(v))
        .unwrap_or(1)
}

const SUMMARY_VECTORS: usize = 4;

/// Work-items that share one chunk's summary, and columns per work-group of the summaries.
/// One work-item per chunk (SPLIT 1) left the c128 summaries as slow as the walk they replace
/// (0.076 against 0.073 ms per axis, 16 MP on an H100); 4 per chunk gave 0.046 with float4
/// columns. 2, 4 and 8 (32 columns wide) were within a point of each other on RGBA8.
const SUMMARY_SPLIT: usize = 4;
const SUMMARY_LANES: usize = 64;

#[derive(Clone, Copy, Default)]
pub(super) struct BlockedTune {
    tile: Option<usize>,
    group: Option<usize>,
    batch: Option<usize>,
    pub(super) lanes: Option<usize>,
    split: Option<usize>,
    vec: Option<usize>,
    prefetch: Option<bool>,
}

pub(super) fn blocked_tune() -> BlockedTune {
    static TUNE: std::sync::OnceLock<BlockedTune> = std::sync::OnceLock::new();
    *TUNE.get_or_init(|| {
        let mut t = BlockedTune::default();
        let spec = std::env::var("GBLUR_BLOCKED_TUNE").unwrap_or_default();
        for (key, value) in spec.split(',').filter_map(|kv| kv.split_once('=')) {
            let raw: Option<usize> = value.trim().parse().ok();
            let value = raw.filter(|&v| v > 0);
            match key.trim() {
                "tile" => t.tile = value,
                "group" => t.group = value,
                "batch" => t.batch = value,
                "lanes" => t.lanes = value,
                "split" => t.split = value,
                "vec" => t.vec = value,
                "pre" => t.prefetch = raw.map(|v| v > 0),
                _ => {}
            }
        }
        t
    })
}
