//! The pages of a multi-page TIFF (a z-stack, a time series, a scanned document): the chain
//! of image file directories its header starts, and any one page seen as a TIFF of that page
//! alone. A page view changes two numbers of the file, the header's link to its first
//! directory and the page's link to the next, so that every reader gblur has (the `image`
//! crate's decoder, the quirks, the metadata reader) takes that page as the whole file,
//! with no copy of its pixels.

use crate::codec::metadata::ifd::{Layout, Source};
use std::collections::HashSet;

/// Where a chain of directories stops being followed: a longer one (or one that loops)
/// counts as this many pages.
pub const MOST_PAGES: usize = 10_000;

/// A TIFF's pages: where each directory starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pages {
    layout: Layout,
    offsets: Vec<u64>,
}

impl Pages {
    /// The pages of the TIFF `src` (classic or BigTIFF), followed while the directories can be
    /// read; None where the header is no TIFF's.
    pub fn read(src: &mut impl Source) -> Option<Pages> {
        let (layout, first) = Layout::of_file(src)?;
        let mut offsets = Vec::new();
        let mut seen = HashSet::new();
        let mut at = first;
        while at != 0 && offsets.len() < MOST_PAGES && seen.insert(at) {
            let Some(next_at) = next_field(src, layout, at) else {
                break;
            };
            offsets.push(at);
            let Some(next) = src.read_at(next_at, pointer_len(layout)) else {
                break;
            };
            at = read_pointer(layout, &next);
        }
        (!offsets.is_empty()).then_some(Pages { layout, offsets })
    }

    /// How many pages the file holds.
    pub fn count(&self) -> usize {
        self.offsets.len()
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
    use tiff::encoder::{colortype, TiffEncoder};

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
}
