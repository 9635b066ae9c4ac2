//! Test hooks for the fault drills in `tests/it/faults.rs` and the strip engine's tests, read
//! from the environment (docs/GUIDE.md, What gblur guarantees) only in a build with the
//! `test-hooks` feature, which the command's test suite turns on, and in the library's own
//! tests: a library, Python or command user's build reads none of them.

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
    *FAULT.get_or_init(|| {
        match hook("GBLUR_FAULT")
            .and_then(|v| v.into_string().ok())
            .as_deref()
        {
            Some("open") => Some(Fault::Open),
            Some("build") => Some(Fault::Build),
            Some("enqueue") => Some(Fault::Enqueue),
            Some("alloc") => Some(Fault::Alloc),
            Some("slow-write") => Some(Fault::SlowWrite),
            Some("decoder-panic") => Some(Fault::DecoderPanic),
            Some("no-libheif") => Some(Fault::NoLibheif),
            Some("no-libwebp") => Some(Fault::NoLibwebp),
            Some("libheif-hevc") => Some(Fault::LibheifHevc),
            _ => None,
        }
    })
}

/// Whether `fault` is the one asked for.
pub fn is(fault: Fault) -> bool {
    injected() == Some(fault)
}

/// A test hook's number, where the variable is set to one (`hook`).
pub fn env_number<N: std::str::FromStr>(var: &str) -> Option<N> {
    hook(var)?.to_str()?.parse().ok()
}

/// A test hook's value: the variable's in a build with the `test-hooks` feature or in the
/// library's own tests; None in every other build.
pub fn hook(var: &str) -> Option<std::ffi::OsString> {
    match cfg!(any(test, feature = "test-hooks")) {
        true => std::env::var_os(var),
        false => None,
    }
}
