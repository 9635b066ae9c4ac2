//! Which way the Rust path's window runs a job: sliding with the filter's reach below each
//! strip where that fits the budget, else the exact two-pass method with its states in memory,
//! else with them in a temporary file, else a one-line refusal that gives each one's size.

use super::budget::{blur_share, least_budget_mib};
use super::{StripError, StripJob, TWO_PASS_VAR};
use crate::cpu::banded::{spilled_plan, two_pass_bytes, two_pass_plan, StripPlan};
use crate::fault::env_number;

/// How the Rust path's window starts each strip's anticausal column filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Vertical {
    /// From the window's last row, `reach` rows below the strip.
    Window,
    /// From the exact two-pass method's stored states, in a temporary file where `spill`.
    TwoPass { spill: bool },
}

/// The Rust path's plan for an image `height` rows of `row_samples` samples of `bytes` each
/// and a filter that reaches `reach` rows, its memory and its method, within the window's
/// share of `job`'s budget: what the process (its code, and a device's driver where one is
/// open) and `beside` (the codecs and the rows in flight, `budget::beside_window`) leave of
/// it. The
/// sliding window where it fits (its strips shortened to fit, down to 16 rows), else the
/// exact two-pass method with its states in memory where that fits, else with them in a
/// temporary file where its window fits, else an error that says what each would need.
/// `forced` strips (`GBLUR_STRIP_ROWS`) run whatever they need; the test hook
/// `GBLUR_TWO_PASS=1` (states in memory) or `2` (in a file) forces the two-pass method.
pub(super) fn window_plan(
    job: &StripJob,
    (row_samples, bytes): (usize, usize),
    height: usize,
    reach: usize,
    beside: u64,
    forced: Option<usize>,
) -> Result<(StripPlan, u64, Vertical), StripError> {
    // Measured once: the plans and the refusal must agree on the share.
    let resident = crate::memory::resident_bytes();
    let budget = blur_share(job, resident, beside);
    let window = StripPlan::new((row_samples, bytes), reach, budget, forced);
    let needs = window.bytes(row_samples, bytes, height);
    let asked = env_number::<u8>(TWO_PASS_VAR);
    if asked.is_none() && (needs <= budget || forced.is_some()) {
        return Ok((window, needs, Vertical::Window));
    }
    let exact = two_pass_plan((row_samples, bytes), height, forced);
    let exact_needs = two_pass_bytes(exact, (row_samples, bytes), height);
    let spilled = |plan: StripPlan| {
        let needs = plan.bytes(row_samples, bytes, height);
        Ok((plan, needs, Vertical::TwoPass { spill: true }))
    };
    match asked {
        Some(2) => return spilled(exact),
        Some(_) => return Ok((exact, exact_needs, Vertical::TwoPass { spill: false })),
        None if exact_needs <= budget || forced.is_some() => {
            return Ok((exact, exact_needs, Vertical::TwoPass { spill: false }))
        }
        None => {}
    }
    if let Some(plan) = spilled_plan((row_samples, bytes), height, budget) {
        return spilled(plan);
    }
    let mib = |b: u64| b.div_ceil(1 << 20);
    let least = StripPlan {
        strip: 16,
        reach: 1,
    }
    .bytes(row_samples, bytes, height);
    Err(StripError::OverBudget {
        path: job.input.into(),
        detail: format!(
            "sigma {} needs a window of {} rows in {} MiB (the filter reaches {} rows), and the exact two-pass method {} MiB with its states in memory or {} MiB with them in a file, over the {} it may take (--max-memory less a twentieth or 3 MiB, the {} MiB the process holds and the {} MiB the codecs and the rows in flight take): this job needs --max-memory {} or more",
            job.sigma_y,
            (window.strip + window.reach).min(height),
            mib(needs),
            window.reach,
            mib(exact_needs),
            mib(least),
            match budget >= 1 << 20 {
                true => format!("{} MiB", budget >> 20),
                false => format!("{} KiB", budget >> 10),
            },
            resident.div_ceil(1 << 20),
            mib(beside),
            least_budget_mib(resident, beside, least)
        ),
    })
}
