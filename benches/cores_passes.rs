//! Where the time of an in-memory blur goes at 1, 2, 4, 8, 16 ... threads: each pass of the
//! banded blur on a 12 MP RGB8 photo-like image, each axis of the N-D engine on an f32 8192²
//! plane and a 512³ volume, and a plain parallel copy of the same bytes as the
//! machine's memory yardstick, and an arithmetic one: how much FMA work every thread of the
//! pool gets done against one thread alone, with the FMA units kept full (ten independent
//! chains, as the blur's walks keep them) and with one dependent chain (the clock alone). On a
//! host whose vCPUs share cores, the first is the most a SIMD-bound blur can scale. Medians of
//! ROUNDS runs in a rayon pool of each size. The table `benches/cores.py` prints is the
//! product's; this one says which pass keeps it from scaling.
//!
//! KEEP_SCRATCH=MIB keeps the banded blur's scratch between runs as the Python package does
//! (`gblur::keep_scratch`, the blur called as `Gaussian::blur_interleaved` calls it); without
//! it every run allocates its own, as the command's.
//!
//! usage: [ONLY=TEXT] [KEEP_SCRATCH=MIB] cargo run --release --features unstable-internals --example cores_passes -- [THREADS,..] [ROUNDS]

use gblur::cpu::banded;
use gblur::filter::{Blur2d, Method};
use gblur::memory::keeping_scratch;
use gblur::{nd, EdgeMode};
use image::{DynamicImage, ImageBuffer};
use rayon::prelude::*;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn noise(len: usize, seed: u64) -> impl Iterator<Item = u32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as u32
    })
}

/// Sines plus noise of about 18 levels: a photo's texture, not a test card.
fn photo(w: usize, h: usize) -> Vec<u8> {
    noise(w * h * 3, 1)
        .enumerate()
        .map(|(i, n)| {
            let (p, c) = (i / 3, (i % 3) as f32);
            let (x, y) = ((p % w) as f32, (p / w) as f32);
            let base = 128.0 + 60.0 * (x / 97.0 + c).sin() + 40.0 * (y / 61.0 - c).cos();
            (base + (n % 64) as f32 - 32.0).clamp(0.0, 255.0) as u8
        })
        .collect()
}

/// `v` on transparent huge pages where the kernel gives them on request, as numpy asks for
/// its large arrays: a column walk then steps through far fewer TLB entries.
fn huge<T: Clone>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    let bytes = std::mem::size_of_val(v);
    // SAFETY: advice on memory this vector owns; it changes no contents.
    unsafe { libc::madvise(out.as_mut_ptr().cast(), bytes, libc::MADV_HUGEPAGE) };
    out.extend_from_slice(v);
    out
}

/// Medians in ms of `rounds` runs of `run` on a fresh copy made by `reset`.
fn timed<S>(
    rounds: usize,
    state: &mut S,
    reset: impl Fn(&mut S),
    mut run: impl FnMut(&mut S) -> Vec<(String, f64)>,
) -> Vec<(String, f64)> {
    let mut all: Vec<Vec<(String, f64)>> = Vec::new();
    for r in 0..=rounds {
        reset(state);
        let t = Instant::now();
        let mut parts = run(state);
        parts.push(("total".into(), t.elapsed().as_secs_f64() * 1e3));
        if r > 0 {
            all.push(parts);
        }
    }
    (0..all[0].len())
        .map(|i| {
            (
                all[0][i].0.clone(),
                median(all.iter().map(|p| p[i].1).collect()),
            )
        })
        .collect()
}

/// `n` rounds of `CHAINS` independent FMA chains in the widest vectors the CPU has (AVX-512,
/// else AVX2): full FMA units with ten chains, the FMA latency alone with one.
#[cfg(target_arch = "x86_64")]
fn fma_chains<const CHAINS: usize>(n: u64) -> f32 {
    #[target_feature(enable = "avx512f")]
    unsafe fn wide<const CHAINS: usize>(n: u64) -> f32 {
        use std::arch::x86_64::*;
        let (m, c) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
        let mut a = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..n {
            for v in a.iter_mut() {
                *v = _mm512_fmadd_ps(*v, m, c);
            }
        }
        a.iter().map(|&v| _mm512_reduce_add_ps(v)).sum()
    }
    #[target_feature(enable = "avx2,fma")]
    unsafe fn narrow<const CHAINS: usize>(n: u64) -> f32 {
        use std::arch::x86_64::*;
        let (m, c) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        let mut a = [_mm256_set1_ps(1.0); CHAINS];
        for _ in 0..2 * n {
            for v in a.iter_mut() {
                *v = _mm256_fmadd_ps(*v, m, c);
            }
        }
        a.iter().map(|&v| _mm256_cvtss_f32(v)).sum()
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked above).
        unsafe { wide::<CHAINS>(n) }
    } else if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
    {
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        unsafe { narrow::<CHAINS>(n) }
    } else {
        0.0
    }
}

/// The arithmetic yardstick in the current pool: the medians of one thread's run of `work`
/// alone and of every thread's at once (`broadcast`), and how many times one thread's work
/// the pool did in the time of one.
#[cfg(target_arch = "x86_64")]
fn fma_yardstick(rounds: usize, work: fn(u64) -> f32, n: u64) -> Vec<(String, f64)> {
    let (mut one, mut all) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(3) {
        let t = Instant::now();
        std::hint::black_box(work(n));
        one.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        std::hint::black_box(rayon::broadcast(|_| work(n)));
        all.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let (one, all) = (median(one), median(all));
    let threads = rayon::current_num_threads() as f64;
    vec![
        ("one thread".into(), one),
        ("every thread".into(), all),
        ("times one thread's work".into(), threads * one / all),
    ]
}

fn print(case: &str, threads: usize, parts: &[(String, f64)]) {
    let cols: Vec<String> = parts.iter().map(|(n, ms)| format!("{n} {ms:.2}")).collect();
    println!("{case:<28} {threads:>3} threads | {}", cols.join(" | "));
}

fn main() {
    // ONLY=TEXT: of the N-D cases, those whose name holds TEXT.
    let only = std::env::var("ONLY").unwrap_or_default();
    if let Ok(mib) = std::env::var("KEEP_SCRATCH") {
        gblur::keep_scratch(mib.parse::<usize>().expect("KEEP_SCRATCH in MiB") << 20);
    }
    let args: Vec<String> = std::env::args().collect();
    let threads: Vec<usize> = args
        .get(1)
        .map(|s| {
            s.split(',')
                .map(|t| t.parse().expect("thread counts"))
                .collect()
        })
        .unwrap_or(vec![1, 2, 4, 8, 16]);
    let rounds: usize = args.get(2).map(|s| s.parse().expect("rounds")).unwrap_or(7);

    let (w, h) = (4000, 3000);
    let rgb =
        DynamicImage::ImageRgb8(ImageBuffer::from_raw(w as u32, h as u32, photo(w, h)).unwrap());
    let blur = Blur2d::new(Method::Auto, 5.0, 5.0);
    let plane: Vec<f32> = noise(8192 * 8192, 2)
        .map(|n| (n % 4096) as f32 / 4096.0)
        .collect();
    let volume: Vec<f32> = noise(512 * 512 * 512, 3)
        .map(|n| (n % 4096) as f32 / 4096.0)
        .collect();
    let f2 = |s: [f64; 2]| nd::Filter::new(&s).unwrap().mode(EdgeMode::Clamp);
    let f3 = |s: [f64; 3]| nd::Filter::new(&s).unwrap().mode(EdgeMode::Clamp);

    for &n in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap();
        pool.install(|| {
            let mut bytes = vec![0u8; 256 << 20];
            let from = vec![1u8; 256 << 20];
            let parts = timed(
                rounds,
                &mut bytes,
                |_| {},
                |b| {
                    b.par_chunks_mut(1 << 20)
                        .zip(from.par_chunks(1 << 20))
                        .for_each(|(d, s)| d.copy_from_slice(s));
                    vec![]
                },
            );
            print("copy 256 MiB", n, &parts);
            #[cfg(target_arch = "x86_64")]
            {
                let full = fma_yardstick(rounds, fma_chains::<10>, 20_000_000);
                print("FMA, 10 chains (units full)", n, &full);
                let clock = fma_yardstick(rounds, fma_chains::<1>, 50_000_000);
                print("FMA, 1 chain (latency)", n, &clock);
            }

            let mut img = rgb.clone();
            let parts = timed(
                rounds,
                &mut img,
                |i| i.clone_from(&rgb),
                |i| {
                    keeping_scratch(|| banded::blur_image(i, &blur, false))
                        .unwrap()
                        .into_iter()
                        .map(|p| (p.name.to_string(), p.ms))
                        .collect()
                },
            );
            print("banded RGB8 4000x3000 s5", n, &parts);

            let (kx, ky) = (
                banded::Axis::of(&blur.x).expect("recursive at sigma 5"),
                banded::Axis::of(&blur.y).expect("recursive at sigma 5"),
            );
            let px = banded::Pixels {
                channels: 3,
                alpha: false,
                linear: None,
                mix: None,
                sharpen: None,
            };
            let src = rgb.as_bytes();
            let mut out = vec![0u8; src.len()];
            let parts = timed(
                rounds,
                &mut out,
                |_| {},
                |o| {
                    keeping_scratch(|| {
                        banded::blur_axes_into(src, o, (w, h), &px, (Some(kx), Some(ky)))
                    })
                    .into_iter()
                    .map(|p| (p.name.to_string(), p.ms))
                    .collect()
                },
            );
            print("banded RGB8 into another", n, &parts);

            let mut p = huge(&plane);
            let k = banded::Axis::of(&blur.x).expect("recursive at sigma 5");
            let parts = timed(
                rounds,
                &mut p,
                |p| p.copy_from_slice(&plane),
                |p| {
                    banded::blur_gray_f32_in_place(p, (8192, 8192), k, k)
                        .into_iter()
                        .map(|p| (p.name.to_string(), p.ms))
                        .collect()
                },
            );
            print("banded f32 8192^2 s5", n, &parts);
            for (name, s) in [
                ("nd f32 8192^2 axis 0", [5.0, 0.0]),
                ("nd f32 8192^2 axis 1", [0.0, 5.0]),
                ("nd f32 8192^2 both", [5.0, 5.0]),
            ] {
                if !only.is_empty() && !name.contains(only.as_str()) {
                    continue;
                }
                let parts = timed(
                    rounds,
                    &mut p,
                    |p| p.copy_from_slice(&plane),
                    |p| {
                        f2(s).apply(p, &[8192, 8192]).unwrap();
                        vec![]
                    },
                );
                print(name, n, &parts);
            }
            drop(p);
            let mut v = huge(&volume);
            // "axis 1, axis 2" filters the array twice, a trip each; "axes 1+2" once, plane
            // by plane where the planes fit (`cpu::axis::planes`).
            for (name, sigmas) in [
                ("nd f32 512^3 axis 0", &[[3.0, 0.0, 0.0]][..]),
                ("nd f32 512^3 axis 1", &[[0.0, 3.0, 0.0]]),
                ("nd f32 512^3 axis 2", &[[0.0, 0.0, 3.0]]),
                (
                    "nd f32 512^3 axis 1, axis 2",
                    &[[0.0, 3.0, 0.0], [0.0, 0.0, 3.0]],
                ),
                ("nd f32 512^3 axes 1+2", &[[0.0, 3.0, 3.0]]),
                ("nd f32 512^3 all", &[[3.0, 3.0, 3.0]]),
            ] {
                if !only.is_empty() && !name.contains(only.as_str()) {
                    continue;
                }
                let parts = timed(
                    rounds,
                    &mut v,
                    |v| v.copy_from_slice(&volume),
                    |v| {
                        for &s in sigmas {
                            f3(s).apply(v, &[512, 512, 512]).unwrap();
                        }
                        vec![]
                    },
                );
                print(name, n, &parts);
            }
        });
    }
}
