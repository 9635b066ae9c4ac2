//! Every progress bar gblur draws, in one look: elapsed time, the bar, what is done of what,
//! a rounded rate and the time left. A bar shows on stderr only where stderr is a terminal
//! (indicatif's check), never with `--quiet`, and, for one image, only once the job has run
//! a second, so a quick job prints nothing but its report. Without the `progress-bars`
//! feature nothing is drawn. A program that draws its own (a server, a notebook) is told the
//! same steps through a callback (`OnProgress`), with or without the feature.

use std::sync::Arc;
use std::time::Duration;

/// How far one job has come, as `OnProgress` is told it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// What runs: a stage of the whole-image path (`decode`, `blur`, `encode and write`), the
    /// strip engine's `rows`, or `done` once the job has written its output.
    pub stage: &'static str,
    /// Steps done of `total`: stages finished, rows blurred and handed to the encoder (twice
    /// the image's height where the exact two-pass method reads it twice), or 1 of 1.
    pub done: u64,
    /// The steps of this stage.
    pub total: u64,
}

/// A callback told each step of a job's progress, on whichever thread took it. Steps come in
/// order; the last one of a job that succeeded is `done`.
#[derive(Clone)]
pub struct OnProgress(Arc<dyn Fn(Progress) + Send + Sync>);

impl OnProgress {
    /// The callback `tell`.
    pub fn new(tell: impl Fn(Progress) + Send + Sync + 'static) -> OnProgress {
        OnProgress(Arc::new(tell))
    }

    /// Tells the callback `progress`.
    pub fn tell(&self, progress: Progress) {
        (self.0)(progress)
    }

    /// Tells the callback that the job is done.
    pub fn done(&self) {
        self.tell(Progress {
            stage: "done",
            done: 1,
            total: 1,
        })
    }
}

impl std::fmt::Debug for OnProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnProgress(..)")
    }
}

/// A job shorter than this shows no progress bar.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Test hook: `GBLUR_PROGRESS_AFTER_MS=N` shows a single image's bar after N ms instead.
const SHOW_AFTER_VAR: &str = "GBLUR_PROGRESS_AFTER_MS";

/// When one image's bar is drawn.
fn show_after() -> Duration {
    crate::fault::env_number(SHOW_AFTER_VAR).map_or(SHOW_AFTER, Duration::from_millis)
}

/// What a sweep of `gblur bench` counts (no unit: its steps are measurements).
// `gblur bench` alone uses it (crates/bench), through the internals.
#[cfg(feature = "unstable-internals")]
pub const SWEEP: &str = "";
/// What a batch counts.
pub const FILES: &str = "files";

#[cfg(feature = "progress-bars")]
mod drawn {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
    use std::fmt::Write as _;

    /// The one layout: `0:00:12 [=====>    ] 31/120 files  4.2 files/s  21s left  msg`.
    /// `rate` writes the rate from the steps per second; without one (a bar of stages, whose
    /// steps are not alike) there is no rate and no time left.
    pub fn style(
        unit: &str,
        rate: Option<std::sync::Arc<dyn Fn(f64) -> String + Send + Sync>>,
    ) -> ProgressStyle {
        let counted = match unit {
            "" => "{pos}/{len}".to_string(),
            unit => format!("{{pos}}/{{len}} {unit}"),
        };
        let timed = if rate.is_some() {
            "  {rate}  {eta} left"
        } else {
            ""
        };
        let template = format!("{{elapsed_precise}} [{{bar:32}}] {counted}{timed}  {{msg}}");
        let style = ProgressStyle::with_template(&template)
            .expect("valid template")
            .progress_chars("=> ");
        match rate {
            Some(rate) => style.with_key(
                "rate",
                move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&rate(s.per_sec()));
                },
            ),
            None => style,
        }
    }

    /// `per_second` rounded to what a person reads: 3 significant digits at most.
    pub fn rounded(per_second: f64, unit: &str) -> String {
        let mut s = String::new();
        let _ = match per_second {
            r if r >= 100.0 => write!(s, "{r:.0} {unit}/s"),
            r if r >= 10.0 => write!(s, "{r:.1} {unit}/s"),
            r => write!(s, "{r:.2} {unit}/s"),
        };
        s
    }

    /// A bar for `total` steps, drawn from the start (a batch, a benchmark sweep).
    pub fn counting(total: usize, quiet: bool, unit: &'static str) -> ProgressBar {
        if quiet {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::new(total as u64);
        let rate_unit = if unit.is_empty() { "steps" } else { unit };
        bar.set_style(style(
            unit,
            Some(std::sync::Arc::new(move |r| rounded(r, rate_unit))),
        ));
        bar
    }

    /// A bar that stays hidden until it is revealed.
    pub fn hidden(total: u64, style: ProgressStyle) -> ProgressBar {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        bar.set_style(style);
        bar
    }
}

#[cfg(feature = "progress-bars")]
pub use drawn::counting as progress_bar;

/// The progress of one long image through the strip engine: rows blurred and handed to the
/// encoder, MP/s and the time left, drawn once the job has run a second.
pub struct RowsBar {
    #[cfg(feature = "progress-bars")]
    bar: indicatif::ProgressBar,
    /// When the bar is drawn; None: never (`--quiet`), or drawn already.
    show_at: Option<std::time::Instant>,
    /// Samples per row.
    pub stride: usize,
    /// The program's callback, the rows it has been told of, and the rows in all.
    on: Option<(OnProgress, u64, u64)>,
}

impl RowsBar {
    /// A bar for `rows` rows of `width` pixels (`stride` samples): the image's height, or
    /// twice it where the exact two-pass method reads the image twice.
    pub fn new(
        (width, rows): (u32, u64),
        stride: usize,
        show: bool,
        on: Option<OnProgress>,
    ) -> RowsBar {
        #[cfg(not(feature = "progress-bars"))]
        let _ = (width, rows);
        RowsBar {
            #[cfg(feature = "progress-bars")]
            bar: {
                let megapixels_per_row = width as f64 / 1e6;
                let rate = move |r: f64| drawn::rounded(r * megapixels_per_row, "MP");
                let style = drawn::style("rows", Some(std::sync::Arc::new(rate)));
                drawn::hidden(rows, style)
            },
            show_at: show.then(|| std::time::Instant::now() + show_after()),
            stride,
            on: on.map(|on| (on, 0, rows)),
        }
    }

    /// Counts the rows in `samples`, and draws the bar from its time on.
    pub fn advance(&mut self, samples: usize) {
        let rows = (samples / self.stride.max(1)) as u64;
        if let Some((on, done, total)) = &mut self.on {
            *done += rows;
            on.tell(Progress {
                stage: "rows",
                done: *done,
                total: *total,
            });
        }
        #[cfg(feature = "progress-bars")]
        {
            if self
                .show_at
                .is_some_and(|at| std::time::Instant::now() >= at)
            {
                self.bar
                    .set_draw_target(indicatif::ProgressDrawTarget::stderr());
                self.show_at = None;
            }
            self.bar.inc(rows);
        }
        #[cfg(not(feature = "progress-bars"))]
        let _ = (rows, self.show_at);
    }

    /// Clears the bar at the end of the job.
    pub fn finish(&self) {
        #[cfg(feature = "progress-bars")]
        self.bar.finish_and_clear();
    }
}

/// The progress of one image on the whole-image path, stage by stage (decode, blur, encode
/// and write): these give no finer steps, so the bar moves a stage at a time and says which
/// is running. It is drawn from a second into the job, by a timer thread, since a stage can
/// take longer than that with nothing to count.
pub struct StageBar {
    #[cfg(feature = "progress-bars")]
    bar: indicatif::ProgressBar,
    /// Dropped to stop the timer; joined so that no draw follows the clear.
    #[cfg(feature = "progress-bars")]
    timer: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
    stages: &'static [&'static str],
    /// The program's callback.
    on: Option<OnProgress>,
}

impl StageBar {
    /// A bar over `stages`, shown from a second on where `show`, each stage told to `on`.
    pub fn new(stages: &'static [&'static str], show: bool, on: Option<OnProgress>) -> StageBar {
        #[cfg(feature = "progress-bars")]
        {
            let style = drawn::style("stages", None);
            let bar = drawn::hidden(stages.len() as u64, style);
            let after = show_after();
            let reveal = |bar: &indicatif::ProgressBar| {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                bar.tick();
                bar.enable_steady_tick(std::time::Duration::from_millis(250));
            };
            let timer = match show {
                false => None,
                // No delay: drawn here, so that a job that ends before a timer thread would
                // have run still shows it.
                true if after.is_zero() => {
                    reveal(&bar);
                    None
                }
                true => {
                    let (stop, stopped) = std::sync::mpsc::channel::<()>();
                    let shown = bar.clone();
                    let thread = std::thread::spawn(move || {
                        if stopped.recv_timeout(after)
                            == Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                        {
                            reveal(&shown);
                        }
                    });
                    Some((stop, thread))
                }
            };
            StageBar {
                bar,
                timer,
                stages,
                on,
            }
        }
        #[cfg(not(feature = "progress-bars"))]
        {
            let _ = show;
            StageBar { stages, on }
        }
    }

    /// Marks `stage` (one of the bar's) as running.
    pub fn stage(&self, stage: &str) {
        let at = self.stages.iter().position(|s| *s == stage).unwrap_or(0);
        if let Some(on) = &self.on {
            on.tell(Progress {
                stage: self.stages[at],
                done: at as u64,
                total: self.stages.len() as u64,
            });
        }
        #[cfg(feature = "progress-bars")]
        {
            self.bar.set_position(at as u64);
            self.bar.set_message(stage.to_string());
        }
        #[cfg(not(feature = "progress-bars"))]
        let _ = at;
    }
}

impl Drop for StageBar {
    fn drop(&mut self) {
        #[cfg(feature = "progress-bars")]
        {
            if let Some((stop, thread)) = self.timer.take() {
                drop(stop);
                let _ = thread.join();
            }
            self.bar.finish_and_clear();
        }
    }
}

#[cfg(all(test, feature = "progress-bars"))]
mod tests {
    #[test]
    fn rates_are_rounded_to_three_digits_at_most() {
        assert_eq!(super::drawn::rounded(17.6478, "files"), "17.6 files/s");
        assert_eq!(super::drawn::rounded(1234.5, "MP"), "1234 MP/s");
        assert_eq!(super::drawn::rounded(0.4567, "files"), "0.46 files/s");
    }
}
