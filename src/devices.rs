//! `gblur devices`: every OpenCL platform and device, and the path that runs without one.

use crate::gpu::opencl::{device, ClError};
use std::io::Write;

pub fn print(json: bool) -> anyhow::Result<()> {
    let devices = match device::list() {
        Ok(d) => d,
        Err(ClError::NoRuntime) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&devices)?);
        return Ok(());
    }
    if devices.is_empty() {
        let why = if crate::gpu::opencl::runtime_available() {
            "an OpenCL loader is installed but no platform is registered"
        } else {
            "no OpenCL runtime is installed"
        };
        let _ = writeln!(
            out,
            "no OpenCL devices ({why}); --device rust (the built-in path) runs anyway"
        );
        return Ok(());
    }
    let _ = writeln!(
        out,
        "{:>2}  {:<5} {:<40} {:<28} {:>4} {:>9} {:>9} {:>6}",
        "#", "kind", "device", "platform / version", "CUs", "mem MiB", "alloc MiB", "local"
    );
    for d in &devices {
        let _ = writeln!(
            out,
            "{:>2}  {:<5} {:<40} {:<28} {:>4} {:>9} {:>9} {:>4}KiB",
            d.index,
            d.kind,
            d.name,
            format!("{} / {}", d.platform, d.version),
            d.compute_units,
            d.global_mem_mib,
            d.max_alloc_mib,
            d.local_mem_kib
        );
    }
    let _ = writeln!(
        out,
        "    rust  built-in Rust implementation ({} threads)",
        rayon::current_num_threads()
    );
    Ok(())
}
