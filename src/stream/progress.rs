//! The rows' progress bar of one long streamed image.

use super::env_number;
use std::time::{Duration, Instant};

/// A job shorter than this shows no progress bar.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// Test hook: `GBLUR_PROGRESS_AFTER_MS=N` shows the bar after N ms instead.
const PROGRESS_AFTER_VAR: &str = "GBLUR_PROGRESS_AFTER_MS";

/// The progress bar of one long image on stderr: rows blurred and handed to the encoder, MP/s
/// and the time left. It stays hidden until the job has run `PROGRESS_AFTER` (so a short job
/// prints nothing), and indicatif hides it where stderr is not a terminal.
pub(super) struct RowsBar {
    /// Drawn by the command line only (its `cli` feature); a library job counts nothing.
    #[cfg(feature = "cli")]
    bar: indicatif::ProgressBar,
    /// When the bar is drawn; None: never (`--quiet`).
    show_at: Option<Instant>,
    /// Samples per row.
    pub(super) stride: usize,
}

impl RowsBar {
    /// A bar for `rows` rows of `width` pixels (`stride` samples): the image's height, or
    /// twice it where the exact two-pass method reads the image twice.
    #[cfg(not(feature = "cli"))]
    pub(super) fn new(_: (u32, u64), stride: usize, _show: bool) -> RowsBar {
        RowsBar {
            show_at: None,
            stride,
        }
    }

    #[cfg(feature = "cli")]
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
    #[cfg(not(feature = "cli"))]
    pub(super) fn advance(&mut self, _samples: usize) {
        let _ = self.show_at;
    }

    /// Clears the bar at the end of the job.
    #[cfg(not(feature = "cli"))]
    pub(super) fn finish(&self) {}

    /// Clears the bar at the end of the job.
    #[cfg(feature = "cli")]
    pub(super) fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Counts the rows in `samples`, and draws the bar from its time on.
    #[cfg(feature = "cli")]
    pub(super) fn advance(&mut self, samples: usize) {
        if self.show_at.is_some_and(|at| Instant::now() >= at) {
            self.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
            self.show_at = None;
        }
        self.bar.inc((samples / self.stride.max(1)) as u64);
    }
}
