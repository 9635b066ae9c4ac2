//! Lists every OpenCL platform and device (all device types: PoCL exposes only CPUs) and
//! resolves the user's `--device` choice.

use super::ClError;
use opencl3::device::{
    Device, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, CL_DEVICE_TYPE_GPU,
};
use opencl3::platform::get_platforms;
use opencl3::types::cl_device_id;
use serde::Serialize;
use std::fmt;
use std::sync::OnceLock;

/// One OpenCL device as the user sees it in `gblur devices`.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// Its place in `list_devices`' order (`--device N`).
    pub index: usize,
    /// The OpenCL platform's name.
    pub platform: String,
    /// The device's name.
    pub name: String,
    /// `gpu`, `cpu` or `other`.
    pub kind: &'static str,
    /// The OpenCL version it reports.
    pub version: String,
    /// The driver's version.
    pub driver: String,
    /// Its compute units.
    pub compute_units: u32,
    /// Its global memory, MiB.
    pub global_mem_mib: u64,
    /// Its largest single allocation, MiB.
    pub max_alloc_mib: u64,
    /// Its local memory per work-group, KiB.
    pub local_mem_kib: u64,
    /// Its largest work-group.
    pub max_work_group: usize,
    /// The `cl_device_id`, kept as an address so the list can be shared between threads.
    #[serde(skip)]
    id: usize,
}

impl DeviceInfo {
    /// `NAME (PLATFORM, OpenCL x.y)`: how reports name the device.
    pub fn label(&self) -> String {
        let version: Vec<&str> = self.version.split_whitespace().take(2).collect();
        format!("{} ({}, {})", self.name, self.platform, version.join(" "))
    }

    /// The OpenCL handle.
    pub fn id(&self) -> cl_device_id {
        self.id as cl_device_id
    }

    /// Whether it is a GPU.
    pub fn is_gpu(&self) -> bool {
        self.kind == "gpu"
    }

    /// A device that exists only by name, for unit tests of what is keyed on devices.
    #[cfg(test)]
    pub fn for_tests(platform: &str, name: &str, driver: &str) -> DeviceInfo {
        DeviceInfo {
            index: 0,
            platform: platform.into(),
            name: name.into(),
            kind: "gpu",
            version: "OpenCL 3.0".into(),
            driver: driver.into(),
            compute_units: 1,
            global_mem_mib: 1024,
            max_alloc_mib: 256,
            local_mem_kib: 48,
            max_work_group: 1024,
            id: 0,
        }
    }
}

/// What `--device` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// A GPU if there is one, else any OpenCL device, else the Rust path.
    Auto,
    /// The device at this index of `list_devices`.
    Index(usize),
    /// The first device whose name contains this (any case).
    Name(String),
    /// The first GPU.
    Gpu,
    /// The first CPU device (PoCL's).
    Cpu,
    /// The built-in Rust implementation.
    Rust,
}

impl DeviceChoice {
    /// `--device`'s value: `auto`, `rust`, `gpu`, `cpu`, an index or part of a name.
    pub fn parse(s: &str) -> Self {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Self::Auto,
            "gpu" => Self::Gpu,
            "cpu" => Self::Cpu,
            "rust" => Self::Rust,
            _ => match s.parse() {
                Ok(i) => Self::Index(i),
                Err(_) => Self::Name(s.to_string()),
            },
        }
    }
}

impl fmt::Display for DeviceChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => write!(f, "auto"),
            Self::Index(i) => write!(f, "{i}"),
            Self::Name(n) => write!(f, "{n}"),
            Self::Gpu => write!(f, "gpu"),
            Self::Cpu => write!(f, "cpu"),
            Self::Rust => write!(f, "rust"),
        }
    }
}

fn kind_name(t: u64) -> &'static str {
    if t & CL_DEVICE_TYPE_GPU != 0 {
        "gpu"
    } else if t & CL_DEVICE_TYPE_CPU != 0 {
        "cpu"
    } else if t & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        "accelerator"
    } else {
        "other"
    }
}

/// Every device of every platform, numbered in discovery order. Discovered once per process:
/// some ICD loaders answer concurrent first calls with errors.
pub fn list() -> Result<Vec<DeviceInfo>, ClError> {
    static DEVICES: OnceLock<Option<Vec<DeviceInfo>>> = OnceLock::new();
    DEVICES
        .get_or_init(discover)
        .clone()
        .ok_or(ClError::NoRuntime)
}

fn discover() -> Option<Vec<DeviceInfo>> {
    if !super::runtime_available() {
        return None;
    }
    // An ICD loader with no platform registered answers CL_PLATFORM_NOT_FOUND_KHR: no devices.
    let platforms = get_platforms().unwrap_or_default();
    let mut out = Vec::new();
    for p in platforms {
        let platform = p.name().unwrap_or_default();
        for id in p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default() {
            let d = Device::new(id);
            out.push(DeviceInfo {
                index: out.len(),
                platform: platform.clone(),
                name: d.name().unwrap_or_default().trim().to_string(),
                kind: kind_name(d.dev_type().unwrap_or(0)),
                version: d.version().unwrap_or_default().trim().to_string(),
                driver: d.driver_version().unwrap_or_default().trim().to_string(),
                compute_units: d.max_compute_units().unwrap_or(0),
                global_mem_mib: d.global_mem_size().unwrap_or(0) >> 20,
                max_alloc_mib: max_alloc_override()
                    .unwrap_or_else(|| d.max_mem_alloc_size().unwrap_or(0) >> 20),
                local_mem_kib: d.local_mem_size().unwrap_or(0) >> 10,
                max_work_group: d.max_work_group_size().unwrap_or(0),
                id: id as usize,
            });
        }
    }
    Some(out)
}

/// The ICD loader's folder of registered OpenCL runtimes.
const VENDORS: &str = "/etc/OpenCL/vendors";

/// The runtimes registered in `place`: the `.icd` files of a vendors folder, or `place` itself
/// where it is one. Each names a runtime's library.
fn icd_files(place: &std::path::Path) -> Vec<std::path::PathBuf> {
    let files = match std::fs::read_dir(place) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => vec![place.to_path_buf()],
    };
    let icd = |f: &std::path::PathBuf| f.extension().is_some_and(|x| x == "icd");
    files.into_iter().filter(icd).collect()
}

/// Whether an OpenCL runtime other than PoCL's is registered with the ICD loader (in the
/// vendors folder, or the folder or file OCL_ICD_VENDORS names): a GPU may be behind it,
/// which only loading the driver tells.
pub fn gpu_runtime_registered() -> bool {
    let place: std::path::PathBuf =
        std::env::var_os("OCL_ICD_VENDORS").map_or_else(|| VENDORS.into(), Into::into);
    icd_files(&place)
        .iter()
        .any(|f| names_pocl(f) == Some(false))
}

/// Whether the `.icd` file `f` names PoCL's library; None where it cannot be read.
fn names_pocl(f: &std::path::Path) -> Option<bool> {
    let library = std::fs::read_to_string(f).ok()?;
    Some(library.to_ascii_lowercase().contains("pocl"))
}

/// Whether every OpenCL runtime registered with the ICD loader is PoCL, which (as Debian and
/// most distributions build it) drives only the CPU. Loading a runtime maps its libraries
/// (PoCL brings LLVM: about 60 MB), so `auto` skips that when no runtime could offer a GPU.
/// Unknown layouts (OCL_ICD_VENDORS set, no vendors folder) answer false, and so does a
/// runtime whose file cannot be read.
pub fn only_cpu_runtimes() -> bool {
    if std::env::var_os("OCL_ICD_VENDORS").is_some() {
        return false;
    }
    let files = icd_files(std::path::Path::new(VENDORS));
    !files.is_empty() && files.iter().all(|f| names_pocl(f) == Some(true))
}

/// `GBLUR_MAX_ALLOC_MIB`: a test hook that lowers every device's CL_DEVICE_MAX_MEM_ALLOC_SIZE,
/// so the fault drills can hand a device an image larger than it may allocate without
/// needing a gigapixel test image.
fn max_alloc_override() -> Option<u64> {
    std::env::var("GBLUR_MAX_ALLOC_MIB").ok()?.parse().ok()
}

/// The OpenCL device the kernel tests run on, for the library's tests and the tutorial
/// suite's: the one GBLUR_TEST_DEVICE names, else the first GPU, else the first device
/// (PoCL's CPU device in CI). Without one the test fails with what to install: no test skips
/// itself.
#[cfg(any(test, feature = "unstable-internals"))]
pub fn for_tests() -> DeviceInfo {
    let choice = std::env::var("GBLUR_TEST_DEVICE")
        .map(|s| DeviceChoice::parse(&s))
        .unwrap_or(DeviceChoice::Auto);
    select(&choice)
        .expect("OpenCL device selection failed")
        .expect("no OpenCL device: the tests need one (Debian: apt-get install pocl-opencl-icd ocl-icd-libopencl1; .ci/run installs them)")
}

/// Resolves `choice` against the installed devices. `Ok(None)` means the Rust path: asked for,
/// or `Auto` with no OpenCL device at all.
pub fn select(choice: &DeviceChoice) -> Result<Option<DeviceInfo>, ClError> {
    if *choice == DeviceChoice::Rust {
        return Ok(None);
    }
    let devices = match list() {
        Ok(d) => d,
        Err(ClError::NoRuntime) if *choice == DeviceChoice::Auto => return Ok(None),
        Err(e) => return Err(e),
    };
    let found = match choice {
        DeviceChoice::Auto => devices
            .iter()
            .find(|d| d.is_gpu())
            .or_else(|| devices.first()),
        DeviceChoice::Index(i) => devices.get(*i),
        DeviceChoice::Name(n) => {
            let n = n.to_lowercase();
            devices.iter().find(|d| d.name.to_lowercase().contains(&n))
        }
        DeviceChoice::Gpu => devices.iter().find(|d| d.is_gpu()),
        DeviceChoice::Cpu => devices.iter().find(|d| d.kind == "cpu"),
        DeviceChoice::Rust => unreachable!(),
    };
    match (found, choice) {
        (Some(d), _) => Ok(Some(d.clone())),
        (None, DeviceChoice::Auto) => Ok(None),
        (None, _) => Err(ClError::NoMatch {
            choice: choice.to_string(),
            available: if devices.is_empty() {
                "no OpenCL devices; 'rust' always works".into()
            } else {
                let mut names: Vec<String> = devices
                    .iter()
                    .map(|d| format!("{}: {}", d.index, d.name))
                    .collect();
                names.push("rust".into());
                names.join(", ")
            },
        }),
    }
}
