//! Reading an input: opened once for a whole job and recognised by its content (so a named
//! pipe is read once, never reopened), and never more than the job's memory budget. A regular
//! file stays open, and every reader of it (the sniff, the header, the decoders, the strip
//! engine's rows) reads it at its own position through that one handle; a JPEG, HEIF or JPEG
//! XL file is read into memory where a decoder needs its bytes, a JPEG up to its
//! end-of-image marker (a motion photo's appended video is never read). Stdin, pipes and
//! devices are read into memory, up to the budget.

use super::source::Seekable;
use super::ImageIoError;
use image::ImageFormat;
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufReader, Cursor, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What gblur reads an input's content from.
pub enum Content {
    /// A regular file, opened once, of `len` bytes, read at positions (`FileAt`).
    File {
        /// The file, shared by its readers.
        file: Arc<File>,
        /// Its length in bytes when it was opened.
        len: u64,
    },
    /// Bytes in memory: stdin, a pipe or device, or a page taken out of a stack.
    Bytes(Vec<u8>),
}

/// An input opened for a job: every reader of it reads this one handle.
pub struct Input {
    /// What errors and the report call it.
    pub name: PathBuf,
    /// What its first bytes announce; None where they announce nothing (TGA has no
    /// signature: `recognise` goes by the name).
    pub sniffed: Option<ImageFormat>,
    /// Its first bytes (at most `HEAD`).
    head: Vec<u8>,
    /// The open file, or the bytes of an input read into memory.
    pub content: Content,
}

impl Input {
    /// Bytes in memory (stdin's content, a page of a stack) as an input that `name` names.
    pub fn from_bytes(name: &Path, bytes: Vec<u8>) -> Input {
        let head = bytes[..bytes.len().min(HEAD)].to_vec();
        Input {
            name: name.into(),
            sniffed: guess(&head),
            head,
            content: Content::Bytes(bytes),
        }
    }

    /// Whether the input is a regular file (read as it is decoded, streamable), not bytes
    /// held in memory.
    pub fn is_file(&self) -> bool {
        matches!(self.content, Content::File { .. })
    }

    /// Its first bytes, which announce its format.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// A buffered reader of the whole content from its start, at a position of its own.
    pub fn reader(&self) -> Box<dyn Seekable + Send + '_> {
        match &self.content {
            Content::File { file, len } => Box::new(BufReader::new(FileAt::new(file, *len))),
            Content::Bytes(bytes) => Box::new(Cursor::new(&bytes[..])),
        }
    }

    /// A reader of the file from its start that owns its share of the handle (for a decoder
    /// on another thread); None for bytes in memory.
    pub fn file_reader(&self) -> Option<FileAt> {
        match &self.content {
            Content::File { file, len } => Some(FileAt::new(file, *len)),
            Content::Bytes(_) => None,
        }
    }

    /// The content in memory, within `max_memory_mib`: bytes held already, or the file read
    /// (a JPEG up to its end-of-image marker; any other file to its end, refused unread where
    /// its size is over the budget).
    pub fn whole(&self, max_memory_mib: u64) -> Result<Cow<'_, [u8]>, ImageIoError> {
        match &self.content {
            Content::Bytes(bytes) => Ok(Cow::Borrowed(bytes)),
            Content::File { len, .. }
                if self.sniffed != Some(ImageFormat::Jpeg)
                    && *len > max_memory_mib.saturating_mul(1 << 20) =>
            {
                Err(ImageIoError::ReadOverLimit {
                    path: self.name.clone(),
                    limit_mib: max_memory_mib,
                })
            }
            Content::File { file, len } => {
                let reader = FileAt::new(file, *len);
                read_within(&self.name, reader, Some(*len), max_memory_mib).map(Cow::Owned)
            }
        }
    }

    /// The content in memory, owned: bytes held already, moved, or the file read whole
    /// within `max_memory_mib` (`whole`).
    pub fn into_bytes(self, max_memory_mib: u64) -> Result<Vec<u8>, ImageIoError> {
        match self.content {
            Content::Bytes(bytes) => Ok(bytes),
            Content::File { .. } => self.whole(max_memory_mib).map(Cow::into_owned),
        }
    }

    /// `own_format`: the format it is written back in where no output format is named.
    pub fn own_format(&self) -> Option<ImageFormat> {
        own_format_of(&self.head)
    }
}

/// A reader of a file at a position of its own: positioned reads through a shared handle, so
/// that the readers of a file opened once never move each other.
pub struct FileAt {
    file: Arc<File>,
    pos: u64,
    len: u64,
}

impl FileAt {
    fn new(file: &Arc<File>, len: u64) -> FileAt {
        FileAt {
            file: Arc::clone(file),
            pos: 0,
            len,
        }
    }
}

impl Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(&*self.file, buf, self.pos)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(&*self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FileAt {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let (base, offset) = match to {
            SeekFrom::Start(at) => (at, 0),
            SeekFrom::End(offset) => (self.len, offset),
            SeekFrom::Current(offset) => (self.pos, offset),
        };
        self.pos = base.checked_add_signed(offset).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek before the file's start",
            )
        })?;
        Ok(self.pos)
    }
}

/// How many bytes announce a format.
const HEAD: usize = 64;

/// The format the first bytes of a file announce: what the `image` crate recognises, BigTIFF
/// (`II+\0`, `MM\0+`), which its guess does not know but its TIFF decoder reads, and the HEIF
/// family (HEIC, AVIF: `heif::HEIF`), which libheif reads, and JPEG XL (`jxl::JXL`).
pub fn guess(head: &[u8]) -> Option<ImageFormat> {
    if super::heif::is_heif(head) {
        return Some(super::heif::HEIF);
    }
    if super::jxl::is_jxl(head) {
        return Some(super::jxl::JXL);
    }
    // The format JPEG XL is carried as names no other file gblur reads.
    if let Some(format) = image::guess_format(head)
        .ok()
        .filter(|f| *f != super::jxl::JXL)
    {
        return Some(format);
    }
    match head.get(..4)? {
        b"II+\0" | b"MM\0+" => Some(ImageFormat::Tiff),
        _ => None,
    }
}

/// The format the first bytes of the regular file `path` announce, if any.
pub fn sniff(path: &Path) -> io::Result<Option<ImageFormat>> {
    let mut head = Vec::with_capacity(HEAD);
    File::open(path)?.take(HEAD as u64).read_to_end(&mut head)?;
    Ok(guess(&head))
}

/// The format a file is written back in where no output format is named: what `sniff`
/// finds, but a HEIF file only where it is AVIF (an output not named .heic, stdout among
/// them, is AV1-coded); None otherwise.
pub fn own_format(path: &Path) -> Option<ImageFormat> {
    let mut head = Vec::with_capacity(HEAD);
    File::open(path)
        .ok()?
        .take(HEAD as u64)
        .read_to_end(&mut head)
        .ok()?;
    own_format_of(&head)
}

/// `own_format` of a file whose first bytes are `head`.
pub fn own_format_of(head: &[u8]) -> Option<ImageFormat> {
    guess(head).filter(|f| *f != super::heif::HEIF || super::heif::is_avif(head))
}

/// Opens `path` (`-`: stdin) for decoding within `max_memory_mib`. A regular file stays open
/// (its first bytes read to recognise it); anything else (stdin, a named pipe, a device) is
/// read into memory, and refused once it passes the budget.
pub fn open(path: &Path, max_memory_mib: u64) -> Result<Input, ImageIoError> {
    let open_err = |cause| ImageIoError::Open {
        path: path.into(),
        cause,
    };
    if super::is_stdio(path) {
        let name = Path::new("stdin");
        let bytes = read_within(name, io::stdin().lock(), None, max_memory_mib)?;
        return Ok(Input::from_bytes(name, bytes));
    }
    let mut file = File::open(path).map_err(open_err)?;
    let meta = file.metadata().map_err(open_err)?;
    if meta.is_dir() {
        return Err(open_err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    if !meta.is_file() {
        let bytes = read_within(path, file, None, max_memory_mib)?;
        return Ok(Input::from_bytes(path, bytes));
    }
    if meta.len() == 0 {
        return Err(ImageIoError::Decode {
            path: path.into(),
            detail: "the file is empty (0 bytes)".into(),
        });
    }
    let mut head = Vec::with_capacity(HEAD);
    (&mut file)
        .take(HEAD as u64)
        .read_to_end(&mut head)
        .map_err(open_err)?;
    Ok(Input {
        name: path.into(),
        sniffed: guess(&head),
        head,
        content: Content::File {
            file: Arc::new(file),
            len: meta.len(),
        },
    })
}

/// Reads `reader` (the content of `name`, `size` bytes where known) into memory: a JPEG up
/// to its end-of-image marker, anything else to its end; refused once over the budget.
fn read_within(
    name: &Path,
    mut reader: impl Read,
    size: Option<u64>,
    max_memory_mib: u64,
) -> Result<Vec<u8>, ImageIoError> {
    // A stream, whose length nothing bounds, within what the budget leaves beside the
    // process as it stands; a file's bytes (read up to a JPEG's end) within the budget, as
    // its decoded image is.
    let limit = match size {
        None => crate::memory::room_bytes(max_memory_mib),
        Some(_) => max_memory_mib.saturating_mul(1 << 20),
    };
    // Room for all that may be read, asked for once: a buffer that grew would be copied
    // each time (the huge-page advice on a large block keeps the kernel from moving it), the
    // old and new copies alive together. Pages not yet written take no memory.
    let mut bytes = Vec::new();
    bytes.reserve_exact(match size {
        Some(size) => size.min(limit + 1) as usize,
        None => (limit + 1) as usize,
    });
    let within =
        read_pieces(&mut reader, &mut bytes, limit).map_err(|cause| ImageIoError::Open {
            path: name.into(),
            cause,
        })?;
    if !within {
        return Err(ImageIoError::ReadOverLimit {
            path: name.into(),
            limit_mib: max_memory_mib,
        });
    }
    if bytes.is_empty() {
        return Err(ImageIoError::Decode {
            path: name.into(),
            detail: "the input is empty (0 bytes)".into(),
        });
    }
    Ok(bytes)
}

/// Reads `reader` into `bytes` in growing pieces, a JPEG up to its end-of-image marker, and
/// anything else to its end; false where there was more than `limit` bytes to read.
fn read_pieces(reader: &mut impl Read, bytes: &mut Vec<u8>, limit: u64) -> io::Result<bool> {
    let mut jpeg = None;
    let mut walked = 2;
    loop {
        // At most what the budget leaves, and one byte more to see it passed.
        let room = (limit + 1).saturating_sub(bytes.len() as u64);
        let piece = room.min((bytes.len() as u64).clamp(1 << 16, 64 << 20));
        let read = reader.take(piece).read_to_end(bytes)?;
        if jpeg.is_none() && bytes.len() >= HEAD.min(2) {
            jpeg = Some(guess(&bytes[..bytes.len().min(HEAD)]) == Some(ImageFormat::Jpeg));
        }
        if jpeg == Some(true) {
            match super::jpeg_end(bytes, walked) {
                Ok(end) => {
                    bytes.truncate(end);
                    return Ok(true);
                }
                Err(resume) => walked = resume,
            }
        }
        if bytes.len() as u64 > limit {
            return Ok(false);
        }
        if read == 0 {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bigtiff_is_recognised() {
        assert_eq!(guess(b"II+\0\x08\0\0\0"), Some(ImageFormat::Tiff));
        assert_eq!(guess(b"MM\0+\0\x08\0\0"), Some(ImageFormat::Tiff));
        assert_eq!(guess(b"II*\0\x08\0\0\0"), Some(ImageFormat::Tiff));
        assert_eq!(guess(b"II-\0"), None);
    }

    /// A file over the budget is refused before it is read, but a JPEG, whose end may come
    /// before the budget does, is read up to its end-of-image marker.
    #[test]
    fn a_file_over_the_budget_is_refused_unread_unless_a_jpeg_ends_within_it() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.tif");
        std::fs::write(&big, [&b"II*\0"[..], &vec![0u8; 2 << 20]].concat()).unwrap();
        let input = open(&big, 1).unwrap();
        assert!(matches!(
            input.whole(1),
            Err(ImageIoError::ReadOverLimit { limit_mib: 1, .. })
        ));
        let motion = dir.path().join("motion.jpg");
        let jpeg = [
            &[0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, 0xFF, 0xD9][..],
            &vec![0u8; 2 << 20],
        ]
        .concat();
        std::fs::write(&motion, jpeg).unwrap();
        assert_eq!(open(&motion, 1).unwrap().whole(1).unwrap().len(), 10);
    }

    #[test]
    fn a_stream_is_read_within_the_budget_and_a_jpeg_up_to_its_end() {
        let endless = io::repeat(7);
        let err = read_within(Path::new("zero"), endless, None, 1)
            .err()
            .unwrap();
        assert!(matches!(
            err,
            ImageIoError::ReadOverLimit { limit_mib: 1, .. }
        ));
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 1, 2, 0xFF, 0xD9];
        let end = jpeg.len();
        jpeg.extend(std::iter::repeat_n(0u8, 3 << 20));
        let size = Some(jpeg.len() as u64);
        let bytes = read_within(Path::new("motion.jpg"), &jpeg[..], size, 1).unwrap();
        assert_eq!(bytes.len(), end);
        let empty = read_within(Path::new("fifo"), &[][..], None, 1)
            .err()
            .unwrap();
        assert!(empty.to_string().contains("empty"), "{empty}");
    }
}
