//! Decoders and encoders from other crates run behind a guard: a panic inside one (an
//! assertion on a malformed file, an arithmetic overflow) becomes a one-line error naming the
//! file, never the end of the process. While a guard runs on a thread, the panic hook stays
//! quiet for that thread (no message, no backtrace on stderr); everywhere else it is the hook
//! the program had.

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// How many guards are running on this thread.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

/// Installs, once per process, a panic hook that says nothing for a panic under a guard and
/// hands every other panic to the hook that was there before.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Marks the current thread, for good, as one whose panics a guard on another thread reports
/// (a decoder's worker pool, whose panics reach the guarded caller): the hook says nothing.
#[cfg(feature = "jxl")]
pub fn quiet_thread() {
    install_hook();
    GUARDED.with(|g| g.set(g.get() + 1));
}

/// Runs `f`; a panic inside it is returned as its message.
pub fn catch<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    GUARDED.with(|g| g.set(g.get() + 1));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    GUARDED.with(|g| g.set(g.get() - 1));
    result.map_err(|payload| message(payload.as_ref()))
}

/// What a panic said, on one line.
pub fn message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("no message");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message_and_the_thread_goes_on() {
        assert_eq!(catch(|| 7), Ok(7));
        let caught = catch(|| -> u8 { panic!("assertion failed:\n  a >= b") });
        assert_eq!(caught, Err("assertion failed: a >= b".to_string()));
        let nested = catch(|| catch(|| -> u8 { panic!("inner") }));
        assert_eq!(nested, Ok(Err("inner".to_string())));
        assert_eq!(GUARDED.with(Cell::get), 0);
    }
}
