//! The TIFF structure that EXIF is made of: a header naming the byte order, then image file
//! directories (IFDs) of 12-byte entries whose values sit inline (4 bytes or less) or at an
//! offset. Read from any byte source that can be read at an offset (an EXIF blob in memory, a
//! TIFF file on disk, BigTIFF too: 20-byte entries, 8-byte counts and offsets), patched in
//! place, and written back out (classic TIFF) at any base offset. Every read is bounds-checked:
//! arbitrary bytes give None, never a panic.

use std::io::{Read, Seek, SeekFrom};

/// The tags whose value is the offset of another IFD: EXIF, GPS and interoperability.
pub const EXIF_IFD: u16 = 0x8769;
pub const GPS_IFD: u16 = 0x8825;
pub const INTEROP_IFD: u16 = 0xA005;
pub const ORIENTATION: u16 = 0x0112;
pub const PIXEL_X_DIMENSION: u16 = 0xA002;
/// ColorSpace, in the Exif IFD: 1 sRGB, 0xFFFF uncalibrated (a camera's Adobe RGB mode).
pub const COLOR_SPACE: u16 = 0xA001;
pub const PIXEL_Y_DIMENSION: u16 = 0xA003;
pub const XMP: u16 = 700;

/// The most bytes one value may take: far above any real EXIF field, and a bound on what a
/// corrupt count can make gblur allocate.
const MAX_VALUE: u64 = 16 << 20;
/// The most entries one IFD may have, for the same reason.
const MAX_ENTRIES: u16 = 4096;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Little,
    Big,
}

/// A classic TIFF structure's byte order and the offset of its first directory, from its
/// 8-byte header; None where `blob` does not start with a whole one.
pub fn header(blob: &[u8]) -> Option<(Order, u32)> {
    let order = Order::from_header(blob)?;
    Some((order, order.u32(blob.get(4..8)?)))
}

/// How a TIFF file lays out its directories: classic (12-byte entries, 4-byte offsets) or
/// BigTIFF (20-byte entries, 8-byte counts and offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub order: Order,
    pub big: bool,
}

impl Layout {
    /// The layout and first directory's offset a file's header announces (`II*\0`, `MM\0*`,
    /// or BigTIFF's `II+\0` / `MM\0+` with offset size 8).
    pub fn of_file(src: &mut impl Source) -> Option<(Layout, u64)> {
        let head = src.read_at(0, 8)?;
        if let Some((order, first)) = header(&head) {
            return Some((Layout { order, big: false }, first as u64));
        }
        let order = match head[..4] {
            [0x49, 0x49, 43, 0] => Order::Little,
            [0x4D, 0x4D, 0, 43] => Order::Big,
            _ => return None,
        };
        if order.u16(&head[4..6]) != 8 || order.u16(&head[6..8]) != 0 {
            return None;
        }
        let first = order.u64(&src.read_at(8, 8)?);
        Some((Layout { order, big: true }, first))
    }

    /// The bytes of an entry, of the entry count, and of an inline value.
    fn sizes(self) -> (u64, u64, u64) {
        match self.big {
            false => (12, 2, 4),
            true => (20, 8, 8),
        }
    }
}

impl Order {
    /// The byte order a classic TIFF header announces.
    pub fn from_header(head: &[u8]) -> Option<Order> {
        match head.get(..4)? {
            [0x49, 0x49, 42, 0] => Some(Order::Little),
            [0x4D, 0x4D, 0, 42] => Some(Order::Big),
            _ => None,
        }
    }

    pub fn u64(self, b: &[u8]) -> u64 {
        let b: [u8; 8] = b[..8].try_into().expect("eight bytes");
        match self {
            Order::Little => u64::from_le_bytes(b),
            Order::Big => u64::from_be_bytes(b),
        }
    }

    pub fn u16(self, b: &[u8]) -> u16 {
        let b = [b[0], b[1]];
        match self {
            Order::Little => u16::from_le_bytes(b),
            Order::Big => u16::from_be_bytes(b),
        }
    }

    pub fn u32(self, b: &[u8]) -> u32 {
        let b = [b[0], b[1], b[2], b[3]];
        match self {
            Order::Little => u32::from_le_bytes(b),
            Order::Big => u32::from_be_bytes(b),
        }
    }

    pub fn put_u16(self, v: u16) -> [u8; 2] {
        match self {
            Order::Little => v.to_le_bytes(),
            Order::Big => v.to_be_bytes(),
        }
    }

    pub fn put_u32(self, v: u32) -> [u8; 4] {
        match self {
            Order::Little => v.to_le_bytes(),
            Order::Big => v.to_be_bytes(),
        }
    }

    /// The 8-byte header of a classic TIFF whose first IFD is at `first`.
    pub fn header(self, first: u32) -> Vec<u8> {
        let mut h = match self {
            Order::Little => vec![0x49, 0x49, 42, 0],
            Order::Big => vec![0x4D, 0x4D, 0, 42],
        };
        h.extend_from_slice(&self.put_u32(first));
        h
    }
}

/// The size in bytes of one value of a TIFF field type; None for a type TIFF does not define.
fn type_size(typ: u16) -> Option<u64> {
    Some(match typ {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

/// One field: its tag, type, count and value bytes (in the byte order of the structure it
/// came from).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tag: u16,
    pub typ: u16,
    pub count: u32,
    pub data: Vec<u8>,
}

impl Entry {
    /// The first value as an unsigned number, for BYTE, SHORT and LONG fields.
    pub fn number(&self, order: Order) -> Option<u32> {
        match self.typ {
            1 => self.data.first().map(|&b| b as u32),
            3 => (self.data.len() >= 2).then(|| order.u16(&self.data) as u32),
            4 | 13 => (self.data.len() >= 4).then(|| order.u32(&self.data)),
            _ => None,
        }
    }

    /// The first value as an offset: `number`, or a BigTIFF LONG8 or IFD8.
    pub fn offset(&self, order: Order) -> Option<u64> {
        match self.typ {
            16 | 18 => (self.data.len() >= 8).then(|| order.u64(&self.data)),
            _ => self.number(order).map(u64::from),
        }
    }

    /// Whether a classic TIFF structure (EXIF) can hold it: BigTIFF's 8-byte integer types
    /// cannot.
    pub fn classic(&self) -> bool {
        !matches!(self.typ, 16..=18)
    }
}

/// A directory and the directories its pointer tags lead to (EXIF, GPS, interoperability),
/// which are written wherever the directory is written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dir {
    /// Every entry but the pointers to `subs`.
    pub entries: Vec<Entry>,
    pub subs: Vec<(u16, Dir)>,
}

impl Dir {
    pub fn get(&self, tag: u16) -> Option<&Entry> {
        self.entries.iter().find(|e| e.tag == tag)
    }

    #[cfg(test)]
    pub fn sub(&self, tag: u16) -> Option<&Dir> {
        self.subs.iter().find(|(t, _)| *t == tag).map(|(_, d)| d)
    }

    /// Replaces the entry of `e.tag`, or adds it.
    pub fn set(&mut self, e: Entry) {
        self.entries.retain(|x| x.tag != e.tag);
        self.entries.push(e);
    }
}

/// Something a TIFF structure can be read from, at an offset.
pub trait Source {
    fn read_at(&mut self, offset: u64, len: usize) -> Option<Vec<u8>>;
}

impl Source for &[u8] {
    fn read_at(&mut self, offset: u64, len: usize) -> Option<Vec<u8>> {
        let start = usize::try_from(offset).ok()?;
        self.get(start..start.checked_add(len)?).map(<[u8]>::to_vec)
    }
}

/// A seekable reader (a TIFF file being decoded).
pub struct Reader<R>(pub R);

impl<R: Read + Seek> Source for Reader<R> {
    fn read_at(&mut self, offset: u64, len: usize) -> Option<Vec<u8>> {
        self.0.seek(SeekFrom::Start(offset)).ok()?;
        let mut v = vec![0; len];
        self.0.read_exact(&mut v).ok()?;
        Some(v)
    }
}

/// Reads the IFD at `offset` of a classic TIFF structure: its entries (values resolved) and
/// the offset of the next IFD. Entries of unknown types and values that cannot be read are
/// left out; an IFD whose entry table cannot be read is None.
pub fn read_ifd(src: &mut impl Source, order: Order, offset: u32) -> Option<(Vec<Entry>, u32)> {
    let layout = Layout { order, big: false };
    let (entries, next) = read_ifd_in(src, layout, offset as u64)?;
    Some((entries, u32::try_from(next).ok()?))
}

/// `read_ifd` in either layout, with 8-byte offsets.
pub fn read_ifd_in(
    src: &mut impl Source,
    layout: Layout,
    offset: u64,
) -> Option<(Vec<Entry>, u64)> {
    let order = layout.order;
    let (entry_len, count_len, inline) = layout.sizes();
    let head = src.read_at(offset, count_len as usize)?;
    let n = match layout.big {
        false => order.u16(&head) as u64,
        true => order.u64(&head),
    };
    if n > MAX_ENTRIES as u64 {
        return None;
    }
    let table = src.read_at(
        offset.checked_add(count_len)?,
        (n * entry_len + inline) as usize,
    )?;
    let entries = table
        .chunks_exact(entry_len as usize)
        .filter_map(|raw| read_entry(src, layout, raw))
        .collect();
    let tail = &table[(n * entry_len) as usize..];
    let next = match layout.big {
        false => order.u32(tail) as u64,
        true => order.u64(tail),
    };
    Some((entries, next))
}

/// One directory entry from its `raw` bytes, its value read from where it lies; None for an
/// entry of an unknown type, a count past u32, a value over `MAX_VALUE` or out of the file.
fn read_entry(src: &mut impl Source, layout: Layout, raw: &[u8]) -> Option<Entry> {
    let order = layout.order;
    let (entry_len, _, inline) = layout.sizes();
    let (tag, typ) = (order.u16(raw), order.u16(&raw[2..]));
    let count = match layout.big {
        false => order.u32(&raw[4..]) as u64,
        true => order.u64(&raw[4..]),
    };
    let value = &raw[entry_len as usize - inline as usize..];
    let size = type_size(typ)?.checked_mul(count)?;
    let count = u32::try_from(count).ok()?;
    let data = if size <= inline {
        value[..size as usize].to_vec()
    } else if size <= MAX_VALUE {
        let at = match layout.big {
            false => order.u32(value) as u64,
            true => order.u64(value),
        };
        src.read_at(at, size as usize)?
    } else {
        return None;
    };
    Some(Entry {
        tag,
        typ,
        count,
        data,
    })
}

/// Reads the directory at `offset` of a classic TIFF structure with its EXIF, GPS and
/// interoperability directories. `depth` bounds the recursion (a corrupt file may point a
/// directory at itself).
pub fn read_dir(src: &mut impl Source, order: Order, offset: u32, depth: u32) -> Option<Dir> {
    read_dir_in(src, Layout { order, big: false }, offset as u64, depth)
}

/// `read_dir` in either layout.
pub fn read_dir_in(src: &mut impl Source, layout: Layout, offset: u64, depth: u32) -> Option<Dir> {
    let (entries, _) = read_ifd_in(src, layout, offset)?;
    let mut dir = Dir::default();
    for e in entries {
        let pointer = matches!(e.tag, EXIF_IFD | GPS_IFD | INTEROP_IFD);
        match e.offset(layout.order) {
            Some(at) if pointer && depth > 0 => {
                if let Some(sub) = read_dir_in(src, layout, at, depth - 1) {
                    dir.subs.push((e.tag, sub));
                }
            }
            _ if pointer => {}
            _ => dir.entries.push(e),
        }
    }
    Some(dir)
}

/// The bytes `dir`'s values too long for their entry take after it (each padded to even).
fn out_of_line_len(dir: &Dir) -> usize {
    dir.entries
        .iter()
        .filter(|e| e.data.len() > 4)
        .map(|e| e.data.len().next_multiple_of(2))
        .sum()
}

/// The bytes `dir` and its sub-directories take when written.
fn written_len(dir: &Dir) -> usize {
    let own = 2 + 12 * (dir.entries.len() + dir.subs.len()) + 4;
    let values = out_of_line_len(dir);
    own + values + dir.subs.iter().map(|(_, d)| written_len(d)).sum::<usize>()
}

/// Appends `dir` to `out`, whose byte 0 lies at offset `base` of the structure (so offsets
/// written are `base + position in out`), with `next` as its next-IFD offset. Returns the
/// offset `dir` was written at. Entries are written in ascending tag order, as TIFF requires.
pub fn write_dir(out: &mut Vec<u8>, base: u32, order: Order, dir: &Dir, next: u32) -> u32 {
    if out.len() % 2 == 1 {
        out.push(0);
    }
    let at = base + out.len() as u32;
    let count = dir.entries.len() + dir.subs.len();
    let mut data_at = at + (2 + 12 * count + 4) as u32;
    // Where each sub-directory will go: after this directory's out-of-line values.
    let values = out_of_line_len(dir);
    let mut sub_at = data_at + values as u32;
    let mut rows: Vec<(u16, [u8; 12])> = Vec::with_capacity(count);
    let mut blobs = Vec::with_capacity(values);
    for e in &dir.entries {
        let mut row = [0u8; 12];
        row[..2].copy_from_slice(&order.put_u16(e.tag));
        row[2..4].copy_from_slice(&order.put_u16(e.typ));
        row[4..8].copy_from_slice(&order.put_u32(e.count));
        if e.data.len() <= 4 {
            row[8..8 + e.data.len()].copy_from_slice(&e.data);
        } else {
            row[8..].copy_from_slice(&order.put_u32(data_at));
            blobs.extend_from_slice(&e.data);
            if e.data.len() % 2 == 1 {
                blobs.push(0);
            }
            data_at += e.data.len().next_multiple_of(2) as u32;
        }
        rows.push((e.tag, row));
    }
    for (tag, sub) in &dir.subs {
        let mut row = [0u8; 12];
        row[..2].copy_from_slice(&order.put_u16(*tag));
        row[2..4].copy_from_slice(&order.put_u16(4));
        row[4..8].copy_from_slice(&order.put_u32(1));
        row[8..].copy_from_slice(&order.put_u32(sub_at));
        rows.push((*tag, row));
        sub_at += written_len(sub) as u32;
    }
    rows.sort_by_key(|(tag, _)| *tag);
    out.extend_from_slice(&order.put_u16(count as u16));
    for (_, row) in &rows {
        out.extend_from_slice(row);
    }
    out.extend_from_slice(&order.put_u32(next));
    out.extend_from_slice(&blobs);
    for (_, sub) in &dir.subs {
        write_dir(out, base, order, sub, 0);
    }
    at
}

/// Where a SHORT or LONG entry of `tag` in the IFD at `ifd` keeps its (first) value, and its
/// type: for patching the value in place.
fn find_inline(b: &[u8], order: Order, ifd: u32, tag: u16) -> Option<(usize, u16)> {
    let ifd = ifd as usize;
    let n = order.u16(b.get(ifd..ifd + 2)?) as usize;
    (0..n).find_map(|i| {
        let at = ifd + 2 + 12 * i;
        let raw = b.get(at..at + 12)?;
        let typ = order.u16(&raw[2..]);
        (order.u16(raw) == tag && matches!(typ, 3 | 4)).then_some((at + 8, typ))
    })
}

/// Sets the SHORT or LONG value of `tag` in the IFD at `ifd` of the blob `b`, in place;
/// false if the IFD has no such entry or the value does not fit its type.
pub fn patch_number(b: &mut [u8], order: Order, ifd: u32, tag: u16, value: u32) -> bool {
    let Some((at, typ)) = find_inline(b, order, ifd, tag) else {
        return false;
    };
    match typ {
        3 => match u16::try_from(value) {
            Ok(v) => b[at..at + 2].copy_from_slice(&order.put_u16(v)),
            Err(_) => return false,
        },
        _ => b[at..at + 4].copy_from_slice(&order.put_u32(value)),
    }
    true
}

/// The value of the pointer `tag` in the IFD at `ifd` of the blob `b`.
pub fn pointer(b: &[u8], order: Order, ifd: u32, tag: u16) -> Option<u32> {
    let (at, typ) = find_inline(b, order, ifd, tag)?;
    Some(match typ {
        3 => order.u16(&b[at..]) as u32,
        _ => order.u32(&b[at..]),
    })
}

/// The offset/length pairs of tags by which a directory locates its image's bytes: a JPEG
/// thumbnail (JPEGInterchangeFormat and its length), or an uncompressed one's strips or tiles.
const IMAGE_DATA: [(u16, u16); 3] = [(0x0201, 0x0202), (0x0111, 0x0117), (0x0144, 0x0145)];
/// The most directories followed after the first one of an EXIF structure (a corrupt one may
/// chain them without end).
const MAX_CHAIN: usize = 16;

/// Every value of a BYTE, SHORT or LONG entry, as numbers.
fn numbers(e: &Entry, order: Order) -> Vec<u64> {
    match e.typ {
        1 => e.data.iter().map(|&b| b as u64).collect(),
        3 => e
            .data
            .chunks_exact(2)
            .map(|c| order.u16(c) as u64)
            .collect(),
        4 | 13 => e
            .data
            .chunks_exact(4)
            .map(|c| order.u32(c) as u64)
            .collect(),
        _ => Vec::new(),
    }
}

/// The bytes from offset `from`, `len` of them, as a range (which may reach past a blob's end).
fn span(from: u64, len: u64) -> std::ops::Range<usize> {
    let start = usize::try_from(from).unwrap_or(usize::MAX);
    start..start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
}

/// The byte ranges of the blob `b` that the classic IFD at `ifd` takes: its entry table (with
/// the next-IFD offset), its values too long for their entries, and the image bytes its
/// offset/length tags locate; and the offset of the next IFD. None where the table cannot be
/// read.
fn extent(b: &[u8], order: Order, ifd: u32) -> Option<(Vec<std::ops::Range<usize>>, u32)> {
    let at = ifd as usize;
    let n = order.u16(b.get(at..at.checked_add(2)?)?) as usize;
    let end = at.checked_add(2 + 12 * n + 4)?;
    let table = b.get(at..end)?;
    let mut ranges: Vec<_> = std::iter::once(at..end).collect();
    for row in table[2..2 + 12 * n].chunks_exact(12) {
        let (typ, count) = (order.u16(&row[2..]), order.u32(&row[4..]) as u64);
        let Some(size) = type_size(typ).and_then(|s| s.checked_mul(count)) else {
            continue;
        };
        if size > 4 {
            ranges.push(span(order.u32(&row[8..]) as u64, size));
        }
    }
    let entries = read_ifd(&mut &b[..], order, ifd)
        .map(|(e, _)| e)
        .unwrap_or_default();
    let values = |tag: u16| {
        entries
            .iter()
            .find(|e| e.tag == tag)
            .map(|e| numbers(e, order))
            .unwrap_or_default()
    };
    for (offsets, lengths) in IMAGE_DATA {
        for (from, len) in values(offsets).into_iter().zip(values(lengths)) {
            ranges.push(span(from, len));
        }
    }
    Some((ranges, order.u32(&table[2 + 12 * n..])))
}

/// Marks in `kept` the bytes the IFD at `ifd` and the directories its pointer tags lead to
/// (EXIF, GPS, interoperability) take; `depth` bounds the recursion.
fn mark_tree(b: &[u8], order: Order, ifd: u32, depth: u32, kept: &mut [bool]) {
    let Some((ranges, _)) = extent(b, order, ifd) else {
        return;
    };
    for r in ranges {
        let r = r.start.min(kept.len())..r.end.min(kept.len());
        kept[r].fill(true);
    }
    if depth == 0 {
        return;
    }
    for tag in [EXIF_IFD, GPS_IFD, INTEROP_IFD] {
        if let Some(sub) = pointer(b, order, ifd, tag) {
            mark_tree(b, order, sub, depth - 1, kept);
        }
    }
}

/// Removes from the EXIF structure `b` every directory after its first one (at `first`):
/// IFD1, the thumbnail's, and any chained after it. The first directory's next-IFD offset
/// becomes 0; the removed directories' tables, values and the image bytes they locate (the
/// thumbnail itself) are zeroed, except bytes the first directory or its EXIF, GPS and
/// interoperability directories take too, and the blob is cut where they end it. Everything
/// kept stays at its offset (a maker note's own offsets stay valid). Returns whether a
/// directory was removed.
pub fn drop_following(b: &mut Vec<u8>, order: Order, first: u32) -> bool {
    let Some((_, mut next)) = extent(b, order, first) else {
        return false;
    };
    let mut kept = vec![false; b.len()];
    kept[..b.len().min(8)].fill(true);
    mark_tree(b, order, first, 4, &mut kept);
    let mut gone = vec![false; b.len()];
    let mut seen = vec![first];
    while next != 0 && !seen.contains(&next) && seen.len() <= MAX_CHAIN {
        seen.push(next);
        let Some((ranges, after)) = extent(b, order, next) else {
            break;
        };
        for r in ranges {
            let r = r.start.min(gone.len())..r.end.min(gone.len());
            gone[r].fill(true);
        }
        next = after;
    }
    // The link to the second directory: the four bytes after the first one's entries.
    let at = first as usize;
    if let Some(n) = b.get(at..at + 2).map(|c| order.u16(c) as usize) {
        let link = at + 2 + 12 * n;
        if let Some(l) = b.get_mut(link..link + 4) {
            l.fill(0);
        }
    }
    for (i, byte) in b.iter_mut().enumerate() {
        if gone[i] && !kept[i] {
            *byte = 0;
        }
    }
    // Cut the removed bytes off the end, with the zero padding between them.
    let mut end = b.len();
    while end > 0
        && !kept[end - 1]
        && (gone[end - 1] || (b[end - 1] == 0 && end >= 2 && gone[end - 2]))
    {
        end -= 1;
    }
    b.truncate(end);
    seen.len() > 1 && gone.iter().any(|&g| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(tag: u16, order: Order, v: u16) -> Entry {
        let mut data = order.put_u16(v).to_vec();
        data.resize(2, 0);
        Entry {
            tag,
            typ: 3,
            count: 1,
            data,
        }
    }

    fn ascii(tag: u16, s: &str) -> Entry {
        let mut data = s.as_bytes().to_vec();
        data.push(0);
        Entry {
            tag,
            typ: 2,
            count: data.len() as u32,
            data,
        }
    }

    #[test]
    fn writes_and_reads_back_nested_directories_in_both_orders() {
        for order in [Order::Little, Order::Big] {
            let gps = Dir {
                entries: vec![ascii(1, "N")],
                subs: vec![],
            };
            let exif = Dir {
                entries: vec![
                    ascii(0x9003, "2024:05:01 10:00:00"),
                    short(0xA002, order, 7),
                ],
                subs: vec![],
            };
            let dir = Dir {
                entries: vec![short(ORIENTATION, order, 6), ascii(0x010F, "Maker")],
                subs: vec![(EXIF_IFD, exif), (GPS_IFD, gps)],
            };
            let mut blob = order.header(8);
            write_dir(&mut blob, 0, order, &dir, 0);
            let back = read_dir(&mut blob.as_slice(), order, 8, 4).unwrap();
            assert_eq!(back.get(0x010F), dir.get(0x010F));
            assert_eq!(back.sub(GPS_IFD), dir.sub(GPS_IFD));
            assert_eq!(back.sub(EXIF_IFD), dir.sub(EXIF_IFD));
            assert!(patch_number(&mut blob, order, 8, ORIENTATION, 1));
            let back = read_dir(&mut blob.as_slice(), order, 8, 4).unwrap();
            assert_eq!(back.get(ORIENTATION).unwrap().number(order), Some(1));
            let exif_at = pointer(&blob, order, 8, EXIF_IFD).unwrap();
            assert!(!patch_number(&mut blob, order, exif_at, 0xA002, 70000));
        }
    }

    #[test]
    fn the_directories_after_the_first_go_with_the_thumbnail() {
        for order in [Order::Little, Order::Big] {
            let exif = Dir {
                entries: vec![ascii(0x9003, "2024:05:01 10:00:00")],
                subs: vec![],
            };
            let dir = Dir {
                entries: vec![short(ORIENTATION, order, 6), ascii(0x010F, "Maker")],
                subs: vec![(EXIF_IFD, exif)],
            };
            let mut blob = order.header(8);
            write_dir(&mut blob, 0, order, &dir, 0);
            if blob.len() % 2 == 1 {
                blob.push(0);
            }
            // IFD1: the thumbnail's offset and length, then the thumbnail.
            let link = 8 + 2 + 12 * 3;
            let ifd1_at = blob.len() as u32;
            blob[link..link + 4].copy_from_slice(&order.put_u32(ifd1_at));
            let thumb = b"\xFF\xD8 the unblurred picture \xFF\xD9";
            blob.extend_from_slice(&order.put_u16(2));
            for (tag, v) in [(0x0201u16, ifd1_at + 30), (0x0202, thumb.len() as u32)] {
                blob.extend_from_slice(&order.put_u16(tag));
                blob.extend_from_slice(&order.put_u16(4));
                blob.extend_from_slice(&order.put_u32(1));
                blob.extend_from_slice(&order.put_u32(v));
            }
            blob.extend_from_slice(&order.put_u32(0));
            blob.extend_from_slice(thumb);
            let before = read_dir(&mut blob.as_slice(), order, 8, 4).unwrap();
            assert!(drop_following(&mut blob, order, 8));
            assert_eq!(blob.len(), ifd1_at as usize);
            assert_eq!(read_ifd(&mut blob.as_slice(), order, 8).unwrap().1, 0);
            assert_eq!(read_dir(&mut blob.as_slice(), order, 8, 4).unwrap(), before);
            assert!(!drop_following(&mut blob, order, 8));
            // A chain that leads back to the first directory removes nothing of it.
            blob[link..link + 4].copy_from_slice(&order.put_u32(8));
            assert!(!drop_following(&mut blob, order, 8));
            assert_eq!(read_dir(&mut blob.as_slice(), order, 8, 4).unwrap(), before);
        }
    }

    #[test]
    fn corrupt_structures_are_refused_not_followed() {
        let order = Order::Little;
        // An IFD that points its EXIF directory at itself.
        let mut blob = order.header(8);
        blob.extend_from_slice(&order.put_u16(1));
        blob.extend_from_slice(&order.put_u16(EXIF_IFD));
        blob.extend_from_slice(&order.put_u16(4));
        blob.extend_from_slice(&order.put_u32(1));
        blob.extend_from_slice(&order.put_u32(8));
        blob.extend_from_slice(&order.put_u32(0));
        let dir = read_dir(&mut blob.as_slice(), order, 8, 3).unwrap();
        assert!(dir.sub(EXIF_IFD).unwrap().sub(EXIF_IFD).is_some());
        // A table that runs past the end.
        assert!(read_dir(&mut &blob[..12], order, 8, 3).is_none());
    }
}
