//! An f32 array through the device's staged transfers (`gpu::opencl::staged`) at several chunk
//! sizes: the wall time of the whole call beside the device's time in its uploads, kernels and
//! downloads, so that what the host adds (filling and draining the pinned slots where the bus
//! does not hide it) shows as the difference. Paired rounds, the chunk sizes in turn, medians.
//!
//! Usage: cargo run --release -p gblur --features unstable-internals --example gpu_staged -- [DEVICE] [SHAPE,..] [ROUNDS]
//! (DEVICE as `--device` takes it, default gpu; SHAPE like 8192x8192 or 512x512x512.)
use gblur::backend::{self, Device};
use gblur::filter::{LineFilter, Method};
use gblur::gpu::host_array::{Extended, Pad, Same};
use gblur::gpu::opencl::staged::HostSide;
use gblur::gpu::opencl::staged::SLOT_BYTES;
use gblur::gpu::opencl::DeviceChoice;
use gblur::gpu::plan::PipelineChoice;
use gblur::gpu::volume;
use gblur::report::PassKind;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "gpu".into());
    let shapes: Vec<Vec<usize>> = args
        .next()
        .unwrap_or_else(|| "8192x8192,512x512x512".into())
        .split(',')
        .map(|s| s.split('x').map(str::parse).collect::<Result<_, _>>())
        .collect::<Result<_, _>>()?;
    let rounds: usize = args.next().map_or(Ok(7), |r| r.parse())?;
    let chosen =
        backend::choose_device(&DeviceChoice::parse(&which), PipelineChoice::Auto, || None)?;
    let target = chosen
        .target
        .ok_or_else(|| anyhow::anyhow!("{which}: no OpenCL device"))?;
    let device = Device::open(target)?;
    println!(
        "{}, {} threads",
        device.ctx.device_name(),
        rayon::current_num_threads()
    );
    let chunks = [SLOT_BYTES / 8, SLOT_BYTES / 4, SLOT_BYTES / 2, SLOT_BYTES];
    for shape in shapes {
        let len: usize = shape.iter().product();
        let input: Vec<f32> = (0..len).map(|i| (i % 1021) as f32 / 1021.0).collect();
        let sigma = if shape.len() == 3 { 3.0 } else { 5.0 };
        let lines = vec![Some(LineFilter::new(Method::Recursive, sigma)); shape.len()];
        let mut data = input.clone();
        let mut out = input.clone();
        // In place through `Same`, or through `Extended` (numpy's route: an input and an
        // output, nothing extended).
        let mut run = |(chunk, same): (usize, bool)| -> anyhow::Result<[f64; 4]> {
            data.copy_from_slice(&input);
            let t = Instant::now();
            let pads = vec![Pad::NONE; shape.len()];
            let mut host: Box<dyn HostSide> = match same {
                true => Box::new(Same(&mut data)),
                false => Box::new(Extended::new(&input, &mut out, &shape, pads)),
            };
            let passes = volume::blur_staged(
                &device.ctx,
                &mut *host,
                &shape,
                &lines,
                device.pipeline,
                chunk,
            )?;
            let wall = t.elapsed().as_secs_f64() * 1e3;
            let ms = |f: &dyn Fn(&gblur::report::Pass) -> bool| {
                passes.iter().filter(|p| f(p)).map(|p| p.ms).sum::<f64>()
            };
            Ok([
                wall,
                ms(&|p| p.name == "upload"),
                ms(&|p| p.kind != PassKind::Transfer),
                ms(&|p| p.name == "download"),
            ])
        };
        let chunks: Vec<(usize, bool)> = chunks
            .iter()
            .flat_map(|&c| [(c, false), (c, true)])
            .collect();
        run(chunks[2])?;
        let mut times = vec![Vec::new(); chunks.len()];
        for round in 0..rounds {
            let mut order: Vec<usize> = (0..chunks.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                times[i].push(run(chunks[i])?);
            }
        }
        println!("{shape:?} sigma {sigma}: wall / device upload + kernels + download, ms (medians of {rounds})");
        for ((chunk, same), t) in chunks.iter().zip(&mut times) {
            let median = |f: usize| {
                let mut v: Vec<f64> = t.iter().map(|x| x[f]).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let gb = len as f64 * 4.0 / 1e6;
            println!(
                "  {} chunks of {:>3} MiB: {:7.2} / {:6.2} + {:6.2} + {:6.2}  (up {:.1} GB/s, down {:.1} GB/s on the bus)",
                if *same { "in place, " } else { "into another," },
                (chunk * 4) >> 20,
                median(0),
                median(1),
                median(2),
                median(3),
                gb / median(1),
                gb / median(3)
            );
        }
    }
    Ok(())
}
