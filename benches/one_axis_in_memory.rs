//! One-axis blurs against the 2-D blur in memory, through the public API
//! (`Gaussian::blur_interleaved`): a W×H 8-bit image of C channels (a gradient with noise),
//! sigma 5 along x alone, y alone and both, ROUNDS rounds in which each runs once on a fresh
//! copy, order rotating. Prints each variant's median and its time over the 2-D blur's as the
//! median of the per-round ratios with their range. Unlike one run of the command, every call
//! here finds the thread pool started and the cores busy, unless IDLE_MS is given: then the
//! program sleeps that long before each call, as the command's single-threaded decode leaves
//! the other cores idle before its blur.
//!
//! usage: cargo run --release -p gblur --example one_axis_in_memory -- [CHANNELS] [ROUNDS] [W] [H] [IDLE_MS]

use gblur::{Gaussian, Layout};
use std::time::Instant;

fn arg(n: usize, default: usize) -> usize {
    std::env::args()
        .nth(n)
        .map(|s| s.parse().expect("a whole number"))
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), gblur::Error> {
    let (channels, rounds) = (arg(1, 1), arg(2, 31));
    let (w, h) = (arg(3, 4896), arg(4, 3264));
    let idle = std::time::Duration::from_millis(arg(5, 0) as u64);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let image: Vec<u8> = (0..w * h * channels)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let ramp = ((i / channels) % w * 200 / w) as u8;
            ramp.wrapping_add((state >> 59) as u8 * 3)
        })
        .collect();
    let variants = [
        ("2-D", Gaussian::new(5.0)?),
        (
            "x alone",
            Gaussian::builder().sigma_x(5.0).sigma_y(0.0).build()?,
        ),
        (
            "y alone",
            Gaussian::builder().sigma_x(0.0).sigma_y(5.0).build()?,
        ),
    ];
    let layout = Layout::new(w, h, channels);
    let mut work = image.clone();
    let mut ms = vec![Vec::new(); variants.len()];
    for r in 0..rounds {
        for i in 0..variants.len() {
            let v = (i + r) % variants.len();
            work.copy_from_slice(&image);
            std::thread::sleep(idle);
            let t = Instant::now();
            variants[v].1.blur_interleaved(&mut work, layout)?;
            ms[v].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "== {w}x{h}, {channels} channel(s) 8-bit, sigma 5, in memory, {rounds} rounds, {} ms idle before each ==",
        idle.as_millis()
    );
    for (v, (name, _)) in variants.iter().enumerate() {
        let mut line = format!("{name:8} {:7.2} ms", median(&ms[v]));
        if v > 0 {
            let ratios: Vec<f64> = ms[v].iter().zip(&ms[0]).map(|(a, b)| a / b).collect();
            let (lo, hi) = ratios
                .iter()
                .fold((f64::MAX, 0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
            line += &format!("   {:.2}x the 2-D blur ({lo:.2}-{hi:.2})", median(&ratios));
        }
        println!("{line}");
    }
    Ok(())
}
