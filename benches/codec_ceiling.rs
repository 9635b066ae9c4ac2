//! The codec ceiling of `gblur batch`: every JPEG of a folder decoded and encoded again the
//! way the batch does it (a colour JPEG as its YCbCr planes, written in its own layout; other
//! files through RGB; quality 90 as the batch's default), with no blur at all, spread over
//! every core as the batch spreads its images. No blur, however fast, can take a batch beyond
//! this rate on the same cores; `benches/batch.sh` prints it beside the peers. With `rgb` as
//! the third argument every file goes through RGB (`--jpeg-path rgb`).
//!
//! Usage: cargo run --release -p gblur --features unstable-internals --example codec_ceiling -- DIR [RUNS] [rgb]
//! Prints one line per run: images/s, and per image the decode and encode time summed over
//! threads.
use gblur::codec::{self, EncodeOptions};
use image::codecs::png::CompressionType;
use rayon::prelude::*;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: codec_ceiling DIR [RUNS] [rgb]";
    let dir = std::path::PathBuf::from(args.next().ok_or_else(|| anyhow::anyhow!(usage))?);
    let runs: usize = match args.next() {
        Some(r) => r.parse().map_err(|_| anyhow::anyhow!(usage))?,
        None => 3,
    };
    let planes = args.next().as_deref() != Some("rgb");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if codec::sniff(&path)? == Some(image::ImageFormat::Jpeg) {
            files.push(path);
        }
    }
    anyhow::ensure!(!files.is_empty(), "{}: no JPEG files", dir.display());
    files.sort();
    let opts = EncodeOptions {
        jpeg: codec::jpeg::JpegOptions::default(),
        png_compression: CompressionType::Default,
        dither: false,
        quality_given: false,
        webp_lossless_input: false,
        tiff: codec::tiff::TiffCompression::Same,
        tiff_given: false,
        subsampling_given: false,
        png_given: false,
    };
    for _ in 0..runs {
        let t = Instant::now();
        let (decode, encode) = files
            .par_iter()
            .map(|p| -> anyhow::Result<(f64, f64)> {
                if planes {
                    if let Some(times) = planes_round_trip(p)? {
                        return Ok(times);
                    }
                }
                let t0 = Instant::now();
                let d = codec::decode(p, 4096)?;
                let t1 = Instant::now();
                let jpeg = opts.jpeg.resolve(d.jpeg.as_ref()).0;
                let icc = (d.meta.icc.as_deref(), Default::default());
                let image = (&d.image, d.gray_float);
                let (bytes, _) = codec::encode(image, d.format, icc, (opts, jpeg), p)?;
                std::hint::black_box(bytes);
                Ok(((t1 - t0).as_secs_f64(), t1.elapsed().as_secs_f64()))
            })
            .try_reduce(|| (0.0, 0.0), |a, b| Ok((a.0 + b.0, a.1 + b.1)))?;
        let (s, n) = (t.elapsed().as_secs_f64(), files.len() as f64);
        println!(
            "codec ceiling: {} JPEGs in {s:.2} s = {:.1} images/s; per image decode {:.1} ms, encode {:.1} ms (summed over threads)",
            files.len(),
            n / s,
            decode / n * 1e3,
            encode / n * 1e3
        );
    }
    Ok(())
}

/// Decode and encode times of `path` as its YCbCr planes, or None where it is not a colour
/// JPEG in a layout gblur writes.
fn planes_round_trip(path: &std::path::Path) -> anyhow::Result<Option<(f64, f64)>> {
    let t0 = Instant::now();
    let bytes = std::fs::read(path)?;
    let Some(chroma) = codec::jpeg::JpegTraits::read(&bytes).chroma else {
        return Ok(None);
    };
    let Some((planes, meta)) = codec::decode_jpeg_planes(path, &bytes, chroma, 4096)? else {
        return Ok(None);
    };
    let t1 = Instant::now();
    let quality = codec::jpeg::DEFAULT_QUALITY;
    let out = codec::jpeg::encode_planes(&planes, quality, meta.icc.as_deref())
        .map_err(anyhow::Error::msg)?;
    std::hint::black_box(out);
    Ok(Some(((t1 - t0).as_secs_f64(), t1.elapsed().as_secs_f64())))
}
