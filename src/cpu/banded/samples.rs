//! What the banded blur reads and writes: the sample types (8-bit, 16-bit, f32) and the one
//! path from interleaved samples to premultiplied working values (`Rows`, with its prefetches),
//! so that every pass filters the same values.

use super::{CHUNK, VECS};
use crate::cpu::lanes::{Isa, LANES, V};

/// A sample type the banded blur reads and writes in place.
///
/// Integer samples are filtered in their own level units (0 ..= `FULL`): the filter is linear,
/// so scaling to [0, 1] on the way in and back on the way out would only cost a multiply each.
pub trait Sample: Copy + Send + Sync + 'static {
    /// Full intensity in working units: the largest level, or 1 for floats.
    const FULL: f32;
    /// Filtered in the difference form (`RecursiveGaussian::to_f32_difference_block`), which
    /// keeps a constant region bit for bit: floats, whose output shows every ulp. Integer
    /// samples take the direct form, whose few ulps of f32 the final rounding absorbs.
    const EXACT: bool;
    /// The sample in working units.
    fn to_f32(self) -> f32;
    /// Integer samples are clamped and rounded (as `pixels` does); floats pass as they are.
    fn from_f32(v: f32) -> Self;
    /// The sample as a table index (integers only), for sRGB decoding by lookup.
    fn index(self) -> usize;
    /// `input + m · (blurred − input)`, a selection `m` mixing the blur into the input: `m` ≤ 0
    /// gives the input and `m` ≥ 1 the blurred sample bit for bit; integers in between are
    /// rounded (both ends are in range, so no clamp is needed).
    fn mix(input: Self, blurred: Self, m: f32) -> Self;
    /// A 16×16 block of working values as samples, transposed (rows in lanes become rows).
    #[inline(always)]
    fn transposed<I: Isa>(m: &[V; LANES]) -> [[Self; LANES]; LANES] {
        let t = I::transpose(m);
        let mut out = [[Self::from_f32(0.0); LANES]; LANES];
        for i in 0..LANES {
            for j in 0..LANES {
                out[i][j] = Self::from_f32(t[i].0[j]);
            }
        }
        out
    }
}

/// An integer sample's mix (`Sample::mix`): the input where `m` is 0 or less, the blurred
/// sample where it is 1 or more, else the blend rounded to the nearest level by `round`.
#[inline(always)]
fn mix_levels<T: Copy + Into<f32>>(input: T, blurred: T, m: f32, round: impl Fn(f32) -> T) -> T {
    if m <= 0.0 {
        input
    } else if m >= 1.0 {
        blurred
    } else {
        let (a, b) = (input.into(), blurred.into());
        round(a + m * (b - a) + 0.5)
    }
}

impl Sample for u8 {
    const FULL: f32 = 255.0;
    const EXACT: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        crate::cpu::lanes::level_to_u8(v)
    }
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn mix(input: Self, blurred: Self, m: f32) -> Self {
        mix_levels(input, blurred, m, |v| v as Self)
    }
    #[inline(always)]
    fn transposed<I: Isa>(m: &[V; LANES]) -> [[Self; LANES]; LANES] {
        I::transpose_to_u8(m)
    }
}

impl Sample for u16 {
    const FULL: f32 = 65535.0;
    const EXACT: bool = false;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        #[allow(clippy::manual_clamp)]
        let x = v.max(0.0).min(Self::FULL) + 0.5;
        // SAFETY: as in `lanes::level_to_u8`; x is in [0.5, 65535.5].
        unsafe { x.to_int_unchecked::<i32>() as u16 }
    }
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn mix(input: Self, blurred: Self, m: f32) -> Self {
        mix_levels(input, blurred, m, |v| v as Self)
    }
}

impl Sample for f32 {
    const FULL: f32 = 1.0;
    const EXACT: bool = true;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn index(self) -> usize {
        0
    }
    #[inline(always)]
    fn mix(input: Self, blurred: Self, m: f32) -> Self {
        if m <= 0.0 {
            input
        } else if m >= 1.0 {
            blurred
        } else {
            input + m * (blurred - input)
        }
    }
}

/// How samples become premultiplied working values and back.
#[derive(Clone, Copy)]
pub struct Pixels<'a> {
    pub channels: usize,
    /// The last channel is alpha: colour is premultiplied while filtering.
    pub alpha: bool,
    /// sRGB decoding table indexed by sample value, in level units (colour channels of
    /// integer images only).
    pub linear: Option<&'a [f32]>,
    /// A selection, one value per pixel from the first row written: the rows pass mixes its
    /// output into the input samples it overwrites (`Sample::mix`) instead of storing it, a
    /// mask's blend with no copy of the input (none: the blur is stored as it is).
    pub mix: Option<&'a [f32]>,
    /// The unsharp mask: the rows pass stores `in + amount·(in − blur)` over the input
    /// samples it overwrites instead of the blur (images without alpha or linear light, and
    /// no selection: `work::blur` sends the others through planar f32).
    pub sharpen: Option<Unsharp>,
}

impl Pixels<'static> {
    /// One channel of plain samples: no alpha, linear light, selection or sharpening.
    pub const ONE_CHANNEL: Pixels<'static> = Pixels {
        channels: 1,
        alpha: false,
        linear: None,
        mix: None,
        sharpen: None,
    };
}

/// The unsharp mask in the banded blur's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unsharp {
    pub amount: f32,
    /// Differences no larger than this, in levels (`Sample::FULL` is full scale), are left.
    pub threshold: f32,
    /// Sharpen Rec. 709 luma alone and add its change to red, green and blue (three-channel
    /// images; on others each channel is sharpened on its own).
    pub luminance: bool,
}

/// Rec. 709 luma weights of red, green and blue.
const LUMA: [f32; 3] = [0.2126, 0.7152, 0.0722];

/// The Rec. 709 luma of `rgb`.
#[inline(always)]
pub fn luma(rgb: [f32; 3]) -> f32 {
    LUMA[0] * rgb[0] + LUMA[1] * rgb[1] + LUMA[2] * rgb[2]
}

impl Unsharp {
    /// `input` sharpened against its blur: `input + amount · (input − blurred)` where the
    /// difference is larger than the threshold, else `input`.
    #[inline(always)]
    pub fn apply(self, input: f32, blurred: f32) -> f32 {
        let diff = input - blurred;
        if diff.abs() > self.threshold {
            input + self.amount * diff
        } else {
            input
        }
    }
}

#[inline(always)]
fn premultiply<const C: usize>(r: &mut [f32; LANES], per_level: f32) {
    for i in 0..LANES {
        if i % C != C - 1 {
            r[i] *= r[i - i % C + C - 1] * per_level;
        }
    }
}

/// `premultiply` without a dependence between lanes: each lane's factor is taken first (its
/// pixel's alpha per level, 1 for alpha itself), so the compiler makes a shuffle and a multiply.
#[inline(always)]
fn by_alpha<T: Sample, const C: usize>(r: &mut [f32; LANES]) {
    let f: [f32; LANES] = std::array::from_fn(|i| {
        if i % C == C - 1 {
            1.0
        } else {
            r[i - i % C + C - 1] * (1.0 / T::FULL)
        }
    });
    for i in 0..LANES {
        r[i] *= f[i];
    }
}

/// Loads samples `j..j+16` of `row` (zeros past its end) as premultiplied working values.
#[inline(always)]
fn load<T: Sample>(row: &[T], j: usize, px: &Pixels) -> V {
    let n = row.len().saturating_sub(j).min(LANES);
    let mut r = [0f32; LANES];
    match px.linear {
        None if n == LANES => {
            let s = &row[j..j + LANES];
            for i in 0..LANES {
                r[i] = s[i].to_f32();
            }
        }
        None => {
            for i in 0..n {
                r[i] = row[j + i].to_f32();
            }
        }
        Some(lut) => {
            for i in 0..n {
                let v = row[j + i];
                let is_alpha = px.alpha && (j + i) % px.channels == px.channels - 1;
                r[i] = if is_alpha { v.to_f32() } else { lut[v.index()] };
            }
        }
    }
    if px.alpha {
        // `j` is a multiple of 16, so lanes start on a pixel boundary for 2 or 4 channels.
        match px.channels {
            2 => premultiply::<2>(&mut r, 1.0 / T::FULL),
            4 => premultiply::<4>(&mut r, 1.0 / T::FULL),
            _ => {}
        }
    }
    V(r)
}

/// The image as rows of interleaved samples.
#[derive(Clone, Copy)]
pub(super) struct Rows<'a, T> {
    pub(super) data: &'a [T],
    pub(super) stride: usize,
    pub(super) height: usize,
}

impl<'a, T: Sample> Rows<'a, T> {
    #[inline(always)]
    fn row(&self, r: usize) -> &'a [T] {
        &self.data[r * self.stride..(r + 1) * self.stride]
    }

    /// Asks for a chunk's samples of row `r` ahead of its walk: a walk visits each row of a
    /// tile at a different page, which the hardware prefetchers do not predict.
    #[inline(always)]
    pub(super) fn prefetch(&self, r: usize, j0: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let row = self.row(r);
            let end = row.len().min(j0 + CHUNK);
            let line = 64 / std::mem::size_of::<T>();
            for j in (j0..end).step_by(line) {
                // SAFETY: a prefetch never faults, and the address is inside the row.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(j) as *const i8);
                }
            }
        }
    }

    /// Asks for `rows` (in that order) of chunks `c0 .. c0 + n` before a walk over them
    /// starts: the in-walk prefetches reach only rows a tile or two ahead, so without this the
    /// walk would wait on memory over its first tiles.
    #[inline(always)]
    pub(super) fn prefetch_start(&self, rows: impl Iterator<Item = usize>, c0: usize, n: usize) {
        for r in rows {
            for i in 0..n {
                self.prefetch(r, (c0 + i) * CHUNK);
            }
        }
    }

    #[inline(always)]
    pub(super) fn load(&self, r: usize, j0: usize, px: &Pixels) -> [V; VECS] {
        let row = self.row(r);
        if px.linear.is_none() && j0 + CHUNK <= row.len() {
            // The common case in a form the compiler turns into a few wide conversions and
            // multiplies: a whole chunk of samples that only need scaling, and premultiplying
            // where there is alpha (`j0` is a multiple of 16, so every vector starts on a
            // pixel for 2 or 4 channels).
            let s = &row[j0..j0 + CHUNK];
            let mut x = [V::ZERO; VECS];
            for v in 0..VECS {
                for i in 0..LANES {
                    x[v].0[i] = s[v * LANES + i].to_f32();
                }
            }
            match (px.alpha, px.channels) {
                (true, 2) => x.iter_mut().for_each(|v| by_alpha::<T, 2>(&mut v.0)),
                (true, 4) => x.iter_mut().for_each(|v| by_alpha::<T, 4>(&mut v.0)),
                _ => {}
            }
            return x;
        }
        let mut x = [V::ZERO; VECS];
        for (v, x) in x.iter_mut().enumerate() {
            *x = load(row, j0 + v * LANES, px);
        }
        x
    }
}
