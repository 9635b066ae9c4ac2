//! What settings made each output, kept so that a batch run again with other settings redoes
//! its outputs instead of keeping stale ones: OUT_DIR/.gblur.settings-K-of-N.log (one per
//! shard, so shards running at once never write the same file), a line per output written: its
//! size, its modification time in nanoseconds, the settings' fingerprint and its path relative
//! to OUT_DIR (`names::escape`). An output counts as made with those settings only while its
//! size and time are still the ones recorded, so a file changed or replaced since is not
//! taken for gblur's.

use super::journal::{self, stamp};
use super::names;
use super::BatchJob;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The start of every settings log's file name.
pub const PREFIX: &str = ".gblur.settings-";

/// What is known of an existing output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// Written by a batch with the same settings, and unchanged since.
    Same,
    /// Written by a batch with other settings, and unchanged since: stale.
    Other,
    /// Not written by a batch that recorded it (another tool's file, or one changed since).
    Unknown,
}

/// The settings logs of OUT_DIR: what every shard recorded, and this shard's log to add to.
pub struct SettingsLog {
    out_dir: PathBuf,
    fingerprint: String,
    recorded: HashMap<PathBuf, ((u64, i128), String)>,
    /// This shard's log, created with the first output it records.
    path: PathBuf,
    file: Mutex<Option<File>>,
}

/// The settings that decide an output's pixels and encoding, as a short stable text: the
/// filter, its edges, selection and sharpening, the colour handling, the encoder's settings,
/// the kept metadata and the output format. Which device ran it does not count (every path
/// agrees within the filter's stated error).
pub fn fingerprint(job: &BatchJob) -> String {
    let b = &job.blur;
    let text = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        b.sigma_x,
        b.sigma_y,
        b.method,
        b.truncate,
        b.edges,
        b.mask,
        b.sharpen,
        b.linear,
        b.jpeg_planes,
        b.encode,
        b.metadata,
        job.format,
    );
    format!("{:016x}", names::fnv1a(text.as_bytes()))
}

impl SettingsLog {
    /// Reads every settings log in `out_dir` and opens shard `(k, n)`'s to append to, for
    /// outputs made with the settings whose fingerprint is `fingerprint`.
    pub fn open(out_dir: &Path, (k, n): (usize, usize), fingerprint: String) -> io::Result<Self> {
        let mut recorded = HashMap::new();
        for line in journal::lines(out_dir, PREFIX)? {
            let mut fields = line.splitn(4, ' ');
            let (Some(size), Some(time), Some(id), Some(rel)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            if let (Ok(size), Ok(time)) = (size.parse(), time.parse()) {
                recorded.insert(names::unescape(rel), ((size, time), id.to_string()));
            }
        }
        Ok(SettingsLog {
            out_dir: out_dir.to_path_buf(),
            fingerprint,
            recorded,
            path: out_dir.join(format!("{PREFIX}{k}-of-{n}.log")),
            file: Mutex::new(None),
        })
    }

    fn relative<'a>(&self, output: &'a Path) -> &'a Path {
        output.strip_prefix(&self.out_dir).unwrap_or(output)
    }

    /// What made the existing file `output` (under OUT_DIR).
    pub fn made(&self, output: &Path) -> Made {
        let Some((at, id)) = self.recorded.get(self.relative(output)) else {
            return Made::Unknown;
        };
        let unchanged = std::fs::symlink_metadata(output).is_ok_and(|m| stamp(&m) == *at);
        match (unchanged, *id == self.fingerprint) {
            (false, _) => Made::Unknown,
            (true, true) => Made::Same,
            (true, false) => Made::Other,
        }
    }

    /// Records that the complete file `output` was written with this batch's settings.
    pub fn record(&self, output: &Path) -> io::Result<()> {
        let (size, time) = stamp(&std::fs::symlink_metadata(output)?);
        let rel = names::escape(self.relative(output));
        let line = format!("{size} {time} {} {rel}\n", self.fingerprint);
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            *file = Some(OpenOptions::new().create(true).append(true).open(&self.path)?);
        }
        file.as_mut().map_or(Ok(()), |f| f.write_all(line.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_known_by_its_settings_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("sub dir").join("a b.png");
        std::fs::create_dir_all(output.parent().unwrap()).unwrap();
        std::fs::write(&output, b"blurred").unwrap();
        let first = SettingsLog::open(dir.path(), (1, 2), "aaaa".into()).unwrap();
        assert_eq!(first.made(&output), Made::Unknown);
        first.record(&output).unwrap();
        let same = SettingsLog::open(dir.path(), (2, 2), "aaaa".into()).unwrap();
        assert_eq!(same.made(&output), Made::Same);
        let other = SettingsLog::open(dir.path(), (1, 1), "bbbb".into()).unwrap();
        assert_eq!(other.made(&output), Made::Other);
        std::fs::write(&output, b"another tool's file").unwrap();
        assert_eq!(other.made(&output), Made::Unknown);
    }
}
