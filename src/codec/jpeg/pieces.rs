//! A JPEG with restart markers, cut into pieces that decode on their own, one per core. A
//! restart marker resets the entropy decoder and the DC predictors, so the intervals between
//! markers are independent: a run of intervals that starts on an MCU row is a JPEG of its own
//! once it has the file's tables, a frame header with its own height and a scan header, with
//! its restart markers numbered from 0 again. gblur writes every JPEG this way (`encode`), and
//! many cameras do. A file without them decodes as planes on every core by other means
//! (`entropy`), and otherwise whole, as does one with several scans (progressive).
//!
//! The cuts fall at fixed rows whatever the number of threads. Decoded as planes, the pieces
//! join into exactly the whole file's planes; decoded to RGB, exactly its pixels where chroma
//! is not subsampled down the picture (gray, 4:4:4, 4:2:2). Where it is (4:2:0), libjpeg
//! blends each output row's chroma with the chroma row above or below it, which across a cut
//! lies in the other piece: such a file decodes to RGB whole (`blends_rows`).

use std::ops::Range;

/// The fewest pixel rows in a piece: enough that a piece's own header and start cost nothing
/// measurable, few enough that a 16 MP photo makes a dozen pieces.
const LEAST_PIECE_ROWS: usize = 256;

/// A file's pieces, each built as a JPEG of its own when it is decoded (`jpeg`).
pub struct Pieces<'a> {
    bytes: &'a [u8],
    /// The file's segments up to its scan header (SOI, tables, frame, restart interval,
    /// JFIF and Adobe segments; other application segments and comments left out).
    head: Vec<u8>,
    /// Where the frame header's height is in `head`.
    height_at: usize,
    /// The scan header segment.
    sos: Range<usize>,
    /// Where the restart markers of the scan are in `bytes`.
    markers: Vec<usize>,
    pieces: Vec<Piece>,
    /// Whether the chroma is subsampled down the picture.
    blends_rows: bool,
}

struct Piece {
    /// The entropy-coded bytes in the file, from the piece's first interval to the marker
    /// before the next piece.
    data: Range<usize>,
    /// The restart markers inside it: `markers[first_marker..]`, as many as lie in `data`.
    first_marker: usize,
    /// Its pixel rows.
    rows: Range<usize>,
}

impl<'a> Pieces<'a> {
    /// The pieces of a baseline JPEG whose restart intervals start on MCU rows often enough
    /// to cut it at least twice; None for any other file (no restart markers, progressive or
    /// several scans, a height in a DNL segment, markers that do not match the frame).
    pub fn cut(bytes: &'a [u8]) -> Option<Pieces<'a>> {
        let walk = walk(bytes)?;
        let (mcu_w, mcu_h) = walk.mcu;
        let (width, height) = walk.size;
        let per_row = width.div_ceil(mcu_w);
        let mcu_rows = height.div_ceil(mcu_h);
        let interval = walk.interval;
        let intervals = (per_row * mcu_rows).div_ceil(interval);
        let (markers, end) = restart_markers(bytes, walk.scan)?;
        if markers.len() + 1 != intervals {
            return None;
        }
        // A cut at MCU row r falls on interval r × per_row / interval, where that divides.
        let least = LEAST_PIECE_ROWS.div_ceil(mcu_h);
        let mut cuts = vec![0];
        let mut row = least;
        while row < mcu_rows {
            if (row * per_row) % interval == 0 {
                cuts.push(row);
                row += least;
            } else {
                row += 1;
            }
        }
        if cuts.len() < 2 {
            return None;
        }
        let pieces = cuts
            .iter()
            .enumerate()
            .map(|(i, &first_row)| {
                let first = first_row * per_row / interval;
                let next = cuts.get(i + 1).map(|&r| r * per_row / interval);
                let start = match first {
                    0 => walk.scan,
                    k => markers[k - 1] + 2,
                };
                let stop = next.map_or(end, |k| markers[k - 1]);
                let last_row = cuts.get(i + 1).map_or(height, |&r| r * mcu_h);
                Piece {
                    data: start..stop,
                    first_marker: first,
                    rows: first_row * mcu_h..last_row,
                }
            })
            .collect();
        Some(Pieces {
            bytes,
            head: walk.head,
            height_at: walk.height_at,
            sos: walk.sos,
            markers,
            pieces,
            blends_rows: walk.components > 1 && mcu_h > 8,
        })
    }

    /// Whether the chroma is subsampled down the picture, so that decoding to RGB blends
    /// chroma rows across the cuts: such pieces decode exactly only as planes.
    pub fn blends_rows(&self) -> bool {
        self.blends_rows
    }

    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// The pixel rows of piece `i`.
    pub fn rows(&self, i: usize) -> Range<usize> {
        self.pieces[i].rows.clone()
    }

    /// Piece `i` as a JPEG of its own.
    pub fn jpeg(&self, i: usize) -> Vec<u8> {
        let piece = &self.pieces[i];
        let scan = &self.bytes[piece.data.clone()];
        let mut out = Vec::with_capacity(self.head.len() + self.sos.len() + scan.len() + 2);
        out.extend_from_slice(&self.head);
        let height = piece.rows.len() as u16;
        out[self.height_at..self.height_at + 2].copy_from_slice(&height.to_be_bytes());
        out.extend_from_slice(&self.bytes[self.sos.clone()]);
        let at = out.len();
        out.extend_from_slice(scan);
        // Its restart markers numbered from RST0, as a decoder expects after a scan header.
        let inside = self.markers[piece.first_marker..]
            .iter()
            .take_while(|&&m| m < piece.data.end);
        for (n, &m) in inside.enumerate() {
            out[at + m - piece.data.start + 1] = 0xD0 + (n % 8) as u8;
        }
        out.extend_from_slice(&[0xFF, 0xD9]);
        out
    }
}

/// What the walk of a file's segments up to its scan finds.
struct Walk {
    head: Vec<u8>,
    height_at: usize,
    sos: Range<usize>,
    /// Where the entropy-coded data starts.
    scan: usize,
    size: (usize, usize),
    /// The MCU's size in pixels.
    mcu: (usize, usize),
    /// MCUs per restart interval.
    interval: usize,
    components: usize,
}

/// Walks the segments of a baseline (or extended sequential, Huffman-coded) JPEG to its
/// first scan header: None where the file is anything else, has no restart interval or its
/// first scan does not hold every component.
fn walk(bytes: &[u8]) -> Option<Walk> {
    if bytes.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut head = vec![0xFF, 0xD8];
    let (mut frame, mut interval, mut height_at) = (None, 0, 0);
    let mut at = 2;
    loop {
        if *bytes.get(at)? != 0xFF {
            return None;
        }
        let marker = *bytes.get(at + 1)?;
        if marker == 0xFF {
            at += 1; // a fill byte
            continue;
        }
        let len = u16::from_be_bytes([*bytes.get(at + 2)?, *bytes.get(at + 3)?]) as usize;
        if len < 2 {
            return None;
        }
        let segment = bytes.get(at..at + 2 + len)?;
        let body = &segment[4..];
        match marker {
            0xC0 | 0xC1 => {
                height_at = head.len() + 5;
                frame = Some(frame_of(body)?);
            }
            // Progressive, lossless, hierarchical, arithmetic-coded: not cut.
            0xC2..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => return None,
            0xDD => interval = u16::from_be_bytes([*body.first()?, *body.get(1)?]) as usize,
            0xDA => {
                let (size, mcu, components) = frame?;
                if interval == 0 || *body.first()? as usize != components || size.1 == 0 {
                    return None;
                }
                return Some(Walk {
                    head,
                    height_at,
                    sos: at..at + 2 + len,
                    scan: at + 2 + len,
                    size,
                    mcu,
                    interval,
                    components,
                });
            }
            0xD0..=0xD9 | 0x01 => return None,
            _ => {}
        }
        // Every segment but comments and the application segments that do not say how the
        // colour is coded: tables, the frame, the restart interval, and JFIF's APP0 and
        // Adobe's APP14, from which libjpeg tells YCbCr from RGB.
        if !matches!(marker, 0xE1..=0xED | 0xEF | 0xFE) {
            head.extend_from_slice(segment);
        }
        at += 2 + len;
    }
}

/// A frame header's image size, MCU size and component count.
type FrameOf = ((usize, usize), (usize, usize), usize);

fn frame_of(body: &[u8]) -> Option<FrameOf> {
    let height = u16::from_be_bytes([*body.get(1)?, *body.get(2)?]) as usize;
    let width = u16::from_be_bytes([*body.get(3)?, *body.get(4)?]) as usize;
    let components = *body.get(5)? as usize;
    let factors: Vec<(usize, usize)> = (0..components)
        .map(|c| {
            body.get(7 + 3 * c)
                .map(|&hv| ((hv >> 4) as usize, (hv & 15) as usize))
        })
        .collect::<Option<_>>()?;
    let h = factors.iter().map(|f| f.0).max()?;
    let v = factors.iter().map(|f| f.1).max()?;
    // One component is coded without interleaving: its MCU is one block.
    let mcu = match components {
        1 => (8, 8),
        _ => (8 * h, 8 * v),
    };
    (width > 0 && mcu.0 > 0 && mcu.1 > 0).then_some(((width, height), mcu, components))
}

/// Where the restart markers of the scan starting at `scan` are, and where the scan ends (at
/// the end-of-image marker); None where another marker ends it.
fn restart_markers(bytes: &[u8], scan: usize) -> Option<(Vec<usize>, usize)> {
    let mut markers = Vec::new();
    let mut at = scan;
    loop {
        at += bytes.get(at..)?.iter().position(|&b| b == 0xFF)?;
        match *bytes.get(at + 1)? {
            0x00 | 0xFF => at += 1, // a stuffed 0xFF, or fill before a marker
            0xD0..=0xD7 => {
                markers.push(at);
                at += 2;
            }
            0xD9 => return Some((markers, at)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::jpeg::{encode, Chroma, JpegColor, JpegSettings};

    fn noisy(w: u32, h: u32, channels: usize) -> Vec<u8> {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        (0..w as usize * h as usize * channels)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                ((i % 251) as u64 / 2 + seed % 64) as u8
            })
            .collect()
    }

    fn striped(w: u32, h: u32, color: JpegColor, chroma: Chroma) -> Vec<u8> {
        let settings = JpegSettings {
            quality: 85,
            chroma,
        };
        encode(
            &noisy(w, h, color.channels()),
            (w, h),
            color,
            settings,
            None,
        )
        .unwrap()
    }

    #[test]
    fn pieces_cover_the_rows_and_decode_on_their_own() {
        for (w, h, color, chroma) in [
            (300, 1000, JpegColor::Rgb, Chroma::S420),
            (97, 777, JpegColor::Rgb, Chroma::S444),
            (1000, 600, JpegColor::Gray, Chroma::S444),
            (64, 2049, JpegColor::Rgb, Chroma::S422),
        ] {
            let file = striped(w, h, color, chroma);
            let pieces = Pieces::cut(&file).expect("gblur's stripes are cut");
            assert!(pieces.len() >= 2, "{w}x{h}");
            let mut next = 0;
            for i in 0..pieces.len() {
                let rows = pieces.rows(i);
                assert_eq!(rows.start, next);
                next = rows.end;
                let jpeg = pieces.jpeg(i);
                let piece = crate::codec::jpeg::decode_pixels(&jpeg, u64::MAX)
                    .expect("a JPEG of its own")
                    .expect("8-bit");
                assert_eq!((piece.width(), piece.height() as usize), (w, rows.len()));
            }
            assert_eq!(next, h as usize);
        }
    }

    #[test]
    fn files_without_markers_progressive_or_cut_short_are_not_cut() {
        let file = striped(300, 1000, JpegColor::Rgb, Chroma::S420);
        let sos = file.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        assert!(Pieces::cut(&file[..file.len() / 2]).is_none(), "cut short");
        assert!(Pieces::cut(&file[..sos]).is_none());
        let one = crate::codec::jpeg::encode_stripe(
            &noisy(300, 1000, 3),
            300,
            JpegColor::Rgb,
            JpegSettings {
                quality: 85,
                chroma: Chroma::S420,
            },
            None,
        )
        .unwrap();
        assert!(Pieces::cut(&one).is_none(), "no restart markers");
        let progressive =
            crate::codec::jpeg::compress::compress_progressive(&noisy(300, 1000, 3), 300, 80);
        assert!(Pieces::cut(&progressive).is_none());
        let small = striped(300, 200, JpegColor::Rgb, Chroma::S420);
        assert!(Pieces::cut(&small).is_none(), "one piece's rows");
    }
}
