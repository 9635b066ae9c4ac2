//! A sequential JPEG without restart markers decoded on every core. Its entropy-coded data is
//! one chain of Huffman codes, each DC coefficient coded against the one before, so a
//! decoder cannot start in the middle: it does not know where a code begins, which block it
//! is in, or the DC values so far. Huffman codes resynchronise, though: a decoder started at
//! an arbitrary bit falls into step with the true code boundaries within a few codes, and two
//! decoders at the start of an MCU at the same bit decode the same from there on (the DC
//! values shift what they decode, never where the codes are). So (Weißenberger and Schmidt's
//! speculative parallel Huffman decoding, on the CPU's cores):
//!
//! 1. The data is cut into chunks. Each chunk is read from its first bit as if an MCU began
//!    there, keeping where each of its first MCUs starts, with its running MCU count and DC
//!    sums; a code that does not exist starts it again a bit later.
//! 2. Each chunk's reader goes on past its end until it starts an MCU where the next chunk's
//!    reader also started one: from there the two agree. (If none, it goes on into the chunk
//!    after, and so on: slower, never wrong.)
//! 3. From the first chunk, whose start is the true one, the sync points are chained: each
//!    segment's MCU count and DC sums place the next segment's first MCU and its DC values.
//! 4. Every segment is decoded again on its own core, knowing its state, into the planes.
//!    Each checks that it ends exactly where the next begins, with the DC values the next
//!    assumed: the planes are the ones a single decoder gives, or the decode is refused.
//!
//! The blocks go through libjpeg-turbo's integer IDCT (`idct`), so the planes are libjpeg's
//! `jpeg_read_raw_data` planes byte for byte (a test holds that). A file that is anything
//! but a plain sequential 8-bit YCbCr JPEG, or whose data is damaged or unusual (a code that
//! does not exist, data that ends early or runs on a byte or more past the last MCU, a block
//! whose intermediate values leave 16 bits, a chunk that fails to start too often) is None:
//! libjpeg then decodes it, or says what is wrong. The reading is about twice the entropy
//! decoding of a single decoder, spread over the cores.

mod bits;
mod idct;
mod tables;
#[cfg(test)]
mod tests;

use bits::{Bits, PADDING};
use rayon::prelude::*;
use tables::Scan;

/// Bytes of entropy-coded data a chunk holds at least: enough that the few MCUs a chunk's
/// start costs to find are nothing beside it.
const LEAST_CHUNK_BYTES: usize = 256 << 10;

/// MCU starts each chunk keeps from its first bit on, for the chunk before to meet.
const KEPT_STARTS: usize = 4096;

/// Failed starts a reader makes before the decode is left to libjpeg: a reader started blind
/// on a photo's data fails a handful of times before it is in step; data built to fail at
/// every bit would otherwise cost an MCU's decode per bit.
const MOST_FAILED_STARTS: usize = 1024;

/// Where an MCU starts in the data and a reader's running MCU count and DC sums there.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Start {
    pos: usize,
    mcus: usize,
    dc: [i32; 3],
}

/// What a chunk's reader found: its kept MCU starts, and where it met a later chunk's reader
/// (that chunk, the index of the start in its kept starts, and this reader's running state
/// there), or None where it read on to the end of the data.
struct Chunk {
    starts: Vec<Start>,
    met: Option<(usize, usize, Start)>,
}

/// A run of MCUs that one core decodes: from `first`, whose position and state are true.
struct Segment {
    first: Start,
    /// Where the next segment starts and its state (None for the last).
    next: Option<Start>,
}

/// The scan's data (stuffing removed, `PADDING` zeros after) and its length in bits.
struct Data {
    bytes: Vec<u8>,
    bits: usize,
}

/// Decodes the planes of `file` into `planes` (frame order: Y, Cb, Cr), each with rows
/// `strides[k]` samples apart (whole blocks) and as many rows as its whole MCU rows hold;
/// None where `file` is not a file this decoder takes, or its data would be damaged to
/// libjpeg (see the module's documentation). Planes a None leaves are partly written.
pub fn decode_into(file: &[u8], planes: [&mut [u8]; 3], strides: [usize; 3]) -> Option<()> {
    decode_in_chunks(file, planes, strides, LEAST_CHUNK_BYTES)
}

/// `decode_into` with chunks of at least `least_chunk_bytes` of data.
fn decode_in_chunks(
    file: &[u8],
    planes: [&mut [u8]; 3],
    strides: [usize; 3],
    least_chunk_bytes: usize,
) -> Option<()> {
    let scan = Scan::read(file)?;
    for c in &scan.components {
        let rows = scan.mcus_down * c.v * 8;
        if strides[c.plane] != c.width_in_blocks * 8
            || planes[c.plane].len() < strides[c.plane] * rows
        {
            return None;
        }
    }
    let data = unstuffed(file, scan.data_start)?;
    let total = scan.mcus_across * scan.mcus_down;
    let threads = rayon::current_num_threads();
    let count = (data.bits / 8 / least_chunk_bytes).clamp(1, 4 * threads);
    let chunk_starts: Vec<usize> = (0..count).map(|i| i * data.bits / count).collect();
    let chunks: Vec<Chunk> = (0..count)
        .into_par_iter()
        .map(|i| first_reading(&scan, &data, &chunk_starts, i, total))
        .collect::<Option<_>>()?;
    let chunks: Vec<Chunk> = (0..count)
        .into_par_iter()
        .map(|i| meet(&scan, &data, &chunk_starts, &chunks, i))
        .collect::<Option<_>>()?;
    let segments = chained(&chunks, total)?;
    let out = Planes {
        ptrs: planes.map(|p| p.as_mut_ptr() as usize),
        strides,
    };
    segments
        .par_iter()
        .try_for_each(|s| decode_segment(&scan, &data, s, total, &out))
}

/// The data of the scan starting at `start` in `file`, its stuffed zeros removed, up to the
/// marker that ends it, which must be the end of the image: None where it is another marker
/// (a restart marker, another scan) or the file ends first.
fn unstuffed(file: &[u8], start: usize) -> Option<Data> {
    let scan = file.get(start..)?;
    let piece = (1 << 20).max(scan.len().div_ceil(4 * rayon::current_num_threads()));
    // Each piece: the bytes it keeps, up to the marker in it if it has one.
    let counts: Vec<(usize, Option<usize>)> = scan
        .par_chunks(piece)
        .enumerate()
        .map(|(i, bytes)| kept(scan, i * piece, bytes.len()))
        .collect();
    let last = counts.iter().position(|c| c.1.is_some())?;
    let marker = counts[last].1?;
    let mut after = start + marker + 1;
    while file.get(after) == Some(&0xFF) {
        after += 1;
    }
    if file.get(after) != Some(&0xD9) {
        return None;
    }
    let len: usize = counts[..=last].iter().map(|c| c.0).sum();
    let mut bytes = vec![0u8; len + PADDING];
    let mut rest = &mut bytes[..len];
    let mut outs = Vec::with_capacity(last + 1);
    for c in &counts[..=last] {
        let (out, tail) = rest.split_at_mut(c.0);
        outs.push(out);
        rest = tail;
    }
    outs.into_par_iter().enumerate().for_each(|(i, out)| {
        let end = ((i + 1) * piece).min(marker);
        copy_kept(scan, i * piece, end, out);
    });
    Some(Data {
        bytes,
        bits: 8 * len,
    })
}

/// Whether a word holds a 0xFF byte.
#[inline(always)]
fn has_ff(word: u64) -> bool {
    let inverted = !word;
    (inverted.wrapping_sub(0x0101_0101_0101_0101) & !inverted & 0x8080_8080_8080_8080) != 0
}

/// The bytes of `scan[from..from + len]` that are data (a zero after 0xFF is stuffing), up
/// to the first marker (0xFF followed by anything but zero), and where that marker is.
fn kept(scan: &[u8], from: usize, len: usize) -> (usize, Option<usize>) {
    let mut kept = 0;
    let mut i = from;
    let end = from + len;
    while i < end {
        if i + 8 <= end
            && i > from
            && !has_ff(u64::from_le_bytes(scan[i..i + 8].try_into().expect("8")))
            && scan[i - 1] != 0xFF
        {
            kept += 8;
            i += 8;
            continue;
        }
        let b = scan[i];
        if b == 0xFF {
            match scan.get(i + 1) {
                Some(0) => {}
                _ => return (kept, Some(i)),
            }
        }
        if !(b == 0 && i > 0 && scan[i - 1] == 0xFF) {
            kept += 1;
        }
        i += 1;
    }
    (kept, None)
}

/// Copies what `kept` counts in `scan[from..end]` into `out`.
fn copy_kept(scan: &[u8], from: usize, end: usize, out: &mut [u8]) {
    let mut o = 0;
    let mut i = from;
    while i < end {
        if i + 8 <= end
            && i > from
            && !has_ff(u64::from_le_bytes(scan[i..i + 8].try_into().expect("8")))
            && scan[i - 1] != 0xFF
        {
            out[o..o + 8].copy_from_slice(&scan[i..i + 8]);
            o += 8;
            i += 8;
            continue;
        }
        let b = scan[i];
        if !(b == 0 && i > 0 && scan[i - 1] == 0xFF) {
            out[o] = b;
            o += 1;
        }
        i += 1;
    }
    debug_assert_eq!(o, out.len());
}

/// Step 1: chunk `i` read from its first bit, as if an MCU began there (for chunk 0 one
/// does), to the start of the next chunk; None where chunk 0, whose start is true, finds a
/// code that does not exist or runs past the data's end, or a reader fails too often.
fn first_reading(
    scan: &Scan,
    data: &Data,
    chunk_starts: &[usize],
    i: usize,
    total: usize,
) -> Option<Chunk> {
    let end = chunk_starts.get(i + 1).copied().unwrap_or(data.bits);
    let mut at = Start {
        pos: chunk_starts[i],
        mcus: 0,
        dc: [0; 3],
    };
    let mut starts = Vec::new();
    let mut blocks = [[0i16; 64]; 10];
    let mut ac = [false; 10];
    let mut failed = 0;
    // Chunk 0's reader knows where it is: it stops at the picture's last MCU.
    while at.pos < end && !(i == 0 && at.mcus == total) {
        let mut bits = Bits::at(&data.bytes, at.pos);
        let mut dc = at.dc;
        match bits.mcu::<false>(scan, &mut dc, &mut blocks, &mut ac) {
            Some(()) if bits.pos() <= data.bits => {
                if starts.len() < KEPT_STARTS {
                    starts.push(at);
                }
                at = Start {
                    pos: bits.pos(),
                    mcus: at.mcus + 1,
                    dc,
                };
            }
            _ if i == 0 => return None,
            // Not a code here, or past the end: this start was no MCU's; try a bit later.
            _ => {
                failed += 1;
                if failed > MOST_FAILED_STARTS {
                    return None;
                }
                at.pos += 1;
            }
        }
    }
    Some(Chunk {
        starts: {
            starts.push(at);
            starts
        },
        met: None,
    })
}

/// The later chunk whose kept starts could hold the bit position `pos`, searched from chunk
/// `next`'s kept start `k` on (both only move forward as a reader reads on): that chunk and
/// its first kept start not before `pos`, or `chunks.len()` where no chunk can.
#[inline]
fn later_chunk(
    pos: usize,
    chunk_starts: &[usize],
    chunks: &[Chunk],
    (mut next, mut k): (usize, usize),
) -> (usize, usize) {
    while next < chunks.len() {
        match chunks[next].starts.last() {
            _ if pos < chunk_starts[next] => break,
            Some(last) if pos <= last.pos => break,
            _ => {
                next += 1;
                k = 0;
            }
        }
    }
    if let Some(chunk) = chunks.get(next) {
        while k < chunk.starts.len() && chunk.starts[k].pos < pos {
            k += 1;
        }
    }
    (next, k)
}

/// Step 2: chunk `i`'s reader, from where step 1 left it (its last kept start: its state at
/// the end of its chunk), read on until it starts an MCU at a start a later chunk
/// kept.
fn meet(
    scan: &Scan,
    data: &Data,
    chunk_starts: &[usize],
    chunks: &[Chunk],
    i: usize,
) -> Option<Chunk> {
    let starts = chunks[i].starts.clone();
    let mut at = *starts.last()?;
    let mut blocks = [[0i16; 64]; 10];
    let mut ac = [false; 10];
    let mut next = i + 1;
    let mut k = 0;
    let mut failed = 0;
    loop {
        if at.pos > data.bits {
            return Some(Chunk { starts, met: None });
        }
        (next, k) = later_chunk(at.pos, chunk_starts, chunks, (next, k));
        if next == chunks.len() {
            return Some(Chunk { starts, met: None });
        }
        let kept = &chunks[next].starts;
        if k < kept.len() && kept[k].pos == at.pos {
            return Some(Chunk {
                starts,
                met: Some((next, k, at)),
            });
        }
        let mut bits = Bits::at(&data.bytes, at.pos);
        let mut dc = at.dc;
        match bits.mcu::<false>(scan, &mut dc, &mut blocks, &mut ac) {
            Some(()) if bits.pos() <= data.bits => {
                at = Start {
                    pos: bits.pos(),
                    mcus: at.mcus + 1,
                    dc,
                }
            }
            // A reader not yet in step (one whose start nobody meets, or the file is
            // damaged, which the decode finds): a bit later, as in step 1.
            Some(()) => return Some(Chunk { starts, met: None }),
            None => {
                failed += 1;
                if failed > MOST_FAILED_STARTS {
                    return None;
                }
                at.pos += 1;
            }
        }
    }
}

/// Step 3: the segments from the first chunk's true start, each the stretch from where a
/// reader's own start was met to where it met the next reader, its state carried on by the
/// MCU count and DC sums between.
fn chained(chunks: &[Chunk], total: usize) -> Option<Vec<Segment>> {
    let mut segments = Vec::new();
    let (mut chunk, mut k) = (0, 0);
    let mut first = Start {
        pos: 0,
        mcus: 0,
        dc: [0; 3],
    };
    loop {
        let own = chunks[chunk].starts.get(k)?;
        let Some((next, next_k, there)) = chunks[chunk].met else {
            segments.push(Segment { first, next: None });
            return Some(segments);
        };
        let mcus = there.mcus.checked_sub(own.mcus)?;
        let dc: [i32; 3] =
            std::array::from_fn(|c| first.dc[c].wrapping_add(there.dc[c].wrapping_sub(own.dc[c])));
        let start = Start {
            pos: there.pos,
            mcus: first.mcus + mcus,
            dc,
        };
        if start.mcus > total {
            return None;
        }
        segments.push(Segment {
            first,
            next: Some(start),
        });
        (chunk, k, first) = (next, next_k, start);
    }
}

/// The planes as addresses, written by the segments' cores at disjoint blocks.
struct Planes {
    ptrs: [usize; 3],
    strides: [usize; 3],
}

/// Step 4: a segment's MCUs decoded into the planes; None where it does not end exactly as
/// the next segment begins (or, the last, at the end of the data and of the picture).
fn decode_segment(scan: &Scan, data: &Data, s: &Segment, total: usize, out: &Planes) -> Option<()> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn wide(
            scan: &Scan,
            data: &Data,
            s: &Segment,
            total: usize,
            out: &Planes,
        ) -> Option<()> {
            segment_body(scan, data, s, total, out)
        }
        // SAFETY: the CPU has AVX2.
        return unsafe { wide(scan, data, s, total, out) };
    }
    segment_body(scan, data, s, total, out)
}

#[inline(always)]
fn segment_body(scan: &Scan, data: &Data, s: &Segment, total: usize, out: &Planes) -> Option<()> {
    let end = s.next.map_or(total, |n| n.mcus);
    let mut bits = Bits::at(&data.bytes, s.first.pos);
    let mut dc = s.first.dc;
    let mut blocks = [[0i16; 64]; 10];
    let mut ac = [false; 10];
    let mut samples = [[0u8; 8]; 8];
    for mcu in s.first.mcus..end {
        bits.mcu::<true>(scan, &mut dc, &mut blocks, &mut ac)?;
        if bits.pos() > data.bits {
            return None;
        }
        let (mx, my) = (mcu % scan.mcus_across, mcu / scan.mcus_across);
        let mut b = 0;
        for c in &scan.components {
            let stride = out.strides[c.plane];
            for by in 0..c.v {
                for bx in 0..c.h {
                    let (col, row) = (mx * c.h + bx, my * c.v + by);
                    if col < c.width_in_blocks && row < c.height_in_blocks {
                        if !idct::islow(&blocks[b], ac[b], &c.quant, &mut samples) {
                            return None;
                        }
                        let at = row * 8 * stride + col * 8;
                        for (r, line) in samples.iter().enumerate() {
                            // SAFETY: `decode_into` checked that the plane holds every block
                            // row of every MCU row and `width_in_blocks` blocks across; the
                            // segments are disjoint runs of MCUs, so no two cores write one
                            // block, and each writes its block's eight bytes of a row alone.
                            unsafe {
                                let p = (out.ptrs[c.plane] as *mut u8).add(at + r * stride);
                                std::ptr::copy_nonoverlapping(line.as_ptr(), p, 8);
                            }
                        }
                    }
                    b += 1;
                }
            }
        }
    }
    match s.next {
        Some(n) => (bits.pos() == n.pos && dc == n.dc).then_some(()),
        // A byte or more left over after the last MCU: refused here, for libjpeg to decode.
        None => (data.bits - bits.pos() < 8).then_some(()),
    }
}
