//! A JPEG's YCbCr planes decoded at several thread counts, as the command decodes them: one
//! thread is libjpeg's single decoder; more spread a file without restart markers over the
//! cores (`codec::jpeg::entropy`). Paired rounds, the thread counts in turn, medians.
//!
//! Usage: cargo run --release -p gblur --features unstable-internals --example jpeg_decode_cores -- FILE.jpg [THREADS,..] [ROUNDS]
use gblur::codec::jpeg::{decode_planes, JpegTraits};
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: jpeg_decode_cores FILE.jpg [THREADS,..] [ROUNDS]";
    let file = args.next().ok_or_else(|| anyhow::anyhow!(usage))?;
    let threads: Vec<usize> = match args.next() {
        Some(t) => t.split(',').map(|n| n.parse()).collect::<Result<_, _>>()?,
        None => vec![1, 2],
    };
    let rounds: usize = args.next().map_or(Ok(7), |r| r.parse())?;
    let bytes = std::fs::read(&file)?;
    let chroma = JpegTraits::read(&bytes)
        .chroma
        .ok_or_else(|| anyhow::anyhow!("{file}: not a YCbCr JPEG"))?;
    let pools: Vec<rayon::ThreadPool> = threads
        .iter()
        .map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build())
        .collect::<Result<_, _>>()?;
    let decode = |pool: &rayon::ThreadPool| {
        let t = Instant::now();
        let planes = pool.install(|| decode_planes(&bytes, chroma, u64::MAX));
        (t.elapsed().as_secs_f64() * 1e3, planes)
    };
    let (_, first) = decode(&pools[0]);
    let first = first.ok_or_else(|| anyhow::anyhow!("{file}: not decoded as planes"))?;
    let mut times = vec![Vec::new(); pools.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..pools.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let (ms, planes) = decode(&pools[i]);
            let planes = planes.ok_or_else(|| anyhow::anyhow!("not decoded"))?;
            anyhow::ensure!(
                planes.planes == first.planes,
                "{} threads: other planes",
                threads[i]
            );
            times[i].push(ms);
        }
    }
    let mp = first.width as f64 * first.height as f64 / 1e6;
    println!(
        "{file}: {}x{} ({mp:.1} MP), {} bytes",
        first.width,
        first.height,
        bytes.len()
    );
    for (n, mut t) in threads.iter().zip(times) {
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        println!(
            "threads {n:>3}: {median:8.1} ms  {:7.1} MP/s",
            mp / median * 1e3
        );
    }
    Ok(())
}
