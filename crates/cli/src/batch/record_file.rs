//! The batch's own record files inside the folders it works in (the settings logs in OUT_DIR,
//! the in-place journals in IN_DIR), opened as regular files only. A symbolic link there is
//! not followed: whoever can write the folder could point it at a file outside it, which the
//! batch would then append to. A named pipe or a device never blocks the open or a read (the
//! open does not wait, and what it opened is checked before anything is read or written).
//! Anything but a regular file is refused with an error naming it, before the batch touches a
//! file when it is there at the start; it is not replaced, as only its owner knows what it is.

use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens the record `path` to read.
pub fn open_read(path: &Path) -> io::Result<File> {
    open_checked(path, OpenOptions::new().read(true))
}

/// Opens the record `path` to append to, creating it where there is none.
pub fn open_append(path: &Path) -> io::Result<File> {
    open_checked(path, OpenOptions::new().create(true).append(true))
}

/// Checks that whatever is at `path` now is a regular file or nothing, so that a record file
/// opened later (`open_append`) is refused before the batch starts rather than halfway.
pub fn check(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => Err(refused(path, meta.file_type())),
        _ => Ok(()),
    }
}

/// Opens `path` with `options`, not following a symbolic link and never waiting on a pipe,
/// and checks that what it opened is a regular file.
fn open_checked(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let opened = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        // ELOOP (a link), ENXIO (a pipe no one reads), ...: say what is there where it is
        // not a file.
        Err(e) => {
            return Err(match std::fs::symlink_metadata(path) {
                Ok(meta) if !meta.file_type().is_file() => refused(path, meta.file_type()),
                _ => e,
            })
        }
    };
    let kind = file.metadata()?.file_type();
    match kind.is_file() {
        true => Ok(file),
        false => Err(refused(path, kind)),
    }
}

/// The error for a record path that holds `kind`, not a regular file.
fn refused(path: &Path, kind: FileType) -> io::Error {
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a device"
    };
    io::Error::other(format!(
        "{}: is {what}, not a regular file; gblur keeps its records in regular files only \
         (remove it, and run again)",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_pipes_are_refused_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"kept").unwrap();
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = open_append(&link).unwrap_err().to_string();
        assert!(e.contains("link.log: is a symbolic link"), "{e}");
        assert!(open_read(&link).is_err());
        assert!(check(&link).is_err());
        assert_eq!(std::fs::read(&outside).unwrap(), b"kept");

        let pipe = dir.path().join("pipe.log");
        let name = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
        let e = open_read(&pipe).unwrap_err().to_string();
        assert!(e.contains("pipe.log: is a named pipe"), "{e}");
        let e = open_append(&pipe).unwrap_err().to_string();
        assert!(e.contains("pipe.log: is a named pipe"), "{e}");

        let file = dir.path().join("file.log");
        check(&file).unwrap();
        open_append(&file).unwrap();
        open_read(&file).unwrap();
        check(&file).unwrap();
    }
}
