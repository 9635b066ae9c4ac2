//! Built program binaries kept on disk (`CL_PROGRAM_BINARIES`), so that a process pays the
//! OpenCL C compiler once per device, driver, kernel source and build options rather than on
//! every run.
//!
//! An entry is named by a hash of its key and holds the full key text, the binary's length and
//! its CRC-32: an entry whose key differs (a hash collision, another gblur's sources), whose
//! length or checksum is wrong (a torn or corrupted file), or that the driver refuses to build
//! is removed and the program is built from source again. Entries are written to a temporary
//! file in the same folder and renamed into place, so a reader never sees half an entry.

use super::DeviceInfo;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most the program folder keeps; storing past it drops the entries used longest ago.
/// Each define set is an entry (PoCL's are about 6 MB, NVIDIA's PTX far less), and old
/// drivers' entries are never read again.
const MAX_BYTES: u64 = 512 << 20;

/// The first bytes of every entry; a new layout gets a new magic.
const MAGIC: &[u8; 10] = b"GBLURPRG1\n";

/// The folder gblur keeps its caches in: `GBLUR_CACHE_DIR`, else `$XDG_CACHE_HOME/gblur`,
/// else `~/.cache/gblur`. None when `GBLUR_NO_CACHE` is set (to anything but `0` or empty)
/// or no home is known.
pub fn cache_root() -> Option<PathBuf> {
    let disabled = std::env::var("GBLUR_NO_CACHE").is_ok_and(|v| !v.is_empty() && v != "0");
    if disabled {
        return None;
    }
    let nonempty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = nonempty("GBLUR_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(xdg) = nonempty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("gblur"));
    }
    nonempty("HOME").map(|home| PathBuf::from(home).join(".cache").join("gblur"))
}

/// A 64-bit hash of `parts`, as hex: names files, never trusted alone (the key text is kept in
/// each entry and compared in full).
fn hash_hex(parts: &[&str]) -> String {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    format!("{:016x}", h.finish())
}

/// What identifies a device's compiler: a new driver or another device gets new entries.
pub fn device_key(info: &DeviceInfo) -> String {
    format!(
        "platform={}\ndevice={}\nversion={}\ndriver={}\n",
        info.platform, info.name, info.version, info.driver
    )
}

/// A short name for `info`'s compiler (its `device_key`), for file names.
pub fn device_tag(info: &DeviceInfo) -> String {
    hash_hex(&[&device_key(info)])
}

/// Where entries for one device live, and whether any are there yet.
#[derive(Clone, Debug)]
pub struct ProgramCache {
    dir: PathBuf,
    device_key: String,
    /// Names every entry of this device, so that "is the cache warm here?" is one listing.
    device_prefix: String,
}

/// What looking an entry up found.
pub enum Lookup {
    Hit(Vec<u8>),
    Miss,
    /// An entry was there but is not to be trusted (damaged or stale); it has been removed.
    Rejected,
}

impl ProgramCache {
    /// The cache for `info` under `root` (`cache_root()` in normal use).
    pub fn new(root: &Path, info: &DeviceInfo) -> ProgramCache {
        let device_key = device_key(info);
        ProgramCache {
            dir: root.join("programs"),
            device_prefix: device_tag(info),
            device_key,
        }
    }

    /// The full key of `source` (by name and content) built with `options`.
    fn key(&self, file: &str, text: &str, options: &str) -> String {
        format!(
            "gblur {}\n{}source={file}\nsource hash={}\nsource bytes={}\noptions={options}\n",
            env!("CARGO_PKG_VERSION"),
            self.device_key,
            hash_hex(&[text]),
            text.len(),
        )
    }

    /// The entry's path for `source` and `options`.
    pub fn path(&self, file: &str, text: &str, options: &str) -> PathBuf {
        let key = self.key(file, text, options);
        self.dir
            .join(format!("{}-{}.bin", self.device_prefix, hash_hex(&[&key])))
    }

    /// Whether any entry for this device is on disk: whether a build here is likely to come
    /// from the cache (what the device's set-up will cost).
    pub fn warm(&self) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        let prefix = format!("{}-", self.device_prefix);
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".bin")
        })
    }

    /// The binary kept for `source` and `options`, checked against its key, length and CRC.
    pub fn load(&self, file: &str, text: &str, options: &str) -> Lookup {
        let path = self.path(file, text, options);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(_) => return Lookup::Miss,
        };
        match decode(&bytes, &self.key(file, text, options)) {
            Ok(binary) => Lookup::Hit(binary.to_vec()),
            Err(_) => {
                self.remove(file, text, options);
                Lookup::Rejected
            }
        }
    }

    /// Drops the entry (one the driver would not build from).
    pub fn remove(&self, file: &str, text: &str, options: &str) {
        let _ = std::fs::remove_file(self.path(file, text, options));
    }

    /// Keeps `binary` for `source` and `options`. A cache that cannot be written (a read-only
    /// home, a full disk) costs the next run a build, nothing more: errors are returned for
    /// the caller to ignore or report.
    pub fn store(
        &self,
        file: &str,
        text: &str,
        options: &str,
        binary: &[u8],
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let key = self.key(file, text, options);
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(&encode(&key, binary))?;
        tmp.as_file().sync_data()?;
        tmp.persist(self.path(file, text, options))
            .map_err(|e| e.error)?;
        trim(&self.dir, MAX_BYTES);
        Ok(())
    }
}

/// Deletes the entries of `dir` modified longest ago (a hit does not touch an entry: the
/// oldest written go first) until the rest fit in `max` bytes.
fn trim(dir: &Path, max: u64) {
    let Ok(read) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = read
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "bin"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

/// An entry: magic, key length and key, binary length, the binary's CRC-32, the binary.
fn encode(key: &str, binary: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + key.len() + binary.len() + 16);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(binary.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(binary).to_le_bytes());
    out.extend_from_slice(binary);
    out
}

/// The binary of an entry written for `key`, or why it is not to be trusted.
fn decode<'a>(bytes: &'a [u8], key: &str) -> Result<&'a [u8], &'static str> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("not a gblur program entry")?;
    let (len, rest) = split_le::<4>(rest).ok_or("truncated")?;
    let key_len = u32::from_le_bytes(len) as usize;
    if rest.len() < key_len || &rest[..key_len] != key.as_bytes() {
        return Err("written for another device, driver, source or options");
    }
    let (len, rest) = split_le::<8>(&rest[key_len..]).ok_or("truncated")?;
    let (crc, binary) = split_le::<4>(rest).ok_or("truncated")?;
    if binary.len() as u64 != u64::from_le_bytes(len) {
        return Err("truncated");
    }
    if crc32fast::hash(binary) != u32::from_le_bytes(crc) {
        return Err("checksum mismatch");
    }
    Ok(binary)
}

fn split_le<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let head = bytes.get(..N)?.try_into().ok()?;
    Some((head, &bytes[N..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(driver: &str) -> DeviceInfo {
        DeviceInfo::for_tests("PoCL", "cpu-x86", driver)
    }

    #[test]
    fn entries_round_trip_and_reject_any_damage() {
        let key = "k\n";
        let entry = encode(key, b"binary bytes");
        assert_eq!(decode(&entry, key), Ok(&b"binary bytes"[..]));
        assert!(decode(&entry, "other\n").is_err());
        for cut in [0, 5, MAGIC.len() + 3, entry.len() - 1] {
            assert!(decode(&entry[..cut], key).is_err(), "cut at {cut}");
        }
        for at in [MAGIC.len() + 6, entry.len() - 1] {
            let mut bad = entry.clone();
            bad[at] ^= 0x40;
            assert!(decode(&bad, key).is_err(), "flipped byte {at}");
        }
    }

    #[test]
    fn keys_differ_by_options_source_and_driver() {
        let root = Path::new("/nonexistent");
        let a = ProgramCache::new(root, &info("1.0"));
        let b = ProgramCache::new(root, &info("1.1"));
        let base = a.path("f.cl", "kernel", "-cl-std=CL1.2");
        assert_ne!(base, a.path("f.cl", "kernel", "-cl-std=CL1.2 -DCHUNK=64"));
        assert_ne!(base, a.path("f.cl", "kernel2", "-cl-std=CL1.2"));
        assert_ne!(base, b.path("f.cl", "kernel", "-cl-std=CL1.2"));
        assert_eq!(base, a.path("f.cl", "kernel", "-cl-std=CL1.2"));
    }

    #[test]
    fn trimming_drops_the_oldest_entries_first() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = std::time::SystemTime::now();
        for (i, name) in ["old.bin", "mid.bin", "new.bin"].into_iter().enumerate() {
            let path = dir.path().join(name);
            std::fs::write(&path, [0u8; 100]).unwrap();
            let when = t0 - std::time::Duration::from_secs(100 * (3 - i as u64));
            let file = std::fs::File::options().write(true).open(&path).unwrap();
            file.set_modified(when).unwrap();
        }
        trim(dir.path(), 250);
        assert!(!dir.path().join("old.bin").exists());
        assert!(dir.path().join("mid.bin").exists());
        assert!(dir.path().join("new.bin").exists());
    }

    #[test]
    fn store_load_and_warm() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ProgramCache::new(dir.path(), &info("1.0"));
        assert!(!cache.warm());
        assert!(matches!(cache.load("f.cl", "src", "-O"), Lookup::Miss));
        cache.store("f.cl", "src", "-O", b"bin").unwrap();
        assert!(cache.warm());
        assert!(!ProgramCache::new(dir.path(), &info("2.0")).warm());
        assert!(matches!(cache.load("f.cl", "src", "-O"), Lookup::Hit(b) if b == b"bin"));
        // A damaged entry is refused and removed.
        let path = cache.path("f.cl", "src", "-O");
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(matches!(cache.load("f.cl", "src", "-O"), Lookup::Rejected));
        assert!(!path.exists());
    }
}
