//! The pages of a multi-page TIFF (a z-stack, a time series, a scanned document): the chain
//! of image file directories its header starts, less the directories that are no page
//! (reduced-resolution overviews, transparency masks), and any one page seen as a TIFF of that
//! page alone. A page view changes two numbers of the file, the header's link to its first
//! directory and the page's link to the next, so that every reader gblur has (the `image`
//! crate's decoder, the quirks, the metadata reader) takes that page as the whole file,
//! with no copy of its pixels.

use crate::codec::metadata::ifd::{Layout, Source};
use std::collections::HashSet;

/// Where a chain of directories stops being followed: a longer one (or one that loops)
/// counts as this many pages.
pub const MOST_PAGES: usize = 10_000;

/// A TIFF's pages: where each page's directory starts, and the directories that are no page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pages {
    layout: Layout,
    offsets: Vec<u64>,
    not_pages: NotPages,
}

/// The directories of a TIFF that are no page of their own, which gblur neither blurs nor
/// writes: reduced-resolution versions of a page (overviews, the levels of a pyramid) and
/// transparency masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotPages {
    pub overviews: usize,
    pub masks: usize,
}

impl NotPages {
    /// The report's note where there are any: they were not kept.
    pub fn note(&self) -> Option<String> {
        let kinds = [
            (
                self.overviews,
                "reduced-resolution image (overview)",
                "reduced-resolution images (overviews)",
            ),
            (self.masks, "transparency mask", "transparency masks"),
        ];
        let held: Vec<String> = kinds
            .into_iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
            .collect();
        (!held.is_empty()).then(|| {
            format!(
                "the TIFF holds {} beside its full-resolution pages, which were not kept: only the full-resolution pages are blurred and written",
                held.join(" and ")
            )
        })
    }
}

/// What a directory holds, from its NewSubfileType (bit 0: a reduced-resolution version of
/// another image; bit 2: a transparency mask; bit 1, a page of a multi-page document, is a
/// page) or the older SubfileType (2: reduced resolution; 1 and 3 are pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Subfile {
    Page,
    Overview,
    Mask,
}

const NEW_SUBFILE_TYPE: u16 = 254;
const SUBFILE_TYPE: u16 = 255;

impl Pages {
    /// The pages of the TIFF `src` (classic or BigTIFF), followed while the directories can be
    /// read; None where the header is no TIFF's. The first directory is always a page (every
    /// decoder reads it as the image); a later one is not where it is a reduced-resolution
    /// image or a transparency mask.
    pub fn read(src: &mut impl Source) -> Option<Pages> {
        let (layout, first) = Layout::of_file(src)?;
        let mut offsets = Vec::new();
        let mut not_pages = NotPages::default();
        let mut seen = HashSet::new();
        let mut at = first;
        while at != 0 && seen.len() < MOST_PAGES && seen.insert(at) {
            let Some(next_at) = next_field(src, layout, at) else {
                break;
            };
            let kind = match offsets.is_empty() {
                true => Subfile::Page,
                false => subfile(src, layout, at),
            };
            match kind {
                Subfile::Page => offsets.push(at),
                Subfile::Overview => not_pages.overviews += 1,
                Subfile::Mask => not_pages.masks += 1,
            }
            let Some(next) = src.read_at(next_at, pointer_len(layout)) else {
                break;
            };
            at = read_pointer(layout, &next);
        }
        (!offsets.is_empty()).then_some(Pages {
            layout,
            offsets,
            not_pages,
        })
    }

    /// How many pages the file holds (its full-resolution images).
    pub fn count(&self) -> usize {
        self.offsets.len()
    }

    /// The directories that are no page (overviews, masks).
    pub fn not_pages(&self) -> NotPages {
        self.not_pages
    }

    /// Runs `f` on `bytes` (the file these pages were read from) seen as a TIFF of page
    /// `page` alone, and puts the file back as it was after.
    pub fn with_page<R>(&self, bytes: &mut [u8], page: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let saved = self.patch(bytes, page);
        let result = f(bytes);
        self.restore(bytes, saved);
        result
    }

    /// `bytes` made a TIFF of page `page` alone, for good.
    pub fn single(&self, mut bytes: Vec<u8>, page: usize) -> Vec<u8> {
        self.patch(&mut bytes, page);
        bytes
    }

    /// The header's first-directory link and the page's next link set to show `page` alone;
    /// returns both fields' places and old bytes.
    fn patch(&self, bytes: &mut [u8], page: usize) -> [(usize, Vec<u8>); 2] {
        let n = pointer_len(self.layout);
        let head = if self.layout.big { 8 } else { 4 };
        let at = self.offsets[page];
        let next = next_field(&mut &*bytes, self.layout, at).expect("read when counted") as usize;
        let saved = [
            (head, bytes[head..head + n].to_vec()),
            (next, bytes[next..next + n].to_vec()),
        ];
        write_pointer(self.layout, &mut bytes[head..head + n], at);
        write_pointer(self.layout, &mut bytes[next..next + n], 0);
        saved
    }

    fn restore(&self, bytes: &mut [u8], saved: [(usize, Vec<u8>); 2]) {
        // The page's own field first: for page 0 of a file whose first directory links to
        // itself both are the header's, and the header's old value goes back last.
        for (at, old) in saved.into_iter().rev() {
            bytes[at..at + old.len()].copy_from_slice(&old);
        }
    }
}

/// Bytes of a link to a directory.
fn pointer_len(layout: Layout) -> usize {
    if layout.big {
        8
    } else {
        4
    }
}

fn read_pointer(layout: Layout, b: &[u8]) -> u64 {
    match layout.big {
        true => layout.order.u64(b),
        false => layout.order.u32(b) as u64,
    }
}

fn write_pointer(layout: Layout, b: &mut [u8], value: u64) {
    match layout.big {
        true => {
            let v = match layout.order {
                crate::codec::metadata::ifd::Order::Little => value.to_le_bytes(),
                crate::codec::metadata::ifd::Order::Big => value.to_be_bytes(),
            };
            b.copy_from_slice(&v);
        }
        false => b.copy_from_slice(&layout.order.put_u32(value as u32)),
    }
}

/// What the directory at `at` holds, from its NewSubfileType or SubfileType; a page where
/// neither can be read.
fn subfile(src: &mut impl Source, layout: Layout, at: u64) -> Subfile {
    // Entry count, entry, and the value at the entry's end.
    let (count_len, entry_len, inline) = match layout.big {
        true => (8usize, 20usize, 8usize),
        false => (2, 12, 4),
    };
    let Some(head) = src.read_at(at, count_len) else {
        return Subfile::Page;
    };
    let entries = match layout.big {
        true => layout.order.u64(&head),
        false => layout.order.u16(&head) as u64,
    };
    // Far above any real directory's entries; a corrupt count reads no more than this.
    let entries = entries.min(4096) as usize;
    let Some(table) = at
        .checked_add(count_len as u64)
        .and_then(|start| src.read_at(start, entries * entry_len))
    else {
        return Subfile::Page;
    };
    let (mut new, mut old) = (0u64, 0u64);
    for e in table.chunks_exact(entry_len) {
        let (tag, typ) = (layout.order.u16(e), layout.order.u16(&e[2..]));
        let value = &e[entry_len - inline..];
        let v = match typ {
            3 => layout.order.u16(value) as u64,
            4 | 13 => layout.order.u32(value) as u64,
            16 | 18 if layout.big => layout.order.u64(value),
            _ => continue,
        };
        match tag {
            NEW_SUBFILE_TYPE => new = v,
            SUBFILE_TYPE => old = v,
            _ => {}
        }
    }
    if new & 4 != 0 {
        Subfile::Mask
    } else if new & 1 != 0 || old == 2 {
        Subfile::Overview
    } else {
        Subfile::Page
    }
}

/// Where the directory at `at` keeps its link to the next: after its entry count and
/// entries. None where the count cannot be read.
fn next_field(src: &mut impl Source, layout: Layout, at: u64) -> Option<u64> {
    let (count_len, entry_len) = match layout.big {
        true => (8, 20),
        false => (2, 12),
    };
    let head = src.read_at(at, count_len)?;
    let entries = match layout.big {
        true => layout.order.u64(&head),
        false => layout.order.u16(&head) as u64,
    };
    let field = at
        .checked_add(count_len as u64)?
        .checked_add(entries.checked_mul(entry_len)?)?;
    // The link itself must lie inside the file.
    src.read_at(field, pointer_len(layout))?;
    Some(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use tiff::decoder::{Decoder, DecodingResult};
    use tiff::encoder::{colortype, TiffEncoder, TiffKind};
    use tiff::tags::Tag;

    /// A classic or BigTIFF file of `n` gray 8-bit pages of 3×2, page i filled with i.
    fn stack(n: u8, big: bool) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let pages: Vec<Vec<u8>> = (0..n).map(|i| vec![i; 6]).collect();
        if big {
            let mut e = TiffEncoder::new_big(&mut out).unwrap();
            for p in &pages {
                e.write_image::<colortype::Gray8>(3, 2, p).unwrap();
            }
        } else {
            let mut e = TiffEncoder::new(&mut out).unwrap();
            for p in &pages {
                e.write_image::<colortype::Gray8>(3, 2, p).unwrap();
            }
        }
        out.into_inner()
    }

    fn pixels(file: &[u8]) -> (Vec<u8>, bool) {
        let mut d = Decoder::new(Cursor::new(file)).unwrap();
        let DecodingResult::U8(v) = d.read_image().unwrap() else {
            panic!("8-bit")
        };
        (v, d.more_images())
    }

    #[test]
    fn every_page_is_seen_alone_and_the_file_is_put_back() {
        for big in [false, true] {
            let mut file = stack(5, big);
            let before = file.clone();
            let pages = Pages::read(&mut &file[..]).unwrap();
            assert_eq!(pages.count(), 5);
            for i in 0..5 {
                let (v, more) = pages.with_page(&mut file, i, pixels);
                assert_eq!(v, vec![i as u8; 6], "page {i}, big {big}");
                assert!(!more, "page {i} alone");
            }
            assert_eq!(file, before);
            let third = pages.single(file, 2);
            assert_eq!(pixels(&third).0, vec![2; 6]);
        }
    }

    #[test]
    fn a_chain_that_loops_or_breaks_ends_there() {
        let mut file = stack(3, false);
        let pages = Pages::read(&mut &file[..]).unwrap();
        // Page 2's link made to point back at page 0.
        let next = next_field(&mut &file[..], pages.layout, pages.offsets[2]).unwrap() as usize;
        let first = pages.offsets[0] as u32;
        file[next..next + 4].copy_from_slice(&first.to_le_bytes());
        assert_eq!(Pages::read(&mut &file[..]).unwrap().count(), 3);
        // A link past the end of the file.
        file[next..next + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Pages::read(&mut &file[..]).unwrap().count(), 3);
        assert!(Pages::read(&mut &b"not a tiff"[..]).is_none());
    }

    /// One directory of a file `write_levels` writes: its size, the value of every sample,
    /// and the NewSubfileType (a LONG) and SubfileType (a SHORT) it has.
    struct Level {
        size: (u32, u32),
        fill: u8,
        new: Option<u32>,
        old: Option<u16>,
    }

    fn write_levels<K: TiffKind>(e: &mut TiffEncoder<&mut Cursor<Vec<u8>>, K>, levels: &[Level]) {
        for l in levels {
            let mut image = e.new_image::<colortype::Gray8>(l.size.0, l.size.1).unwrap();
            if let Some(v) = l.new {
                image.encoder().write_tag(Tag::NewSubfileType, v).unwrap();
            }
            if let Some(v) = l.old {
                image.encoder().write_tag(Tag::SubfileType, v).unwrap();
            }
            let samples = vec![l.fill; (l.size.0 * l.size.1) as usize];
            image.write_data(&samples).unwrap();
        }
    }

    #[test]
    fn overviews_and_masks_are_no_pages() {
        let level = |size, fill, new, old| Level {
            size,
            fill,
            new,
            old,
        };
        let levels = [
            level((8, 6), 10, None, None),
            // Overviews of the first page, by the new tag and the old.
            level((4, 3), 11, Some(1), None),
            level((2, 2), 12, None, Some(2)),
            // A transparency mask.
            level((8, 6), 13, Some(4), None),
            // A page of a document, and its overview.
            level((8, 6), 14, Some(2), None),
            level((4, 3), 15, Some(3), None),
            // A page by the old tag.
            level((8, 6), 16, None, Some(3)),
        ];
        for big in [false, true] {
            let mut out = Cursor::new(Vec::new());
            if big {
                write_levels(&mut TiffEncoder::new_big(&mut out).unwrap(), &levels);
            } else {
                write_levels(&mut TiffEncoder::new(&mut out).unwrap(), &levels);
            }
            let mut file = out.into_inner();
            let pages = Pages::read(&mut &file[..]).unwrap();
            assert_eq!(pages.count(), 3, "big {big}");
            assert_eq!(
                pages.not_pages(),
                NotPages {
                    overviews: 3,
                    masks: 1
                },
                "big {big}"
            );
            for (i, fill) in [10u8, 14, 16].into_iter().enumerate() {
                let (v, more) = pages.with_page(&mut file, i, pixels);
                assert_eq!(v, vec![fill; 48], "page {i}, big {big}");
                assert!(!more, "page {i} alone, big {big}");
            }
        }
        // The first directory is the image every decoder reads, whatever it says.
        let mut out = Cursor::new(Vec::new());
        let first = [
            level((4, 3), 1, Some(1), None),
            level((4, 3), 2, Some(1), None),
        ];
        write_levels(&mut TiffEncoder::new(&mut out).unwrap(), &first);
        let pages = Pages::read(&mut &out.get_ref()[..]).unwrap();
        assert_eq!((pages.count(), pages.not_pages().overviews), (1, 1));
    }

    #[test]
    fn the_note_names_what_was_not_kept() {
        assert_eq!(NotPages::default().note(), None);
        let one = NotPages {
            overviews: 1,
            masks: 0,
        }
        .note()
        .unwrap();
        assert!(
            one.contains("1 reduced-resolution image (overview) beside"),
            "{one}"
        );
        let both = NotPages {
            overviews: 4,
            masks: 2,
        }
        .note()
        .unwrap();
        assert!(
            both.contains("4 reduced-resolution images (overviews) and 2 transparency masks"),
            "{both}"
        );
        assert!(both.contains("not kept"), "{both}");
    }
}
