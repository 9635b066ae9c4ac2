//! `gblur devices`: every OpenCL platform and device, and the path that runs without one;
//! `gblur calibrate`: the figures `--device auto`'s cost model predicts from, measured again.

use gblur::command::devices::{self, ClError, DeviceChoice, Pipeline};
use std::io::Write;

/// Measures the Rust path and the device `choice` names (`auto`: the first GPU, none where
/// there is no GPU) afresh, keeps the figures in the cache and prints them.
pub fn calibrate(choice: &DeviceChoice, json: bool) -> anyhow::Result<()> {
    let root = devices::cache_root();
    let (rust, rust_src) = devices::rust_figures(root.as_deref(), true);
    let info = match choice {
        DeviceChoice::Auto => match devices::list_devices() {
            Ok(devices) => devices.into_iter().find(|d| d.is_gpu()),
            Err(ClError::NoRuntime) => None,
            Err(e) => return Err(e.into()),
        },
        DeviceChoice::Rust => None,
        named => devices::select_device(named)?,
    };
    let device = match &info {
        Some(d) => Some(devices::device_figures(
            root.as_deref(),
            d,
            Pipeline::fastest_for(d),
            true,
        )?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    if json {
        let value = serde_json::json!({
            "rust": rust,
            "device": info.as_ref().map(|d| d.label()),
            "device_figures": device.as_ref().map(|(f, _)| f),
        });
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let _ = writeln!(
        out,
        "Rust path: {:.1} M samples/s per thread, {} threads ({rust_src})",
        rust.samples_per_s_per_thread * 1e-6,
        rayon::current_num_threads()
    );
    match (&info, &device) {
        (Some(d), Some((f, src))) => {
            let _ = writeln!(out, "{} ({src}):", d.label());
            let _ = write!(out, "{}", device_table(f));
        }
        _ if *choice == DeviceChoice::Rust => {}
        _ => {
            let _ = writeln!(out, "no GPU found: only the Rust path was measured");
        }
    }
    Ok(())
}

/// A device's calibrated figures, a line each.
fn device_table(f: &gblur::command::devices::DeviceFigures) -> String {
    [
        format!("  open context      {:>10.1} ms", f.open_ms),
        format!("  compile kernels   {:>10.1} ms", f.compile_ms),
        format!("  cached kernels    {:>10.1} ms", f.cached_build_ms),
        format!(
            "  upload            {:>10.2} GB/s",
            f.upload_bytes_per_s * 1e-9
        ),
        format!(
            "  download          {:>10.2} GB/s",
            f.download_bytes_per_s * 1e-9
        ),
        format!(
            "  kernels           {:>10.0} M samples/s",
            f.kernel_samples_per_s * 1e-6
        ),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect()
}

pub fn print(json: bool) -> anyhow::Result<()> {
    let devices = match devices::list_devices() {
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
        let why = if devices::runtime_available() {
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
    let _ = writeln!(out, "    rust  {}", devices::rust_device_name());
    Ok(())
}
