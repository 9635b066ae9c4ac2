//! A 16-lane f32 vector for the banded CPU blur, and the runtime switch that runs each hot
//! function compiled for the widest instruction set the CPU reports. Every set computes the same
//! values (the transposes and the 8-bit conversion are tested against the plain loops), except
//! that `madd` is fused only where the set has FMA.
//!
//! The vector is plain array arithmetic that LLVM turns into AVX-512 (one register), AVX2 (two)
//! or SSE/NEON (four); only the AVX-512 transposes are written in intrinsics. The hot functions
//! are generic over `Isa` and `#[inline(always)]`; `simd_dispatch!` wraps them in
//! `#[target_feature]` copies and picks one per call from what the CPU reports, so a binary
//! built for baseline x86-64 still runs the wide code where the CPU has it.

// Lane loops index several arrays in step; written with indices they vectorise reliably.
#![allow(clippy::needless_range_loop)]

use std::ops::{Add, Mul, Sub};

pub const LANES: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
pub struct V(pub [f32; LANES]);

/// What an instruction set offers the hot loops.
pub trait Isa: Copy {
    /// Fused multiply-add: without it `mul_add` would be a libm call.
    const FMA: bool;

    /// Transposes a 16×16 block held as 16 vectors into `t`.
    #[inline(always)]
    fn transpose_to(m: &[V; LANES], t: &mut [V; LANES]) {
        for (i, row) in m.iter().enumerate() {
            for (j, &v) in row.0.iter().enumerate() {
                t[j].0[i] = v;
            }
        }
    }

    /// Transposes a 16×16 block held as 16 vectors.
    #[inline(always)]
    fn transpose(m: &[V; LANES]) -> [V; LANES] {
        let mut t = [V::ZERO; LANES];
        Self::transpose_to(m, &mut t);
        t
    }

    /// Transposes a 16×16 block of 8-bit levels held as 16 f32 vectors, converting as
    /// `pixels::quantise::to_steps` does in level units: NaN to 0, clamped to 0..=255, rounded half up.
    #[inline(always)]
    fn transpose_to_u8(m: &[V; LANES]) -> [[u8; LANES]; LANES] {
        let t = Self::transpose(m);
        let mut out = [[0u8; LANES]; LANES];
        for i in 0..LANES {
            for j in 0..LANES {
                out[i][j] = level_to_u8(t[i].0[j]);
            }
        }
        out
    }
}

/// One f32 level to 8 bits: NaN to 0, clamped to 0..=255, rounded half up.
#[inline(always)]
pub fn level_to_u8(v: f32) -> u8 {
    // max/min map NaN to 0, as the saturating cast in `pixels::quantise::to_steps` does, and the value
    // is then in range for the unchecked cast.
    #[allow(clippy::manual_clamp)] // clamp keeps NaN, which the unchecked cast cannot take
    let x = v.max(0.0).min(255.0) + 0.5;
    // SAFETY: x is finite and in [0.5, 255.5].
    unsafe { x.to_int_unchecked::<i32>() as u8 }
}

/// AVX-512: one register per vector, and a shuffle network for the transpose (the compiler
/// turns the plain loop into 256 scalar moves).
#[derive(Clone, Copy)]
pub struct Avx512;
impl Isa for Avx512 {
    const FMA: bool = true;

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn transpose_to(m: &[V; LANES], out: &mut [V; LANES]) {
        use std::arch::x86_64::*;
        // SAFETY: only instantiated inside `simd_dispatch!`'s AVX-512 copy, which runs after
        // the CPU reported AVX-512F; V is 64-byte aligned, as the aligned loads need.
        unsafe {
            let r: [__m512; 16] = std::array::from_fn(|i| _mm512_load_ps(m[i].0.as_ptr()));
            let lo = |a, b| _mm512_unpacklo_ps(a, b);
            let hi = |a, b| _mm512_unpackhi_ps(a, b);
            let mut t = [_mm512_setzero_ps(); 16];
            for k in 0..4 {
                let b = 4 * k;
                t[b] = lo(r[b], r[b + 1]);
                t[b + 1] = hi(r[b], r[b + 1]);
                t[b + 2] = lo(r[b + 2], r[b + 3]);
                t[b + 3] = hi(r[b + 2], r[b + 3]);
            }
            let lo64 = |a: __m512, b: __m512| {
                _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
            };
            let hi64 = |a: __m512, b: __m512| {
                _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)))
            };
            let mut u = [_mm512_setzero_ps(); 16];
            for k in 0..4 {
                let b = 4 * k;
                u[b] = lo64(t[b], t[b + 2]);
                u[b + 1] = hi64(t[b], t[b + 2]);
                u[b + 2] = lo64(t[b + 1], t[b + 3]);
                u[b + 3] = hi64(t[b + 1], t[b + 3]);
            }
            for k in 0..2 {
                let b = 8 * k;
                for i in 0..4 {
                    t[b + i] = _mm512_shuffle_f32x4::<0x88>(u[b + i], u[b + 4 + i]);
                    t[b + 4 + i] = _mm512_shuffle_f32x4::<0xdd>(u[b + i], u[b + 4 + i]);
                }
            }
            for i in 0..8 {
                let a = _mm512_shuffle_f32x4::<0x88>(t[i], t[8 + i]);
                let b = _mm512_shuffle_f32x4::<0xdd>(t[i], t[8 + i]);
                _mm512_store_ps(out[i].0.as_mut_ptr(), a);
                _mm512_store_ps(out[8 + i].0.as_mut_ptr(), b);
            }
        }
    }

    /// Converts first and transposes bytes: the saturating packs clamp for free, and a 16×16
    /// byte block is 4 registers, so the shuffles are a fifth of the f32 transpose's.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn transpose_to_u8(m: &[V; LANES]) -> [[u8; LANES]; LANES] {
        use std::arch::x86_64::*;
        // SAFETY: as for `transpose`; AVX-512BW (the packs, the byte shuffle) is among the
        // features `simd_dispatch!` checks before running this copy. The output is 256 bytes,
        // written as 4 unaligned 64-byte stores.
        unsafe {
            // min(255, v) keeps NaN (the second operand), which the conversion turns into
            // i32::MIN and the packs into 0; below 0 the packs saturate to 0 as well.
            let (full, half) = (_mm512_set1_ps(255.0), _mm512_set1_ps(0.5));
            // Loops, not closures: a closure would be compiled without the caller's features.
            let mut level = [_mm512_setzero_si512(); 16];
            for q in 0..16 {
                let v = _mm512_min_ps(full, _mm512_load_ps(m[q].0.as_ptr()));
                level[q] = _mm512_cvttps_epi32(_mm512_add_ps(v, half));
            }
            let mut words = [_mm512_setzero_si512(); 8];
            for j in 0..8 {
                words[j] = _mm512_packs_epi32(level[2 * j], level[2 * j + 1]);
            }
            // Lane l of bytes[n], byte 4 j + i: sample 4 n + j of row 4 l + i. Transposing each
            // 4×4 group makes dword i of lane l hold row 4 l + i's samples 4 n .. 4 n + 4.
            let group = _mm512_broadcast_i32x4(_mm_setr_epi8(
                0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
            ));
            let mut p = [_mm512_setzero_si512(); 4];
            for n in 0..4 {
                let b = _mm512_packus_epi16(words[2 * n], words[2 * n + 1]);
                p[n] = _mm512_shuffle_epi8(b, group);
            }
            // q[l]: lane n = lane l of p[n] (a 4×4 transpose of 128-bit lanes).
            let t0 = _mm512_shuffle_i32x4::<0x44>(p[0], p[1]);
            let t1 = _mm512_shuffle_i32x4::<0xee>(p[0], p[1]);
            let t2 = _mm512_shuffle_i32x4::<0x44>(p[2], p[3]);
            let t3 = _mm512_shuffle_i32x4::<0xee>(p[2], p[3]);
            let q = [
                _mm512_shuffle_i32x4::<0x88>(t0, t2),
                _mm512_shuffle_i32x4::<0xdd>(t0, t2),
                _mm512_shuffle_i32x4::<0x88>(t1, t3),
                _mm512_shuffle_i32x4::<0xdd>(t1, t3),
            ];
            // Dword 4 n + i of q[l] is row 4 l + i, samples 4 n..; gather each row's 4 dwords.
            let rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
            let mut out = [[0u8; LANES]; LANES];
            for (l, q) in q.iter().enumerate() {
                let r = _mm512_permutexvar_epi32(rows, *q);
                _mm512_storeu_si512(out[4 * l..].as_mut_ptr() as *mut _, r);
            }
            out
        }
    }
}

#[derive(Clone, Copy)]
pub struct Fused;
impl Isa for Fused {
    const FMA: bool = true;
}

#[derive(Clone, Copy)]
pub struct Plain;
impl Isa for Plain {
    const FMA: bool = false;
}

impl V {
    pub const ZERO: V = V([0.0; LANES]);

    #[inline(always)]
    pub fn splat(v: f32) -> V {
        V([v; LANES])
    }

    /// `a * b + c`, fused where the instruction set has it.
    #[inline(always)]
    pub fn madd<I: Isa>(a: V, b: V, c: V) -> V {
        let mut r = [0f32; LANES];
        for i in 0..LANES {
            r[i] = if I::FMA {
                a.0[i].mul_add(b.0[i], c.0[i])
            } else {
                a.0[i] * b.0[i] + c.0[i]
            };
        }
        V(r)
    }
}

impl Add for V {
    type Output = V;
    #[inline(always)]
    fn add(self, o: V) -> V {
        // Plain loops, not closures: a closure would not inherit `#[inline(always)]`, and
        // compiled outside the `#[target_feature]` caller it loses the wide registers.
        let mut r = self.0;
        for i in 0..LANES {
            r[i] += o.0[i];
        }
        V(r)
    }
}

impl Sub for V {
    type Output = V;
    #[inline(always)]
    fn sub(self, o: V) -> V {
        let mut r = self.0;
        for i in 0..LANES {
            r[i] -= o.0[i];
        }
        V(r)
    }
}

impl Mul for V {
    type Output = V;
    #[inline(always)]
    fn mul(self, o: V) -> V {
        let mut r = self.0;
        for i in 0..LANES {
            r[i] *= o.0[i];
        }
        V(r)
    }
}

/// The widest instruction set this CPU offers the banded blur, for reports.
pub fn isa_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "AVX-512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "AVX2";
        }
    }
    "baseline SIMD"
}

/// Defines `pub fn $name<generics>(args)` that runs `$imp::<generics, I>(args)` compiled for
/// the best instruction set the CPU has: AVX-512, AVX2 + FMA, or the build's baseline.
/// `=> $imp[C, ...]` passes const arguments after `I`: `$imp::<generics, I, C, ...>`.
macro_rules! simd_dispatch {
    ($vis:vis fn $name:ident<$($g:ident: $b:path),*>($($a:ident: $t:ty),* $(,)?) => $imp:ident $([$($c:expr),*])?) => {
        #[allow(clippy::too_many_arguments)]
        $vis fn $name<$($g: $b),*>($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]
                unsafe fn wide<$($g: $b),*>($($a: $t),*) {
                    $imp::<$($g,)* $crate::cpu::lanes::Avx512 $($(, { $c })*)?>($($a),*)
                }
                #[allow(clippy::too_many_arguments)]
                #[target_feature(enable = "avx2,fma")]
                unsafe fn narrow<$($g: $b),*>($($a: $t),*) {
                    $imp::<$($g,)* $crate::cpu::lanes::Fused $($(, { $c })*)?>($($a),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                {
                    // SAFETY: the CPU reports every feature `wide` is compiled for.
                    return unsafe { wide::<$($g),*>($($a),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: as above, for `narrow`.
                    return unsafe { narrow::<$($g),*>($($a),*) };
                }
            }
            $imp::<$($g,)* $crate::cpu::lanes::Plain $($(, { $c })*)?>($($a),*)
        }
    };
}
pub(crate) use simd_dispatch;

/// While it lives, this thread's f32 arithmetic flushes subnormal results and operands to zero
/// (x86-64: MXCSR's FTZ and DAZ bits; other targets: nothing), and the thread's previous mode
/// comes back when it drops. The difference form of the banded blur needs it: inside a
/// constant region its states decay towards zero, through subnormals that cost x86 cores a
/// microcode assist per operation; flushed, they reach exact zero instead. Values that small change no output
/// (the states are added to a sample of at least their size), so the results are the same.
pub struct FlushSubnormals {
    #[cfg(target_arch = "x86_64")]
    saved: Option<u32>,
}

#[cfg(target_arch = "x86_64")]
const FTZ_DAZ: u32 = 0x8040;

impl FlushSubnormals {
    /// Flushes while `on`; otherwise leaves the mode alone.
    #[allow(deprecated)] // _mm_getcsr / _mm_setcsr: the only stable way to reach MXCSR
    #[inline]
    pub fn new(on: bool) -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
            let saved = on.then(|| {
                // SAFETY: SSE is part of x86-64; only the denormal handling bits change.
                unsafe {
                    let csr = _mm_getcsr();
                    _mm_setcsr(csr | FTZ_DAZ);
                    csr
                }
            });
            FlushSubnormals { saved }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = on;
            FlushSubnormals {}
        }
    }
}

impl Drop for FlushSubnormals {
    #[allow(deprecated)]
    #[inline]
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        if let Some(csr) = self.saved {
            // SAFETY: restores the value read in `new`.
            unsafe { std::arch::x86_64::_mm_setcsr(csr) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transpose_impl<I: Isa>(m: &[V; LANES]) -> [V; LANES] {
        I::transpose(m)
    }

    /// Every instruction set's transpose, through the dispatch the blur uses.
    fn transposed(m: &[V; LANES], out: &mut [V; LANES]) -> [V; LANES] {
        fn store<I: Isa>(m: &[V; LANES], out: &mut [V; LANES]) {
            *out = transpose_impl::<I>(m);
        }
        simd_dispatch!(fn run<>(m: &[V; LANES], out: &mut [V; LANES]) => store);
        run(m, out);
        *out
    }

    #[test]
    fn transpose_swaps_indices() {
        let mut m = [V::ZERO; LANES];
        for (i, row) in m.iter_mut().enumerate() {
            for j in 0..LANES {
                row.0[j] = (i * 100 + j) as f32;
            }
        }
        let mut out = [V::ZERO; LANES];
        let t = transposed(&m, &mut out);
        assert_eq!(t[3].0[7], 703.0);
        for i in 0..LANES {
            for j in 0..LANES {
                assert_eq!(t[i].0[j], m[j].0[i]);
            }
        }
        assert_eq!(transpose_impl::<Plain>(&m), t);
    }

    #[test]
    fn byte_transpose_converts_as_the_scalar_rule_does() {
        // Every rounding case: ties, the clamps, NaN and infinities, values past i32.
        let special = [
            -1e30,
            -300.0,
            -0.6,
            -0.5,
            -0.4,
            0.0,
            0.49,
            0.5,
            1.5,
            2.5,
            127.5,
            254.49,
            254.5,
            255.0,
            255.4,
            255.5,
            300.0,
            3e9,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
        ];
        let mut m = [V::ZERO; LANES];
        for (i, row) in m.iter_mut().enumerate() {
            for j in 0..LANES {
                let k = i * LANES + j;
                row.0[j] = special.get(k).copied().unwrap_or(k as f32 * 0.37 - 20.0);
            }
        }
        fn run_impl<I: Isa>(m: &[V; LANES], out: &mut [[u8; LANES]; LANES]) {
            *out = I::transpose_to_u8(m);
        }
        simd_dispatch!(fn run<>(m: &[V; LANES], out: &mut [[u8; LANES]; LANES]) => run_impl);
        let mut got = [[0u8; LANES]; LANES];
        run(&m, &mut got);
        for i in 0..LANES {
            for j in 0..LANES {
                let v = m[j].0[i];
                assert_eq!(got[i][j], level_to_u8(v), "{v}");
            }
        }
        assert_eq!(got[0][1], 255, "row 0 holds sample 1's lane 0");
        assert_eq!(Plain::transpose_to_u8(&m), got);
    }

    #[test]
    fn madd_agrees_with_and_without_fma() {
        let (a, b, c) = (V::splat(1.5), V::splat(-2.0), V::splat(0.25));
        assert_eq!(V::madd::<Fused>(a, b, c), V::madd::<Plain>(a, b, c));
        assert_eq!((a * b + c).0[0], -2.75);
    }
}
