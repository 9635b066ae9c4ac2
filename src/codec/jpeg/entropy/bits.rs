//! The entropy-coded data of a scan as bits, and its blocks decoded from them as libjpeg
//! decodes them (the same codes, the same DC sums, the same coefficients, also where a run
//! steps past a block's end).

use super::tables::{Huffman, Scan, LOOKUP_BITS, NATURAL};

/// Zero bytes after the data: more than one MCU can read (ten blocks of 64 codes of at most
/// 31 bits each), so that a decoder reading garbage stops at the end of an MCU, where it
/// checks where it is, without reading out of the buffer.
pub const PADDING: usize = 4096;

/// A reader of `data` (the scan's bytes without the zeros stuffed after 0xFF, followed by
/// `PADDING` zeros): the next bits, first bit highest, in a word refilled from memory a few
/// bytes at a time.
pub struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to load.
    next: usize,
    /// The bits loaded and not yet taken, from the highest bit down.
    word: u64,
    /// How many bits of `word` are loaded (56 to 63 after a refill).
    loaded: u32,
}

impl<'a> Bits<'a> {
    /// A reader at bit `pos` of `data`.
    pub fn at(data: &'a [u8], pos: usize) -> Bits<'a> {
        let mut bits = Bits {
            data,
            next: pos >> 3,
            word: 0,
            loaded: 0,
        };
        bits.refill();
        bits.take((pos & 7) as u32);
        bits
    }

    /// Where the reader is, in bits from the data's start.
    pub fn pos(&self) -> usize {
        8 * self.next - self.loaded as usize
    }

    /// Loads whole bytes until at least 56 bits are loaded.
    #[inline(always)]
    fn refill(&mut self) {
        let word = u64::from_be_bytes(
            self.data[self.next..self.next + 8]
                .try_into()
                .expect("eight bytes"),
        );
        self.word |= word >> self.loaded;
        self.next += ((63 - self.loaded) >> 3) as usize;
        self.loaded |= 56;
    }

    #[inline(always)]
    fn take(&mut self, n: u32) {
        self.word <<= n;
        self.loaded -= n;
    }

    /// The next code of `table`'s, or None where the bits are no code of it. At least 16
    /// bits must be loaded.
    #[inline(always)]
    fn symbol(&mut self, table: &Huffman) -> Option<u8> {
        let (len, symbol) = table.lookup[(self.word >> (64 - LOOKUP_BITS)) as usize];
        if len != 0 {
            self.take(len as u32);
            return Some(symbol);
        }
        self.long_symbol(table)
    }

    #[inline(never)]
    fn long_symbol(&mut self, table: &Huffman) -> Option<u8> {
        for len in LOOKUP_BITS as usize + 1..=16 {
            let code = (self.word >> (64 - len)) as i32;
            if code <= table.max_code[len] {
                self.take(len as u32);
                return table
                    .symbols
                    .get((table.offset[len] + code) as usize)
                    .copied();
            }
        }
        None
    }

    /// The `size`-bit (1 to 15) value that follows a code, sign-extended as JPEG codes it.
    /// At least `size` bits must be loaded.
    #[inline(always)]
    fn value(&mut self, size: u8) -> i32 {
        let raw = (self.word >> (64 - size as u32)) as i32;
        self.take(size as u32);
        if raw < 1 << (size - 1) {
            raw - (1 << size) + 1
        } else {
            raw
        }
    }

    /// One block: its DC difference added to `last_dc`, and with `STORE` its coefficients
    /// in natural order written into `block` (which holds zeros); without, only read past.
    /// Whether it has AC coefficients (with `STORE`).
    #[inline(always)]
    fn block<const STORE: bool>(
        &mut self,
        (dc, ac): (&Huffman, &Huffman),
        last_dc: &mut i32,
        block: &mut [i16; 64],
    ) -> Option<bool> {
        self.refill();
        let size = self.symbol(dc)?;
        if size != 0 {
            *last_dc = last_dc.wrapping_add(self.value(size));
        }
        if STORE {
            block[0] = *last_dc as i16;
        }
        let mut k = 1;
        let mut any = false;
        while k < 64 {
            if self.loaded < 32 {
                self.refill();
            }
            // A short code and its value in one look.
            let fast = ac.coefficient[(self.word >> (64 - LOOKUP_BITS)) as usize];
            if fast.len != 0 {
                k += fast.run as usize;
                self.take(fast.len as u32);
                if STORE {
                    block[NATURAL[k] as usize] = fast.value;
                    any = true;
                }
                k += 1;
                continue;
            }
            let rs = self.symbol(ac)?;
            let (run, size) = ((rs >> 4) as usize, rs & 15);
            if size != 0 {
                k += run;
                let v = self.value(size);
                if STORE {
                    block[NATURAL[k] as usize] = v as i16;
                    any = true;
                }
            } else if run == 15 {
                k += 15;
            } else {
                break;
            }
            k += 1;
        }
        Some(any)
    }

    /// One MCU, every component's blocks in the scan's order, DC sums in `dc` (by the
    /// scan's component order); with `STORE` into `blocks` in the same order (zeroed here
    /// first), and in `ac` whether each has AC coefficients.
    #[inline(always)]
    pub fn mcu<const STORE: bool>(
        &mut self,
        scan: &Scan,
        dc: &mut [i32; 3],
        blocks: &mut [[i16; 64]; 10],
        ac: &mut [bool; 10],
    ) -> Option<()> {
        let mut b = 0;
        for (c, comp) in scan.components.iter().enumerate() {
            let tables = (scan.dc(comp), scan.ac(comp));
            for _ in 0..comp.h * comp.v {
                if STORE {
                    blocks[b] = [0; 64];
                }
                ac[b] = self.block::<STORE>(tables, &mut dc[c], &mut blocks[b])?;
                b += 1;
            }
        }
        Some(())
    }
}
