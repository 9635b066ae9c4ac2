//! Where an output goes: checked before any work (a format gblur writes, an existing folder,
//! a regular file or nothing, never the input), then written through a temporary file in the
//! same folder that is synced and renamed over it, so a failure never leaves a partial file
//! or destroys an existing one. What the rename may replace is the caller's choice
//! (`Replace`).

use super::{writable, ImageIoError};
use image::ImageFormat;
use std::io::{self, Write};
use std::path::Path;

/// Checks OUT before any work is done: a format gblur writes (`format`, else OUT's
/// extension's), an existing folder, not IN.
pub fn check_output(
    input: &Path,
    output: &Path,
    format: Option<ImageFormat>,
) -> Result<ImageFormat, ImageIoError> {
    let bad = |detail: String| ImageIoError::BadOutput {
        path: output.into(),
        detail,
    };
    let extension = || output.extension().map(|e| e.to_string_lossy().into_owned());
    let heic = extension().is_some_and(|e| super::is_heic_name(&e));
    if heic && format.is_some() {
        // --format avif (or an avif: prefix) names AV1; the name would make it HEVC.
        return Err(bad("is named .heic, and --format (or a prefix) asks for AVIF: name it .avif, or leave the format out for HEIC".into()));
    }
    let format = format
        .or_else(|| ImageFormat::from_path(output).ok())
        .or_else(|| heic.then_some(super::heif::HEIF))
        .filter(|f| !writable(*f).is_empty())
        .ok_or_else(|| match extension().and_then(|e| super::unwritten_name(&e)) {
            Some(why) => bad(why),
            None => bad("unknown or unwritable output format: use .png, .jpg, .tif, .webp, .avif, .heic, .bmp, .tga, .gif, .qoi, .exr or .hdr".into()),
        })?;
    if format == super::heif::HEIF {
        let coding = super::heif::Coding::for_path(output);
        let name = if coding == super::heif::Coding::Hevc {
            "HEIC"
        } else {
            "AVIF"
        };
        super::heif::encoder(coding).map_err(|why| bad(format!("{name} output: {why}")))?;
    }
    let parent = match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(bad(format!(
            "the output folder {} does not exist",
            parent.display()
        )));
    }
    if let Some(why) = not_a_file(output) {
        return Err(bad(why));
    }
    if let (Ok(a), Ok(b)) = (input.canonicalize(), output.canonicalize()) {
        if a == b {
            return Err(bad(
                "is the input file; gblur never overwrites its input".into()
            ));
        }
    }
    Ok(format)
}

/// Writes `bytes` to `path`: stdout for `-` (`write_stdout`), else a file, atomically
/// (`write_atomic`, replacing what `replace` lets it).
pub fn write_output(path: &Path, bytes: &[u8], replace: Replace) -> Result<(), ImageIoError> {
    match super::is_stdio(path) {
        true => write_stdout(bytes),
        false => write_atomic(path, bytes, replace),
    }
}

/// Writes `bytes` to stdout in one piece, and flushes it.
pub fn write_stdout(bytes: &[u8]) -> Result<(), ImageIoError> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(|cause| ImageIoError::Write {
            path: "stdout".into(),
            cause,
        })
}

/// Why `path` is not somewhere gblur writes a file: it exists and is a folder, a device, a
/// named pipe or a socket (a symbolic link is replaced, as `mv` replaces it). `-` stands for
/// stdout and is never a path.
pub fn not_a_file(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    if kind.is_file() || kind.is_symlink() {
        return None;
    }
    Some(match kind.is_dir() {
        true => "is a directory".into(),
        false => "is not a regular file (a device, named pipe or socket); gblur writes files \
                  only (- writes stdout)"
            .into(),
    })
}

/// What the final rename may do to a file already at the output path.
#[derive(Clone, Copy)]
pub enum Replace<'a> {
    /// Replace it (the main command, as cp and vips do; `batch --overwrite`).
    Any,
    /// Leave it: a file that appeared since the batch was planned is another writer's
    /// (`batch` without `--overwrite`), and the main command's `--no-clobber` keeps whatever
    /// is there; the write fails with `ImageIoError::Appeared`.
    Never,
    /// Replace it, once the new file (synced, not yet renamed) is recorded by the callback:
    /// an in-place batch's journal, which must know a file is blurred before it is.
    Recorded(&'a (dyn Fn(&std::fs::Metadata) -> io::Result<()> + Sync)),
}

impl std::fmt::Debug for Replace<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Replace::Any => "Any",
            Replace::Never => "Never",
            Replace::Recorded(_) => "Recorded",
        })
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, keeping
/// the permissions of the file it replaces (or 0644 for a new one).
pub fn write_atomic(path: &Path, bytes: &[u8], replace: Replace) -> Result<(), ImageIoError> {
    let mut tmp = temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    tmp.write_all(bytes).map_err(write_error(path))?;
    persist_with(tmp, path, replace)
}

pub fn write_error(path: &Path) -> impl Fn(io::Error) -> ImageIoError + '_ {
    move |cause| ImageIoError::Write {
        path: path.into(),
        cause,
    }
}

/// A temporary file in `path`'s folder, for `persist_with` to rename over it (removed if dropped
/// first). The caller registers it with `interrupt::writing` while it writes.
pub fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile, ImageIoError> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".gblur-")
        .suffix(".tmp")
        .tempfile_in(dir)
        // tempfile's message names the random temporary path; the kind is what matters.
        .map_err(|e| write_error(path)(io::Error::from(e.kind())))
}

/// Syncs the fully written `tmp` and renames it over `path`, replacing what `replace` allows,
/// with the permissions of the file it replaces (or 0644 for a new one). Whatever is at `path`
/// must be a regular file (or a link), never a device or pipe, which a rename would replace by
/// a file.
pub fn persist_with(
    tmp: tempfile::NamedTempFile,
    path: &Path,
    replace: Replace,
) -> Result<(), ImageIoError> {
    let err = write_error(path);
    if let Some(detail) = not_a_file(path) {
        return Err(ImageIoError::BadOutput {
            path: path.into(),
            detail,
        });
    }
    tmp.as_file().sync_all().map_err(&err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::metadata(path)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        tmp.as_file().set_permissions(perms).map_err(&err)?;
    }
    match replace {
        Replace::Any => tmp.persist(path).map(drop).map_err(|e| err(e.error)),
        Replace::Recorded(record) => {
            let meta = tmp.as_file().metadata().map_err(&err)?;
            record(&meta).map_err(&err)?;
            tmp.persist(path).map(drop).map_err(|e| err(e.error))
        }
        // A hard link fails where the name is taken: the check and the rename are one step.
        Replace::Never => match tmp.persist_noclobber(path) {
            Ok(_) => Ok(()),
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                Err(ImageIoError::Appeared { path: path.into() })
            }
            Err(e) => Err(err(e.error)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_folders_are_not_files_and_missing_paths_are_fine() {
        let dir = tempfile::tempdir().unwrap();
        assert!(not_a_file(Path::new("/dev/null")).is_some());
        assert!(not_a_file(dir.path()).unwrap().contains("directory"));
        assert!(not_a_file(&dir.path().join("missing.png")).is_none());
        std::fs::write(dir.path().join("a.png"), b"x").unwrap();
        assert!(not_a_file(&dir.path().join("a.png")).is_none());
    }
}
