//! What a streamed job reports when it is done: the note and passes that set each stage's
//! busy time against the wall, with what the blur held.

use super::gpu_bands::BandPlan;
use crate::cpu::banded::StripPlan;
use crate::report::{Pass, Stage};
use std::time::{Duration, Instant};

/// What the blur stage held: the Rust path's window, or the device's bands, with their bytes.
pub(super) enum Held {
    Window {
        plan: StripPlan,
        bytes: u64,
    },
    /// The exact two-pass method's window and stored states (those in memory), the filter's
    /// reach, the first pass's wall in ms, and whether the states went to a temporary file.
    TwoPass {
        plan: StripPlan,
        bytes: u64,
        reach: usize,
        first_ms: f64,
        spilled: bool,
    },
    /// And the process's resident bytes with the device open, before the bands.
    Bands {
        plan: BandPlan,
        bytes: u64,
        resident: u64,
    },
}

/// The time each stage spent working, not waiting.
pub(super) struct Busy {
    pub decode: Duration,
    pub blur_ms: f64,
    pub encode: Duration,
}

/// The streamed job's passes (each stage's busy time, the blur's passes between) and the note
/// that sets them against the wall since `wall`, with what the blur held.
pub(super) fn report(
    passes: Vec<Pass>,
    Busy {
        decode: decode_busy,
        blur_ms: blur_busy,
        encode: encode_busy,
    }: Busy,
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
        Held::Window { plan, bytes } => format!(
            "{} rows per strip and {} rows of reach below it; window and scratch {} MiB",
            plan.strip,
            plan.reach,
            mib(bytes)
        ),
        Held::TwoPass {
            plan,
            bytes,
            reach,
            first_ms,
            spilled,
        } => format!(
            "exact two-pass method (a window for the filter's reach of {reach} rows is over the budget): pass 1 read the image for the column states every {} rows in {first_ms:.0} ms{}; pass 2's window, scratch{} {} MiB",
            plan.strip,
            if spilled { ", kept in a temporary file beside the output" } else { "" },
            if spilled { "" } else { " and states" },
            mib(bytes)
        ),
        Held::Bands {
            plan,
            bytes,
            resident,
        } => format!(
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
