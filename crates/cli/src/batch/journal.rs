//! What an in-place batch has finished, kept so that a second run never blurs a file twice:
//! IN_DIR/.gblur.in-place-K-of-N.journal (one per shard, so shards running at once never
//! write the same file), a line per file replaced: its size, its modification time in
//! nanoseconds and its path relative to IN_DIR (`names::escape`). A line is written, and
//! synced, once the blurred file is complete and before it is renamed over the original; a file
//! counts as done only while its size and time are still the ones recorded, so an original
//! the rename never replaced (or a file put back later) is blurred again. Journals are read and
//! written as regular files only (`record_file`).

use super::names;
use super::record_file;
use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The start of every journal's file name, which the batch's walk leaves out.
pub const PREFIX: &str = ".gblur.in-place-";

/// An in-place batch's journal: what every shard's journal says is done, and this shard's
/// journal to add to.
pub struct Journal {
    in_dir: PathBuf,
    done: HashMap<PathBuf, (u64, i128)>,
    /// This shard's journal; None when opened only to read (`--dry-run`).
    file: Option<Mutex<File>>,
    path: PathBuf,
}

/// A file's size and modification time, as the journal (and the settings log) compares them.
pub(super) fn stamp(meta: &Metadata) -> (u64, i128) {
    let ns = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
    (meta.len(), ns)
}

/// Every line of every file in `dir` whose name starts with `prefix` (every shard's record).
/// Each must be a regular file (`record_file`): a link or a pipe there is an error naming it.
pub(super) fn lines(dir: &Path, prefix: &str) -> io::Result<Vec<String>> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let mut text = Vec::new();
            record_file::open_read(&entry.path())?.read_to_end(&mut text)?;
            lines.extend(String::from_utf8_lossy(&text).lines().map(String::from));
        }
    }
    Ok(lines)
}

impl Journal {
    /// Reads every journal in `in_dir` and opens shard `(k, n)`'s to append to.
    pub fn open(in_dir: &Path, shard: (usize, usize)) -> io::Result<Journal> {
        let mut journal = Journal::read(in_dir, shard)?;
        let file = record_file::open_append(&journal.path)?;
        journal.file = Some(Mutex::new(file));
        Ok(journal)
    }

    /// Reads every journal in `in_dir`, to ask what is finished and record nothing.
    pub fn read(in_dir: &Path, (k, n): (usize, usize)) -> io::Result<Journal> {
        let mut done = HashMap::new();
        for line in lines(in_dir, PREFIX)? {
            let mut fields = line.splitn(3, ' ');
            let (Some(size), Some(time), Some(rel)) = (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let (Ok(size), Ok(time)) = (size.parse(), time.parse()) {
                done.insert(names::unescape(rel), (size, time));
            }
        }
        Ok(Journal {
            in_dir: in_dir.to_path_buf(),
            done,
            file: None,
            path: in_dir.join(format!("{PREFIX}{k}-of-{n}.journal")),
        })
    }

    /// Where this shard's journal is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn relative<'a>(&self, file: &'a Path) -> &'a Path {
        file.strip_prefix(&self.in_dir).unwrap_or(file)
    }

    /// Whether `file` (under IN_DIR) is one an earlier run blurred in place, unchanged since.
    pub fn finished(&self, file: &Path) -> bool {
        let Some(recorded) = self.done.get(self.relative(file)) else {
            return false;
        };
        std::fs::symlink_metadata(file).is_ok_and(|m| stamp(&m) == *recorded)
    }

    /// Records that `file` is about to be replaced by the complete file `meta` describes.
    pub fn record(&self, file: &Path, meta: &Metadata) -> io::Result<()> {
        let (size, time) = stamp(meta);
        let line = format!("{size} {time} {}\n", names::escape(self.relative(file)));
        let Some(file) = &self.file else {
            return Err(io::Error::other("the journal was opened only to read"));
        };
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(line.as_bytes())?;
        f.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_file_is_done_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let photo = dir.path().join("sub").join("a.png");
        std::fs::create_dir_all(photo.parent().unwrap()).unwrap();
        std::fs::write(&photo, b"blurred").unwrap();
        let journal = Journal::open(dir.path(), (1, 1)).unwrap();
        assert!(!journal.finished(&photo));
        journal
            .record(&photo, &std::fs::metadata(&photo).unwrap())
            .unwrap();
        let again = Journal::open(dir.path(), (2, 3)).unwrap();
        assert!(again.finished(&photo));
        std::fs::write(&photo, b"a new original").unwrap();
        assert!(!again.finished(&photo));
    }
}
