//! Reading an input: recognised by its content from one open handle (so a named pipe is read
//! once, never reopened), and never more than the job's memory budget. A regular file is
//! decoded as it is read, except a JPEG, which is read up to its end-of-image marker (a
//! motion photo's appended video is never read). Stdin, pipes and devices are read into
//! memory, up to the budget.

use super::ImageIoError;
use image::ImageFormat;
use std::fs::File;
use std::io::{self, Read, Seek};
use std::path::{Path, PathBuf};

/// What gblur reads a file's content from.
pub enum Content {
    /// A regular file, rewound, decoded as it is read.
    File(File),
    /// Bytes in memory: stdin, a pipe or device, or a JPEG up to its end-of-image marker.
    Bytes(Vec<u8>),
}

/// An input opened for decoding.
pub struct Input {
    /// What errors and the report call it.
    pub name: PathBuf,
    /// What its first bytes announce; None where they announce nothing (TGA has no
    /// signature: `recognise` goes by the name).
    pub sniffed: Option<ImageFormat>,
    pub content: Content,
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
    if let Some(format) = image::guess_format(head).ok().filter(|f| *f != super::jxl::JXL) {
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
    File::open(path).ok()?.take(HEAD as u64).read_to_end(&mut head).ok()?;
    own_format_of(&head)
}

/// `own_format` of a file whose first bytes are `head`.
pub fn own_format_of(head: &[u8]) -> Option<ImageFormat> {
    guess(head).filter(|f| *f != super::heif::HEIF || super::heif::is_avif(head))
}

/// Opens `path` (`-`: stdin) for decoding within `max_memory_mib`. A regular file stays a
/// file (a JPEG is read into memory up to its end); anything else (stdin, a named pipe, a
/// device) is read into memory, and refused once it passes the budget.
pub fn open(path: &Path, max_memory_mib: u64) -> Result<Input, ImageIoError> {
    let open_err = |cause| ImageIoError::Open {
        path: path.into(),
        cause,
    };
    if super::is_stdio(path) {
        return in_memory(Path::new("stdin"), io::stdin().lock(), None, max_memory_mib);
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
        return in_memory(path, file, None, max_memory_mib);
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
    let sniffed = guess(&head);
    // libheif and jxl-oxide decode from memory, and a JPEG is read up to its end-of-image
    // marker.
    if matches!(sniffed, Some(ImageFormat::Jpeg | super::heif::HEIF | super::jxl::JXL)) {
        let size = Some(meta.len());
        return in_memory(
            path,
            io::Cursor::new(head).chain(file),
            size,
            max_memory_mib,
        );
    }
    file.rewind().map_err(open_err)?;
    Ok(Input {
        name: path.into(),
        sniffed,
        content: Content::File(file),
    })
}

/// Reads `reader` (the content of `name`, `size` bytes where known) into memory: a JPEG up
/// to its end-of-image marker, anything else to its end; refused once over the budget.
fn in_memory(
    name: &Path,
    mut reader: impl Read,
    size: Option<u64>,
    max_memory_mib: u64,
) -> Result<Input, ImageIoError> {
    // A stream, whose length nothing bounds, within what the budget leaves beside the
    // process as it stands; a file's bytes (read up to a JPEG's end) within the budget, as
    // its decoded image is.
    let limit = match size {
        None => crate::memory::room_bytes(max_memory_mib),
        Some(_) => max_memory_mib.saturating_mul(1 << 20),
    };
    let read_err = |cause| ImageIoError::Open {
        path: name.into(),
        cause,
    };
    let over = || ImageIoError::ReadOverLimit {
        path: name.into(),
        limit_mib: max_memory_mib,
    };
    // Room for all that may be read, asked for once: a buffer that grew would be copied
    // each time (the huge-page advice on a large block keeps the kernel from moving it), the
    // old and new copies alive together. Pages not yet written take no memory.
    let mut bytes = Vec::new();
    bytes.reserve_exact(match size {
        Some(size) => size.min(limit + 1) as usize,
        None => (limit + 1) as usize,
    });
    let mut jpeg = None;
    let mut walked = 2;
    loop {
        // At most what the budget leaves, and one byte more to see it passed.
        let room = (limit + 1).saturating_sub(bytes.len() as u64);
        let piece = room.min((bytes.len() as u64).clamp(1 << 16, 64 << 20));
        let read = (&mut reader)
            .take(piece)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
        if jpeg.is_none() && bytes.len() >= HEAD.min(2) {
            jpeg = Some(guess(&bytes[..bytes.len().min(HEAD)]) == Some(ImageFormat::Jpeg));
        }
        if jpeg == Some(true) {
            match super::jpeg_end(&bytes, walked) {
                Ok(end) => {
                    bytes.truncate(end);
                    break;
                }
                Err(resume) => walked = resume,
            }
        }
        if bytes.len() as u64 > limit {
            return Err(over());
        }
        if read == 0 {
            break;
        }
    }
    if bytes.is_empty() {
        return Err(ImageIoError::Decode {
            path: name.into(),
            detail: "the input is empty (0 bytes)".into(),
        });
    }
    Ok(Input {
        name: name.into(),
        sniffed: guess(&bytes[..bytes.len().min(HEAD)]),
        content: Content::Bytes(bytes),
    })
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

    #[test]
    fn a_stream_is_read_within_the_budget_and_a_jpeg_up_to_its_end() {
        let endless = io::repeat(7);
        let err = in_memory(Path::new("zero"), endless, None, 1)
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
        let read = in_memory(Path::new("motion.jpg"), &jpeg[..], size, 1).unwrap();
        let Content::Bytes(bytes) = read.content else {
            panic!("in memory")
        };
        assert_eq!(bytes.len(), end);
        assert_eq!(read.sniffed, Some(ImageFormat::Jpeg));
        let empty = in_memory(Path::new("fifo"), &[][..], None, 1)
            .err()
            .unwrap();
        assert!(empty.to_string().contains("empty"), "{empty}");
    }
}
