//! What decoding the one scan of a sequential, Huffman-coded 8-bit YCbCr JPEG needs, read
//! from the segments before it: the frame's size and components, each component's
//! quantisation table and Huffman tables (those in force at the scan header, as libjpeg
//! latches them), and where the entropy-coded data starts. Any other file (progressive,
//! arithmetic-coded, 12-bit, a restart interval, a scan without every component, tables
//! libjpeg would refuse) is None: libjpeg decodes it.

use super::super::header::segments;

/// The zigzag order: the `k`th coefficient of a block's code is at `NATURAL[k]` in the
/// block, row by row. Sixteen extra entries catch a run that steps past the last
/// coefficient (a damaged block), as libjpeg's table does.
pub const NATURAL: [u8; 80] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63,
];

/// Code lengths up to this many bits are looked up in one step.
pub const LOOKUP_BITS: u32 = 10;

/// A Huffman table, decoded as libjpeg decodes it: codes of up to `LOOKUP_BITS` bits from a
/// table indexed by the next bits, longer ones by comparing against each length's largest
/// code.
pub struct Huffman {
    /// Indexed by the next `LOOKUP_BITS` bits: the code's length and symbol, or length 0
    /// where the code is longer.
    pub lookup: [(u8, u8); 1 << LOOKUP_BITS],
    /// For each length 1..=16, the largest code of that length (-1 where there is none), with
    /// a sentinel past 16.
    pub max_code: [i32; 18],
    /// For each length, the index in `symbols` of its first code minus that code.
    pub offset: [i32; 17],
    pub symbols: Vec<u8>,
    /// For an AC table, indexed by the next `LOOKUP_BITS` bits where a code and the value
    /// after it both fit in them: the coefficient, the zeros before it and the bits taken
    /// (0 where they do not fit, or the code is an end of block or a run of sixteen zeros).
    pub coefficient: Vec<Coefficient>,
}

/// A coded coefficient read in one step.
#[derive(Clone, Copy, Default)]
pub struct Coefficient {
    pub value: i16,
    pub run: u8,
    pub len: u8,
}

impl Huffman {
    /// The table of a DHT entry: `counts[i]` codes of length i + 1 for `symbols` in order.
    /// None where the lengths overflow their bits or (`dc`) a symbol is not a DC
    /// coefficient's size, as libjpeg refuses them.
    fn new(counts: &[u8; 16], symbols: &[u8], dc: bool) -> Option<Huffman> {
        if dc && symbols.iter().any(|&s| s > 15) {
            return None;
        }
        let mut table = Huffman {
            lookup: [(0, 0); 1 << LOOKUP_BITS],
            max_code: [-1; 18],
            offset: [0; 17],
            symbols: symbols.to_vec(),
            coefficient: Vec::new(),
        };
        table.max_code[17] = i32::MAX;
        let (mut code, mut k) = (0i32, 0usize);
        for len in 1..=16usize {
            let n = counts[len - 1] as usize;
            // Codes of this length must fit in it; the all-ones code is not one.
            if code + n as i32 >= 1 << len && n > 0 {
                return None;
            }
            table.offset[len] = k as i32 - code;
            for _ in 0..n {
                if len <= LOOKUP_BITS as usize {
                    let shift = LOOKUP_BITS as usize - len;
                    let first = (code as usize) << shift;
                    for entry in &mut table.lookup[first..first + (1 << shift)] {
                        *entry = (len as u8, symbols[k]);
                    }
                }
                code += 1;
                k += 1;
            }
            if n > 0 {
                table.max_code[len] = code - 1;
            }
            code <<= 1;
        }
        if !dc {
            table.coefficient = (0..1u32 << LOOKUP_BITS)
                .map(|bits| table.coefficient_at(bits))
                .collect();
        }
        Some(table)
    }

    #[cfg(test)]
    pub fn new_for_test(counts: &[u8; 16], symbols: &[u8], dc: bool) -> Option<Huffman> {
        Huffman::new(counts, symbols, dc)
    }

    /// The coefficient that the `LOOKUP_BITS` bits `bits` code whole, if they do.
    fn coefficient_at(&self, bits: u32) -> Coefficient {
        let (len, rs) = self.lookup[bits as usize];
        let (run, size) = (rs >> 4, (rs & 15) as u32);
        let len = len as u32;
        if len == 0 || size == 0 || len + size > LOOKUP_BITS {
            return Coefficient::default();
        }
        let raw = ((bits >> (LOOKUP_BITS - len - size)) & ((1 << size) - 1)) as i32;
        let value = if raw < 1 << (size - 1) {
            raw - (1 << size) + 1
        } else {
            raw
        };
        Coefficient {
            value: value as i16,
            run,
            len: (len + size) as u8,
        }
    }
}

/// One component of the scan, in the order the scan codes its blocks.
pub struct Component {
    /// Its index in the frame: 0 Y, 1 Cb, 2 Cr.
    pub plane: usize,
    /// Its sampling factors: blocks across and down in an MCU.
    pub h: usize,
    pub v: usize,
    /// Its quantisation table, in the block's natural order.
    pub quant: [u16; 64],
    pub dc: usize,
    pub ac: usize,
    /// Blocks across its plane that hold picture (an MCU row has more where the width is
    /// not a whole number of MCUs).
    pub width_in_blocks: usize,
    /// Block rows down its plane that hold picture (libjpeg leaves the others unwritten).
    pub height_in_blocks: usize,
}

/// A frame header's width, height and components (id, h, v, quantisation table).
type FrameParts = (usize, usize, Vec<(u8, usize, usize, usize)>);

/// The scan of a file as `read` finds it.
pub struct Scan {
    /// MCUs across and down the picture.
    pub mcus_across: usize,
    pub mcus_down: usize,
    pub components: Vec<Component>,
    /// DC tables 0-3, then AC tables 0-3, as in force at the scan header.
    pub tables: Vec<Option<Huffman>>,
    /// Where the entropy-coded data starts in the file.
    pub data_start: usize,
}

impl Scan {
    pub fn dc(&self, c: &Component) -> &Huffman {
        self.tables[c.dc].as_ref().expect("checked by read")
    }

    pub fn ac(&self, c: &Component) -> &Huffman {
        self.tables[4 + c.ac].as_ref().expect("checked by read")
    }

    /// Reads the segments of `bytes` up to its scan header; None for a file this decoder
    /// does not take (see the module's documentation) or whose segments it finds damaged (the
    /// caller has had libjpeg read the header first, which refuses the rest).
    pub fn read(bytes: &[u8]) -> Option<Scan> {
        if bytes.get(..2)? != [0xFF, 0xD8] {
            return None;
        }
        let mut quant: [Option<[u16; 64]>; 4] = [None; 4];
        let mut tables: Vec<Option<Huffman>> = (0..8).map(|_| None).collect();
        let mut frame: Option<FrameParts> = None;
        for (marker, body) in segments(bytes) {
            match marker {
                // A second frame header is libjpeg's error to report.
                0xC0 | 0xC1 if frame.is_some() => return None,
                0xC0 | 0xC1 => frame = Some(frame_of(body)?),
                0xC4 => read_huffman(body, &mut tables)?,
                0xDB => read_quant(body, &mut quant)?,
                0xDD if body.get(..2)? != [0, 0] => return None,
                0xDD => {}
                0xDA => {
                    let (width, height, comps) = frame?;
                    // The entropy-coded data follows the scan header's body.
                    let data_start = body.as_ptr() as usize - bytes.as_ptr() as usize + body.len();
                    return scan_of(body, (width, height), &comps, &quant, tables, data_start);
                }
                // Application segments and comments; any other marker is libjpeg's to
                // refuse or to take (arithmetic coding, hierarchical files).
                0xE0..=0xEF | 0xFE => {}
                _ => return None,
            }
        }
        None
    }
}

/// A frame header's width, height and components (id, h, v, table): 8-bit, three
/// components, a height given here (not in a DNL segment).
fn frame_of(body: &[u8]) -> Option<FrameParts> {
    let [precision, h1, h0, w1, w0, count, rest @ ..] = body else {
        return None;
    };
    let (height, width) = (
        u16::from_be_bytes([*h1, *h0]) as usize,
        u16::from_be_bytes([*w1, *w0]) as usize,
    );
    if *precision != 8 || *count != 3 || height == 0 || width == 0 || rest.len() < 9 {
        return None;
    }
    let comps: Vec<_> = rest
        .chunks_exact(3)
        .take(3)
        .map(|c| {
            (
                c[0],
                (c[1] >> 4) as usize,
                (c[1] & 15) as usize,
                c[2] as usize,
            )
        })
        .collect();
    let fits = |f: usize| (1..=4).contains(&f);
    if comps
        .iter()
        .any(|&(_, h, v, q)| !fits(h) || !fits(v) || q > 3)
    {
        return None;
    }
    Some((width, height, comps))
}

fn read_quant(mut body: &[u8], quant: &mut [Option<[u16; 64]>; 4]) -> Option<()> {
    while let [pq_tq, rest @ ..] = body {
        let (wide, slot) = (pq_tq >> 4, (pq_tq & 15) as usize);
        let size = 64 * (1 + wide as usize);
        if wide > 1 || slot > 3 || rest.len() < size {
            return None;
        }
        let mut table = [0u16; 64];
        for k in 0..64 {
            let q = match wide {
                0 => rest[k] as u16,
                _ => u16::from_be_bytes([rest[2 * k], rest[2 * k + 1]]),
            };
            // libjpeg's SIMD code holds the table in 16-bit lanes, its C code in ints: above
            // 32767 the two could disagree, so such a file is libjpeg's to decode.
            if q > i16::MAX as u16 {
                return None;
            }
            table[NATURAL[k] as usize] = q;
        }
        quant[slot] = Some(table);
        body = &rest[size..];
    }
    Some(())
}

fn read_huffman(mut body: &[u8], tables: &mut [Option<Huffman>]) -> Option<()> {
    while let [tc_th, rest @ ..] = body {
        let (class, slot) = (tc_th >> 4, (tc_th & 15) as usize);
        let counts: &[u8; 16] = rest.get(..16)?.try_into().ok()?;
        let total: usize = counts.iter().map(|&n| n as usize).sum();
        if class > 1 || slot > 3 || total > 256 {
            return None;
        }
        let symbols = rest.get(16..16 + total)?;
        tables[4 * class as usize + slot] = Some(Huffman::new(counts, symbols, class == 0)?);
        body = &rest[16 + total..];
    }
    Some(())
}

/// The scan of a scan header's `body`: every frame component once, the whole spectrum at
/// full precision (sequential), with its tables defined.
fn scan_of(
    body: &[u8],
    (width, height): (usize, usize),
    frame: &[(u8, usize, usize, usize)],
    quant: &[Option<[u16; 64]>; 4],
    tables: Vec<Option<Huffman>>,
    data_start: usize,
) -> Option<Scan> {
    let [count, rest @ ..] = body else {
        return None;
    };
    if *count as usize != frame.len()
        || rest.get(2 * frame.len()..2 * frame.len() + 3)? != [0, 63, 0]
    {
        return None;
    }
    let max_h = frame.iter().map(|c| c.1).max()?;
    let max_v = frame.iter().map(|c| c.2).max()?;
    let mut components = Vec::with_capacity(frame.len());
    for pair in rest[..2 * frame.len()].chunks_exact(2) {
        let plane = frame.iter().position(|c| c.0 == pair[0])?;
        if components.iter().any(|c: &Component| c.plane == plane) {
            return None;
        }
        let (_, h, v, q) = frame[plane];
        let (dc, ac) = ((pair[1] >> 4) as usize, (pair[1] & 15) as usize);
        if dc > 3 || ac > 3 || tables[dc].is_none() || tables[4 + ac].is_none() {
            return None;
        }
        components.push(Component {
            plane,
            h,
            v,
            quant: quant[q]?,
            dc,
            ac,
            width_in_blocks: (width * h).div_ceil(8 * max_h),
            height_in_blocks: (height * v).div_ceil(8 * max_v),
        });
    }
    // libjpeg takes at most ten blocks an MCU.
    if components.iter().map(|c| c.h * c.v).sum::<usize>() > 10 {
        return None;
    }
    Some(Scan {
        mcus_across: width.div_ceil(8 * max_h),
        mcus_down: height.div_ceil(8 * max_v),
        components,
        tables,
        data_start,
    })
}
