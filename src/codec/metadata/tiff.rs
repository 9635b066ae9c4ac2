//! EXIF in TIFF files, where it is no blob but part of the file's own structure: the first
//! directory holds the descriptive fields (Make, Model, DateTime, ...) beside the image's
//! layout, and points to the EXIF and GPS directories. Reading gathers those into an EXIF
//! structure of their own; writing merges an EXIF structure into the first directory of the
//! file the encoder wrote (a new directory appended, the header pointed at it).

use super::ifd::{self, Dir, Entry, Layout, Order, Source};
use super::Blobs;

/// Tags of a TIFF's first directory that describe the picture rather than lay out its
/// samples (TIFF 6.0 and EXIF 2.32's "tags relating to image data characteristics" and
/// "other tags"): what an EXIF structure carries in its first directory.
const DESCRIPTIVE: &[u16] = &[
    270,   // ImageDescription
    271,   // Make
    272,   // Model
    274,   // Orientation
    282,   // XResolution
    283,   // YResolution
    296,   // ResolutionUnit
    301,   // TransferFunction
    305,   // Software
    306,   // DateTime
    315,   // Artist
    316,   // HostComputer
    318,   // WhitePoint
    319,   // PrimaryChromaticities
    33432, // Copyright
];

/// The descriptive tags whose presence makes a TIFF's first directory worth an EXIF structure
/// (resolution and orientation alone are layout that every TIFF writer sets).
const TELLING: &[u16] = &[270, 271, 272, 305, 306, 315, 316, 33432];

/// Tags an EXIF structure's first directory may carry that the written TIFF's own layout
/// decides, or that carry another kind of metadata (IPTC, which `--keep` chooses apart):
/// never copied over it.
const LAYOUT: &[u16] = &[
    IPTC,
    34377, // Photoshop's resources, which may hold IPTC too: `--keep` decides about IPTC
    254,
    255,
    256,
    257,
    258,
    259,
    262,
    263,
    266,
    273,
    277,
    278,
    279,
    280,
    281,
    284,
    290,
    291,
    292,
    293,
    317,
    320,
    322,
    323,
    324,
    325,
    EXTRA_SAMPLES,
    339,
    340,
    341,
    513,
    514,
    529,
    530,
    531,
    532,
    ICC,
    ifd::XMP,
];

/// The tag of an embedded ICC profile.
const ICC: u16 = 34675;

/// How deep sub-directories are followed: IFD0 → EXIF → interoperability.
const DEPTH: u32 = 3;

/// What a file holds that `image` does not hand over: a TIFF's EXIF, ICC profile and XMP, a
/// PNG's EXIF in a legacy text chunk.
#[derive(Clone, Debug, Default)]
pub struct FromFile {
    /// EXIF as a TIFF structure (a TIFF's: in the file's byte order).
    pub exif: Option<Vec<u8>>,
    /// Its ICC profile (tag 34675) and XMP packet (tag 700): `image` 0.25.10 reads them only
    /// when no memory limit is set (with one, it refuses every tag value of its first
    /// directory as over the limit).
    pub icc: Option<Vec<u8>>,
    pub xmp: Option<Vec<u8>>,
    /// Whether `xmp` is all there is (a TIFF's tag 700 was looked for): the decoder is not
    /// asked, since with a memory limit it fails on a TIFF's tags.
    pub xmp_read: bool,
    /// The file's own Orientation tag (a TIFF's first directory), 1 to 8.
    pub orientation: Option<u8>,
    /// Whether the file's extra sample is associated (premultiplied) alpha: a TIFF's
    /// ExtraSamples = 1.
    pub associated_alpha: bool,
    /// The file's IPTC-IIM records (a TIFF's tag 33723, a JPEG's Photoshop resource 0x0404).
    pub iptc: Option<Vec<u8>>,
}

/// A TIFF's IPTC-NAA tag.
const IPTC: u16 = 33723;

/// ExtraSamples' value for associated (premultiplied) alpha; 2 is unassociated.
const ASSOCIATED_ALPHA: u32 = 1;

/// The EXIF, ICC profile, XMP, orientation and alpha kind of the TIFF or BigTIFF `src`.
pub fn read(src: &mut impl Source) -> FromFile {
    let Some((layout, first)) = Layout::of_file(src) else {
        return FromFile::default();
    };
    let Some(dir) = ifd::read_dir_in(src, layout, first, DEPTH) else {
        return FromFile::default();
    };
    let order = layout.order;
    FromFile {
        icc: dir.get(ICC).map(|e| e.data.clone()),
        xmp: dir.get(ifd::XMP).map(|e| e.data.clone()),
        xmp_read: true,
        orientation: dir
            .get(ifd::ORIENTATION)
            .and_then(|e| e.number(order))
            .and_then(|v| u8::try_from(v).ok())
            .filter(|v| (1..=8).contains(v)),
        associated_alpha: dir
            .get(EXTRA_SAMPLES)
            .and_then(|e| e.number(order))
            .is_some_and(|v| v == ASSOCIATED_ALPHA),
        iptc: dir.get(IPTC).map(|e| e.data[..iim_len(&e.data)].to_vec()),
        exif: exif_of(dir, order),
    }
}

/// How many bytes of `data` its IPTC-IIM datasets take: the padding to whole LONGs that the
/// tag's writers add after the last one is left out. Each dataset is a tag marker (0x1C), a
/// record and dataset number, and a size: two bytes, or where the top bit is set, that many
/// bytes of size after them (the extended form).
fn iim_len(data: &[u8]) -> usize {
    let mut at = 0;
    while data.get(at) == Some(&0x1C) && at + 5 <= data.len() {
        let size = u16::from_be_bytes([data[at + 3], data[at + 4]]) as usize;
        let (head, len) = match size & 0x8000 {
            0 => (5, size),
            _ => {
                let n = size & 0x7FFF;
                let bytes = data.get(at + 5..at + 5 + n).unwrap_or_default();
                let len = bytes
                    .iter()
                    .fold(0usize, |v, &b| v.saturating_mul(256) | b as usize);
                (5 + n, len)
            }
        };
        let end = at.saturating_add(head).saturating_add(len);
        if end > data.len() {
            return data.len();
        }
        at = end;
    }
    if at == 0 {
        data.len()
    } else {
        at
    }
}

/// The tag that says what a pixel's samples beyond its colour are.
const EXTRA_SAMPLES: u16 = 338;

/// The EXIF structure of a TIFF's first directory, or None if it tells nothing. BigTIFF's
/// 8-byte values, which EXIF cannot hold, are left out.
fn exif_of(dir: Dir, order: Order) -> Option<Vec<u8>> {
    let telling = dir.entries.iter().any(|e| TELLING.contains(&e.tag));
    if dir.subs.is_empty() && !telling {
        return None;
    }
    fn classic(dir: Dir) -> Dir {
        Dir {
            entries: dir.entries.into_iter().filter(Entry::classic).collect(),
            subs: dir.subs.into_iter().map(|(t, d)| (t, classic(d))).collect(),
        }
    }
    let exif = classic(Dir {
        entries: dir
            .entries
            .into_iter()
            .filter(|e| DESCRIPTIVE.contains(&e.tag))
            .collect(),
        subs: dir
            .subs
            .into_iter()
            .filter(|(t, _)| matches!(*t, ifd::EXIF_IFD | ifd::GPS_IFD))
            .collect(),
    });
    let mut blob = order.header(8);
    ifd::write_dir(&mut blob, 0, order, &exif, 0);
    Some(blob)
}

/// `data` of an entry of type `typ` in byte order `to` instead of `from`.
fn reorder(data: &mut [u8], typ: u16, from: Order, to: Order) {
    if from == to {
        return;
    }
    // RATIONAL and SRATIONAL are two LONGs; DOUBLE one 8-byte number.
    let width = match typ {
        3 | 8 => 2,
        4 | 5 | 9 | 10 | 11 | 13 => 4,
        12 => 8,
        _ => return,
    };
    for v in data.chunks_exact_mut(width) {
        v.reverse();
    }
}

fn reorder_dir(dir: &mut Dir, from: Order, to: Order) {
    for e in &mut dir.entries {
        reorder(&mut e.data, e.typ, from, to);
    }
    for (_, sub) in &mut dir.subs {
        reorder_dir(sub, from, to);
    }
}

/// The TIFF `bytes` with the EXIF's fields and directories, the XMP packet (tag 700) and the
/// IPTC records (tag 33723, as bytes) in its first directory. Only the EXIF's first directory
/// and those it points to are read: the EXIF written holds no thumbnail (a second directory).
pub fn merge(bytes: Vec<u8>, blobs: Blobs, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
    merge_page(bytes, 0, blobs, notes)
}

/// `merge` into the directory of page `page` (0 the first) of a TIFF of several pages: the
/// directory is written anew at the end, in the chain where the old one was.
pub fn merge_page(
    mut bytes: Vec<u8>,
    page: usize,
    Blobs { exif, xmp, iptc }: Blobs,
    notes: &mut Vec<String>,
) -> Result<Vec<u8>, String> {
    let Some((order, first)) = ifd::header(&bytes) else {
        notes.push("the TIFF encoder wrote a BigTIFF; EXIF, XMP and IPTC were not written".into());
        return Ok(bytes);
    };
    let unreadable = "the TIFF encoder wrote an unreadable directory";
    // The link that leads to the page's directory: the header's, or the page before's.
    let (mut link, mut at) = (4usize, first);
    for _ in 0..page {
        let n = order.u16(bytes.get(at as usize..).ok_or(unreadable)?) as usize;
        link = at as usize + 2 + 12 * n;
        at = order.u32(bytes.get(link..link + 4).ok_or(unreadable)?);
    }
    let (entries, next) = ifd::read_ifd(&mut bytes.as_slice(), order, at).ok_or(unreadable)?;
    let mut dir = Dir {
        entries,
        subs: Vec::new(),
    };
    if let Some(blob) = exif {
        let (from, at) = ifd::header(blob).ok_or("the EXIF to write has no TIFF header")?;
        if let Some(mut e) = ifd::read_dir(&mut &blob[..], from, at, DEPTH) {
            reorder_dir(&mut e, from, order);
            for entry in e.entries.into_iter().filter(|e| !LAYOUT.contains(&e.tag)) {
                dir.set(entry);
            }
            dir.subs = e.subs;
        }
    }
    if let Some(x) = xmp {
        dir.set(Entry {
            tag: ifd::XMP,
            typ: 1,
            count: u32::try_from(x.len()).map_err(|_| "XMP larger than a TIFF holds")?,
            data: x.to_vec(),
        });
    }
    if let Some(i) = iptc {
        // LONGs, as Photoshop and ExifTool write the tag (readers take its bytes as they lie,
        // without turning them for byte order), padded to whole LONGs.
        let mut data = i.to_vec();
        data.resize(i.len().next_multiple_of(4), 0);
        dir.set(Entry {
            tag: IPTC,
            typ: 4,
            count: u32::try_from(data.len() / 4).map_err(|_| "IPTC larger than a TIFF holds")?,
            data,
        });
    }
    if bytes.len() % 2 == 1 {
        bytes.push(0);
    }
    let base = u32::try_from(bytes.len()).map_err(|_| "larger than a TIFF holds")?;
    let mut tail = Vec::new();
    let at = ifd::write_dir(&mut tail, base, order, &dir, next);
    u32::try_from(bytes.len() + tail.len()).map_err(|_| "larger than a TIFF holds")?;
    bytes.extend_from_slice(&tail);
    bytes[link..link + 4].copy_from_slice(&order.put_u32(at));
    Ok(bytes)
}

#[cfg(test)]
mod iim_tests {
    use super::iim_len;

    #[test]
    fn the_padding_after_the_last_dataset_is_left_out() {
        let records = b"\x1C\x02\x00\x00\x02\x00\x04\x1C\x02\x19\x00\x03abc";
        let mut padded = records.to_vec();
        padded.extend_from_slice(&[0, 0]);
        assert_eq!(iim_len(&padded), records.len());
        // The extended form: a size of two bytes after the header.
        let mut extended = b"\x1C\x08\x0A\x80\x02\x00\x03xyz".to_vec();
        extended.push(0);
        assert_eq!(iim_len(&extended), 10);
        // Not IIM at all, or cut short: kept whole.
        assert_eq!(iim_len(b"abcd"), 4);
        assert_eq!(iim_len(b"\x1C\x02\x19\x00\x09ab"), 7);
    }
}
