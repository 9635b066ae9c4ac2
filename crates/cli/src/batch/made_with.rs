//! What settings made each output, kept so that a batch run again with other settings redoes
//! its outputs instead of keeping stale ones: OUT_DIR/.gblur.settings-K-of-N.log (one per
//! shard, so shards running at once never write the same file), a line per output written: its
//! size and modification time in nanoseconds, the settings' fingerprint, its input's size and
//! time, and its path relative to OUT_DIR (`names::escape`). An output counts as made with
//! those settings only while its size and time are still the ones recorded, so a file changed
//! or replaced since is not taken for gblur's; and it is stale, as if made with other
//! settings, once its input has changed. Logs are read and appended to as regular files only
//! (`record_file`): a link or a pipe in a log's place stops the batch before it starts.

use super::journal::{self, stamp};
use super::names;
use super::record_file;
use super::BatchJob;
use std::collections::HashMap;
use std::fs::File;
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

/// What a log says of one output.
struct Recorded {
    output: (u64, i128),
    fingerprint: String,
    input: (u64, i128),
}

/// The settings logs of OUT_DIR: what every shard recorded, and this shard's log to add to.
pub struct SettingsLog {
    out_dir: PathBuf,
    fingerprint: String,
    recorded: HashMap<PathBuf, Recorded>,
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
    let mut text = format!(
        "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
        b.filter.x.sigma(),
        b.filter.y.sigma(),
        b.filter.method,
        b.filter.truncate,
        b.edges,
        b.mask,
        b.sharpen,
        b.linear,
        b.jpeg_planes,
        b.encode,
        b.metadata,
        job.format,
    );
    // Added only where set, so that outputs recorded before it existed stay current.
    if b.to_srgb {
        text.push_str(" to-srgb");
    }
    format!("{:016x}", names::fnv1a(text.as_bytes()))
}

impl SettingsLog {
    /// Reads every settings log in `out_dir` and opens shard `(k, n)`'s to append to, for
    /// outputs made with the settings whose fingerprint is `fingerprint`.
    pub fn open(out_dir: &Path, (k, n): (usize, usize), fingerprint: String) -> io::Result<Self> {
        let mut recorded = HashMap::new();
        for line in journal::lines(out_dir, PREFIX)? {
            let fields: Vec<&str> = line.splitn(6, ' ').collect();
            let [size, time, id, in_size, in_time, rel] = fields[..] else {
                continue;
            };
            let number = |s: &str| s.parse::<i128>().ok();
            let (Some(size), Some(time), Some(in_size), Some(in_time)) =
                (number(size), number(time), number(in_size), number(in_time))
            else {
                continue;
            };
            let recorded_output = Recorded {
                output: (size as u64, time),
                fingerprint: id.to_string(),
                input: (in_size as u64, in_time),
            };
            recorded.insert(names::unescape(rel), recorded_output);
        }
        // This shard's log is created with its first record; what is in its place now is
        // checked before the batch starts (and again by that open).
        let path = out_dir.join(format!("{PREFIX}{k}-of-{n}.log"));
        record_file::check(&path)?;
        Ok(SettingsLog {
            out_dir: out_dir.to_path_buf(),
            fingerprint,
            recorded,
            path,
            file: Mutex::new(None),
        })
    }

    fn relative<'a>(&self, output: &'a Path) -> &'a Path {
        output.strip_prefix(&self.out_dir).unwrap_or(output)
    }

    /// What made the existing file `output` (under OUT_DIR) from `input`.
    pub fn made(&self, output: &Path, input: &Path) -> Made {
        let Some(r) = self.recorded.get(self.relative(output)) else {
            return Made::Unknown;
        };
        let now = |path: &Path| std::fs::metadata(path).map(|m| stamp(&m)).ok();
        let unchanged = std::fs::symlink_metadata(output).is_ok_and(|m| stamp(&m) == r.output);
        let same_input = now(input) == Some(r.input);
        match (unchanged, r.fingerprint == self.fingerprint && same_input) {
            (false, _) => Made::Unknown,
            (true, true) => Made::Same,
            (true, false) => Made::Other,
        }
    }

    /// `record` where a log is kept; the note a file's record takes where it fails.
    pub fn note_written(log: Option<&Self>, output: &Path, input: &Path) -> Option<String> {
        let e = log?.record(output, input).err()?;
        Some(format!(
            "written, but its settings were not recorded ({e}): a later run takes it for another \
             tool's file"
        ))
    }

    /// Records that the complete file `output` was written from `input` with this batch's
    /// settings.
    pub fn record(&self, output: &Path, input: &Path) -> io::Result<()> {
        let (size, time) = stamp(&std::fs::symlink_metadata(output)?);
        let (in_size, in_time) = stamp(&std::fs::metadata(input)?);
        let rel = names::escape(self.relative(output));
        let line = format!(
            "{size} {time} {} {in_size} {in_time} {rel}\n",
            self.fingerprint
        );
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            *file = Some(record_file::open_append(&self.path)?);
        }
        file.as_mut()
            .map_or(Ok(()), |f| f.write_all(line.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_is_known_by_its_settings_and_input_until_either_changes() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("sub dir").join("a b.png");
        std::fs::create_dir_all(output.parent().unwrap()).unwrap();
        std::fs::write(&output, b"blurred").unwrap();
        let input = dir.path().join("in.png");
        std::fs::write(&input, b"original").unwrap();
        let first = SettingsLog::open(dir.path(), (1, 2), "aaaa".into()).unwrap();
        assert_eq!(first.made(&output, &input), Made::Unknown);
        first.record(&output, &input).unwrap();
        let same = SettingsLog::open(dir.path(), (2, 2), "aaaa".into()).unwrap();
        assert_eq!(same.made(&output, &input), Made::Same);
        let other = SettingsLog::open(dir.path(), (1, 1), "bbbb".into()).unwrap();
        assert_eq!(other.made(&output, &input), Made::Other);
        // A new input makes the output stale whatever the settings.
        std::fs::write(&input, b"a new original").unwrap();
        assert_eq!(same.made(&output, &input), Made::Other);
        std::fs::write(&output, b"another tool's file").unwrap();
        assert_eq!(other.made(&output, &input), Made::Unknown);
    }
}
