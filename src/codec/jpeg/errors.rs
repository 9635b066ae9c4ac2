//! libjpeg's errors and warnings, turned into Rust errors: its error manager calls back into
//! Rust, which unwinds through the C code (built with unwinding) to `run`'s guard. The strict
//! manager makes every warning of damaged data an error; the tolerant one keeps them for
//! `libjpeg::recover` to report.

use crate::codec::guard;
use mozjpeg_sys::{jpeg_common_struct, jpeg_error_mgr};
use std::cell::RefCell;
use std::io;
use std::os::raw::c_int;

/// Runs libjpeg calls whose errors unwind (`strict_errors`, `tolerant_errors`); what went
/// wrong, on one line.
pub fn run<R>(calls: impl FnOnce() -> io::Result<R>) -> Result<R, String> {
    match guard::catch(calls) {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err("the image data ends early".into())
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(message) => Err(message),
    }
}

/// An error manager whose errors unwind to `run`'s guard, as do the warnings of damaged data
/// (a file cut short, a corrupt segment), which libjpeg would otherwise paper over with gray
/// rows. Only bytes skipped between markers pass, as the whole-image decoder lets them.
pub fn strict_errors() -> jpeg_error_mgr {
    error_manager(strict_warning)
}

/// An error manager whose errors unwind to `run`'s guard and whose warnings are kept for
/// `recover` to report.
pub(super) fn tolerant_errors() -> jpeg_error_mgr {
    error_manager(kept_warning)
}

fn error_manager(warning: extern "C-unwind" fn(&mut jpeg_common_struct, c_int)) -> jpeg_error_mgr {
    // SAFETY: `jpeg_std_error` initialises every field of the zeroed struct.
    let mut err: jpeg_error_mgr = unsafe { std::mem::zeroed() };
    unsafe { mozjpeg_sys::jpeg_std_error(&mut err) };
    err.error_exit = Some(fail);
    err.emit_message = Some(warning);
    err
}

extern "C-unwind" fn fail(cinfo: &mut jpeg_common_struct) {
    std::panic::resume_unwind(Box::new(message(cinfo)));
}

extern "C-unwind" fn strict_warning(cinfo: &mut jpeg_common_struct, level: c_int) {
    // SAFETY: libjpeg calls this with its error manager set.
    let code = unsafe { (*cinfo.err).msg_code };
    if level < 0 && code != mozjpeg_sys::JWRN_EXTRANEOUS_DATA as c_int {
        fail(cinfo);
    }
}

thread_local! {
    /// The warnings of the `recover` running on this thread.
    pub(super) static WARNINGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

extern "C-unwind" fn kept_warning(cinfo: &mut jpeg_common_struct, level: c_int) {
    if level < 0 {
        let text = message(cinfo);
        WARNINGS.with(|w| w.borrow_mut().push(text));
    }
}

/// libjpeg's text for its current message.
fn message(cinfo: &mut jpeg_common_struct) -> String {
    // libjpeg's JMSG_LENGTH_MAX.
    let mut buffer = [0u8; 200];
    // SAFETY: libjpeg calls the handlers with its error manager set; `format_message` writes
    // at most 200 bytes, NUL-terminated, into the buffer (which its binding declares shared).
    unsafe {
        if let Some(format) = (*cinfo.err).format_message {
            let format: unsafe extern "C-unwind" fn(&mut jpeg_common_struct, *mut u8) =
                std::mem::transmute(format);
            format(cinfo, buffer.as_mut_ptr());
        }
    }
    let text = buffer.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(text).into_owned()
}
