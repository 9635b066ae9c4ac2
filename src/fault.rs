//! Test hooks for the fault drills in `tests/it/faults.rs`, read once from the environment and
//! documented in docs/GUIDE.md (What gblur guarantees). Unset, as always in normal use, each
//! costs one cached lookup.

use std::sync::OnceLock;

/// A fault to simulate: `GBLUR_FAULT` = `build`, `enqueue` or `alloc` makes every kernel
/// build, kernel enqueue or buffer allocation fail the way a driver reports it; `slow-write`
/// holds every write once its temporary file exists (`interrupt::writing`: 5 s, or until the
/// file `GBLUR_WRITE_GO` names exists), so that a Ctrl-C or another writer can land then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The device's context cannot be created (`open`).
    Open,
    Build,
    Enqueue,
    Alloc,
    SlowWrite,
    /// A decoder panics, as a dependency's assertion would (the decoder guard's drill).
    DecoderPanic,
    /// libheif is taken to be missing, as on a machine without it (`no-libheif`).
    NoLibheif,
    /// libwebp is taken to be missing (`no-libwebp`).
    NoLibwebp,
    /// libheif decodes HEVC with its own decoder, on one core (`libheif-hevc`), as where
    /// libde265 does not load for gblur's plugin.
    LibheifHevc,
}

/// The fault `GBLUR_FAULT` asks for, if any.
pub fn injected() -> Option<Fault> {
    static FAULT: OnceLock<Option<Fault>> = OnceLock::new();
    *FAULT.get_or_init(|| match std::env::var("GBLUR_FAULT").as_deref() {
        Ok("open") => Some(Fault::Open),
        Ok("build") => Some(Fault::Build),
        Ok("enqueue") => Some(Fault::Enqueue),
        Ok("alloc") => Some(Fault::Alloc),
        Ok("slow-write") => Some(Fault::SlowWrite),
        Ok("decoder-panic") => Some(Fault::DecoderPanic),
        Ok("no-libheif") => Some(Fault::NoLibheif),
        Ok("no-libwebp") => Some(Fault::NoLibwebp),
        Ok("libheif-hevc") => Some(Fault::LibheifHevc),
        _ => None,
    })
}

/// Whether `fault` is the one asked for.
pub fn is(fault: Fault) -> bool {
    injected() == Some(fault)
}

/// A test hook's number, where the variable is set to one.
pub fn env_number<N: std::str::FromStr>(var: &str) -> Option<N> {
    std::env::var(var).ok().and_then(|v| v.parse().ok())
}
