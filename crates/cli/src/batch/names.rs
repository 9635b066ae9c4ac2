//! File names as the batch's records keep them: text a person can read on one line, that
//! gives back the exact name. UTF-8 names stand as they are, but for a backslash (`\\`) and
//! control characters (`\n`, `\r`, `\t`, `\xHH`); bytes that are not UTF-8 are `\xHH`. Two
//! names are the same file only if their bytes are the same.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// `path` as a record keeps it.
pub fn escape(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() && (c as u32) < 0x80 => {
                    let _ = write!(out, "\\x{:02X}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    out
}

/// The path a record's text names; text that `escape` did not write is taken as it stands.
pub fn unescape(text: &str) -> PathBuf {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (decoded, len) = match (b, bytes.get(i + 1)) {
            (b'\\', Some(b'\\')) => (Some(b'\\'), 2),
            (b'\\', Some(b'n')) => (Some(b'\n'), 2),
            (b'\\', Some(b'r')) => (Some(b'\r'), 2),
            (b'\\', Some(b't')) => (Some(b'\t'), 2),
            (b'\\', Some(b'x')) => {
                let hex = text.get(i + 2..i + 4);
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => (Some(v), 4),
                    None => (None, 1),
                }
            }
            _ => (None, 1),
        };
        out.push(decoded.unwrap_or(b));
        i += len;
    }
    PathBuf::from(OsString::from_vec(out))
}

/// A hash of a name (or any text) that is stable across machines and runs (FNV-1a): shards
/// split a folder the same way everywhere, and a settings log reads the same anywhere.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_comes_back_exactly_and_reads_on_one_line() {
        let names: Vec<Vec<u8>> = vec![
            b"plain/photo.jpg".to_vec(),
            b"caf\xe9.png".to_vec(),
            b"two\nlines.png".to_vec(),
            b"back\\slash \\x41.png".to_vec(),
            "ünïcödé 写真.tif".as_bytes().to_vec(),
            b"\x01\x7f\xff\xfe".to_vec(),
        ];
        for raw in names {
            let path = PathBuf::from(OsString::from_vec(raw.clone()));
            let text = escape(&path);
            assert!(!text.contains('\n'), "{text}");
            assert_eq!(unescape(&text).as_os_str().as_bytes(), &raw[..], "{text}");
        }
        assert_eq!(escape(Path::new("plain/photo.jpg")), "plain/photo.jpg");
        assert_eq!(escape(Path::new("caf\u{e9}.png")), "café.png");
    }
}
