//! An f32 array through the device's staged transfers (`gpu::opencl::staged`) at several chunk
//! sizes, and from the context's page-locked memory (`gpu::volume::blur_direct`) whole and in
//! overlapped slabs: the wall time of the whole call beside the device's time in its uploads,
//! kernels and downloads. Staged, what the host adds (filling and draining the pinned slots
//! where the bus does not hide it) shows as the difference; in slabs the wall is under the
//! sum. Paired rounds, the variants in turn, medians.
//!
//! Usage: cargo run --release -p gblur --features unstable-internals --example gpu_staged -- [DEVICE] [SHAPE,..] [ROUNDS]
//! (DEVICE as `--device` takes it, default gpu; SHAPE like 8192x8192 or 512x512x512.) With
//! `GBLUR_MAX_ALLOC_MIB` set below the array's size, the staged route goes in slabs and the
//! page-locked one, which keeps the array whole on the device, is left out.
use gblur::backend::{self, Device};
use gblur::filter::{LineFilter, Method};
use gblur::gpu::host_array::{Extended, Pad, Same};
use gblur::gpu::opencl::staged::HostSide;
use gblur::gpu::opencl::staged::SLOT_BYTES;
use gblur::gpu::opencl::DeviceChoice;
use gblur::gpu::plan::PipelineChoice;
use gblur::gpu::volume::{self, Direct};
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
    let chunks = [SLOT_BYTES / 8, SLOT_BYTES / 4, SLOT_BYTES / 2];
    for shape in shapes {
        let len: usize = shape.iter().product();
        let input: Vec<f32> = (0..len).map(|i| (i % 1021) as f32 / 1021.0).collect();
        let sigma = if shape.len() == 3 { 3.0 } else { 5.0 };
        let lines = vec![Some(LineFilter::new(Method::Recursive, sigma)); shape.len()];
        let mut data = input.clone();
        let mut out = input.clone();
        // The copy engines' route keeps the whole array on the device: one larger than the
        // device may hold (`GBLUR_MAX_ALLOC_MIB` lowers that) goes staged alone, in slabs.
        let whole = volume::holds_whole(&device.ctx, len);
        let mut locked = match whole {
            true => Some((device.ctx.page_locked(len)?, device.ctx.page_locked(len)?)),
            false => None,
        };
        if let Some(locked) = &mut locked {
            locked.0.as_mut_slice().copy_from_slice(&input);
        }
        // Staged: in place through `Same`, or through `Extended` (numpy's route: an input
        // and an output, nothing extended). Page-locked: into another page-locked array, or in
        // place (the other one, blurred again each round).
        let mut run = |variant: Variant| -> anyhow::Result<[f64; 4]> {
            data.copy_from_slice(&input);
            let t = Instant::now();
            let passes = match variant {
                Variant::Staged { chunk, same } => {
                    let pads = vec![Pad::NONE; shape.len()];
                    let mut host: Box<dyn HostSide> = match same {
                        true => Box::new(Same(&mut data)),
                        false => Box::new(Extended::new(&input, &mut out, &shape, pads)),
                    };
                    let ctx = &device.ctx;
                    volume::blur_staged(ctx, &mut *host, &shape, &lines, device.pipeline, chunk)?
                }
                Variant::PageLocked { slabs, same } => {
                    let ctx = &device.ctx;
                    let locked = locked
                        .as_mut()
                        .expect("page-locked variants where it holds");
                    ctx.overlap_from(if slabs { 0 } else { usize::MAX });
                    let arrays = match same {
                        true => Direct::InPlace(locked.1.as_mut_slice()),
                        false => Direct::Into(locked.0.as_slice(), locked.1.as_mut_slice()),
                    };
                    volume::blur_direct(ctx, arrays, &shape, &lines, device.pipeline)?
                        .ok_or_else(|| anyhow::anyhow!("a non-finite sample"))?
                }
            };
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
        let mut chunks: Vec<Variant> = chunks
            .iter()
            .flat_map(|&chunk| [false, true].map(|same| Variant::Staged { chunk, same }))
            .collect();
        if whole {
            for same in [false, true] {
                chunks.extend([false, true].map(|slabs| Variant::PageLocked { slabs, same }));
            }
        }
        for &v in &chunks {
            run(v)?;
        }
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
        for (variant, t) in chunks.iter().zip(&mut times) {
            let median = |f: usize| {
                let mut v: Vec<f64> = t.iter().map(|x| x[f]).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let gb = len as f64 * 4.0 / 1e6;
            println!(
                "  {variant:<40} {:7.2} / {:6.2} + {:6.2} + {:6.2}  (up {:.1} GB/s, down {:.1} GB/s on the bus)",
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

/// How the array goes to the device: staged in chunks (`chunk` samples), in place or into
/// another array; or from page-locked memory, whole or in overlapped slabs, into another
/// page-locked array or in place.
#[derive(Clone, Copy)]
enum Variant {
    Staged { chunk: usize, same: bool },
    PageLocked { slabs: bool, same: bool },
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match *self {
            Variant::Staged { chunk, same } => {
                let how = if same { "in place" } else { "into another" };
                format!("staged, {how}, chunks of {} MiB:", (chunk * 4) >> 20)
            }
            Variant::PageLocked { slabs, same } => {
                let how = if same { "in place" } else { "into another" };
                let whole = if slabs { "in slabs" } else { "whole" };
                format!("page-locked, {how}, {whole}:")
            }
        };
        f.pad(&text)
    }
}
