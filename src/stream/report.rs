//! What a streamed job shows its user: the rows' progress bar while it runs, and the note and
//! passes that set each stage's busy time against the wall when it is done.

use super::env_number;
use super::gpu_bands::BandPlan;
use crate::cpu::banded::StripPlan;
use crate::report::{Pass, Stage};
use std::time::{Duration, Instant};

/// A job shorter than this shows no progress bar.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// Test hook: `GBLUR_PROGRESS_AFTER_MS=N` shows the bar after N ms instead.
const PROGRESS_AFTER_VAR: &str = "GBLUR_PROGRESS_AFTER_MS";

/// The progress bar of one long image on stderr: rows blurred and handed to the encoder, MP/s
/// and the time left. It stays hidden until the job has run `PROGRESS_AFTER` (so a short job
/// prints nothing), and indicatif hides it where stderr is not a terminal.
pub(super) struct RowsBar {
    pub(super) bar: indicatif::ProgressBar,
    /// When the bar is drawn; None: never (`--quiet`).
    show_at: Option<Instant>,
    /// Samples per row.
    pub(super) stride: usize,
}

impl RowsBar {
    /// A bar for `rows` rows of `width` pixels (`stride` samples): the image's height, or
    /// twice it where the exact two-pass method reads the image twice.
    pub(super) fn new((width, rows): (u32, u64), stride: usize, show: bool) -> RowsBar {
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(rows),
            indicatif::ProgressDrawTarget::hidden(),
        );
        let megapixels_per_row = width as f64 / 1e6;
        let style = indicatif::ProgressStyle::with_template(
            "{elapsed_precise} [{bar:32}] {pos}/{len} rows  {rate}  {eta} left",
        )
        .expect("valid template")
        .progress_chars("=> ")
        .with_key(
            "rate",
            move |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} MP/s", state.per_sec() * megapixels_per_row);
            },
        );
        bar.set_style(style);
        let after = env_number(PROGRESS_AFTER_VAR).map_or(PROGRESS_AFTER, Duration::from_millis);
        RowsBar {
            bar,
            show_at: show.then(|| Instant::now() + after),
            stride,
        }
    }

    /// Counts the rows in `samples`, and draws the bar from its time on.
    pub(super) fn advance(&mut self, samples: usize) {
        if self.show_at.is_some_and(|at| Instant::now() >= at) {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.show_at = None;
        }
        self.bar.inc((samples / self.stride.max(1)) as u64);
    }
}

/// What the blur stage held: the Rust path's window, or the device's bands, with their bytes.
pub(super) enum Held {
    Window(StripPlan, u64),
    /// The exact two-pass method's window and stored states (those in memory), the filter's
    /// reach, the first pass's wall in ms, and whether the states went to a temporary file.
    TwoPass(StripPlan, u64, usize, f64, bool),
    /// And the process's resident bytes with the device open, before the bands.
    Bands(BandPlan, u64, u64),
}

/// The streamed job's passes (each stage's busy time, the blur's passes between) and the note
/// that sets them against the wall since `wall`, with what the blur held.
pub(super) fn report(
    passes: Vec<Pass>,
    (decode_busy, blur_busy, encode_busy): (Duration, f64, Duration),
    held: Held,
    wall: Instant,
) -> (Vec<Pass>, String) {
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut all = vec![Pass::host_ms(
        Stage::Decode,
        "decode (thread, busy)",
        ms(decode_busy),
    )];
    all.extend(passes);
    all.push(Pass::host_ms(
        Stage::Encode,
        "encode (thread, busy)",
        ms(encode_busy),
    ));
    let mib = |b: u64| b.div_ceil(1 << 20);
    let held = match held {
        Held::Window(plan, bytes) => format!(
            "{} rows per strip and {} rows of reach below it; window and scratch {} MiB",
            plan.strip,
            plan.reach,
            mib(bytes)
        ),
        Held::TwoPass(plan, bytes, reach, first_ms, spilled) => format!(
            "exact two-pass method (a window for the filter's reach of {reach} rows is over the budget): pass 1 read the image for the column states every {} rows in {first_ms:.0} ms{}; pass 2's window, scratch{} {} MiB",
            plan.strip,
            if spilled { ", kept in a temporary file beside the output" } else { "" },
            if spilled { "" } else { " and states" },
            mib(bytes)
        ),
        Held::Bands(plan, bytes, resident) => format!(
            "device bands of {} rows and {} rows of reach each side; rows held {} MiB, beside {} MiB resident with the device open",
            plan.band,
            plan.reach,
            mib(bytes),
            mib(resident)
        ),
    };
    let note = format!(
        "strip engine: {held}; stages overlap: wall {wall_ms:.0} ms, busy decode {:.0} ms, blur {blur_busy:.0} ms, encode {:.0} ms",
        ms(decode_busy),
        ms(encode_busy),
    );
    (all, note)
}
