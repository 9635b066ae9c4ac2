//! The program binary cache on the OpenCL device (PoCL here): a kept program gives the same
//! image, and a damaged, stale or refused entry is compiled again, never trusted.

use super::common;

use crate::gpu::opencl::cache::ProgramCache;
use crate::gpu::opencl::{device, program, ClContext, DeviceChoice};
use common::{fixture, gblur};
use std::path::{Path, PathBuf};

/// Blurs the sample on `--device cpu` with the program cache in `cache`; returns the output's
/// bytes and the report.
fn blur_on_device(cache: &Path, out: &Path) -> (Vec<u8>, serde_json::Value) {
    let assert = gblur()
        .env("GBLUR_CACHE_DIR", cache)
        .env_remove("GBLUR_NO_CACHE")
        .arg(fixture("samples/coffee.png"))
        .arg(out)
        .args(["--sigma", "5", "--device", "cpu", "--json", "-q"])
        .assert()
        .success();
    let report = serde_json::from_slice(&assert.get_output().stdout).unwrap();
    (std::fs::read(out).unwrap(), report)
}

/// The name of the report's kernel set-up pass.
fn kernels_pass(report: &serde_json::Value) -> String {
    report["passes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .find(|n| n.starts_with("kernels"))
        .unwrap_or_else(|| panic!("no kernels pass in {report}"))
}

/// A way of damaging an entry's bytes, with its name.
type Damage = (&'static str, fn(&mut Vec<u8>));

fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(cache.join("programs"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn a_kept_program_gives_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (first, report) = blur_on_device(&cache, &dir.path().join("a.png"));
    assert_eq!(kernels_pass(&report), "kernels (compiled)");
    assert!(!entries(&cache).is_empty());
    let (second, report) = blur_on_device(&cache, &dir.path().join("b.png"));
    assert_eq!(kernels_pass(&report), "kernels (from cache)");
    assert_eq!(first, second);
}

/// Every way an entry can go bad: cut short, a flipped byte in the binary, the right layout
/// around a binary the driver refuses, and another key's entry under this key's name.
#[test]
fn a_bad_entry_is_compiled_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (want, _) = blur_on_device(&cache, &dir.path().join("want.png"));
    let kept = entries(&cache);
    let good: Vec<Vec<u8>> = kept.iter().map(|p| std::fs::read(p).unwrap()).collect();

    let damages: [Damage; 3] = [
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("flipped", |b| {
            let at = b.len() - 100;
            b[at] ^= 0x10;
        }),
        ("foreign key", |b| b[20] ^= 0x01),
    ];
    for (what, damage) in damages {
        for (path, bytes) in kept.iter().zip(&good) {
            let mut bad = bytes.clone();
            damage(&mut bad);
            std::fs::write(path, bad).unwrap();
        }
        let (got, report) = blur_on_device(&cache, &dir.path().join("got.png"));
        assert_eq!(got, want, "{what}");
        assert_eq!(kernels_pass(&report), "kernels (compiled)", "{what}");
        assert!(
            report["notes"].to_string().contains("program cache"),
            "{what}: {report}"
        );
        // Compiled again and kept afresh: the next run loads it.
        let (_, report) = blur_on_device(&cache, &dir.path().join("again.png"));
        assert_eq!(kernels_pass(&report), "kernels (from cache)", "{what}");
    }
}

/// A checksummed entry whose binary is not one the driver can build from.
#[test]
fn a_binary_the_driver_refuses_is_compiled_again() {
    let info = device::select(&DeviceChoice::Cpu).unwrap().expect("PoCL");
    let dir = tempfile::tempdir().unwrap();
    let cache = ProgramCache::new(dir.path(), &info);
    let options = program::BASE_OPTIONS;
    let src = program::CONVOLUTION;
    cache
        .store(src.file, src.text, options, b"not a program binary")
        .unwrap();
    let ctx = ClContext::with_cache(info.clone(), Some(cache.clone())).unwrap();
    ctx.kernel(src, "fir_x", "").expect("compiled instead");
    let builds = ctx.builds();
    assert_eq!((builds.rejected, builds.compiled, builds.cached), (1, 1, 0));
    let fresh = ClContext::with_cache(info, Some(cache)).unwrap();
    fresh.kernel(src, "fir_x", "").unwrap();
    assert_eq!(fresh.builds().cached, 1);
}

/// A binary shorter than the driver's header, ending where the process's memory ends, is
/// refused without a read past its end: PoCL read past such a binary (a segfault) before it
/// was handed a copy with zeros after it.
#[test]
fn a_short_binary_at_the_end_of_mapped_memory_is_refused_not_read_past() {
    let info = device::select(&DeviceChoice::Cpu).unwrap().expect("PoCL");
    let ctx = ClContext::with_cache(info, None).unwrap();
    const PAGE: usize = 4096;
    let bytes = b"not a program binary";
    // SAFETY: two fresh anonymous pages, the second made unreadable; the slice lies inside
    // the first and is dropped before the pages are unmapped.
    unsafe {
        let base = libc::mmap(
            std::ptr::null_mut(),
            2 * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(base, libc::MAP_FAILED);
        let base = base.cast::<u8>();
        assert_eq!(
            libc::mprotect(base.add(PAGE).cast(), PAGE, libc::PROT_NONE),
            0
        );
        let at = base.add(PAGE - bytes.len());
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), at, bytes.len());
        let binary = std::slice::from_raw_parts(at, bytes.len());
        assert!(ctx.program_from_binary(binary, "").is_none());
        libc::munmap(base.cast(), 2 * PAGE);
    }
}

/// Two define sets of one source are two entries; building either again loads its own.
#[test]
fn each_define_set_has_its_own_entry() {
    let info = device::select(&DeviceChoice::Cpu).unwrap().expect("PoCL");
    let dir = tempfile::tempdir().unwrap();
    let cache = ProgramCache::new(dir.path(), &info);
    let src = program::CONVOLUTION;
    let ctx = ClContext::with_cache(info.clone(), Some(cache.clone())).unwrap();
    ctx.kernel(src, "fir_x", "").unwrap();
    ctx.kernel(src, "fir_x", "-DUNUSED_BY_FIR=1").unwrap();
    assert_eq!(ctx.builds().compiled, 2);
    assert_eq!(entries(dir.path()).len(), 2);
    let again = ClContext::with_cache(info, Some(cache)).unwrap();
    again.kernel(src, "fir_x", "-DUNUSED_BY_FIR=1").unwrap();
    assert_eq!((again.builds().cached, again.builds().compiled), (1, 0));
}

#[test]
fn the_cache_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    gblur()
        .env("GBLUR_CACHE_DIR", &cache)
        .env("GBLUR_NO_CACHE", "1")
        .arg(fixture("samples/coffee.png"))
        .arg(dir.path().join("o.png"))
        .args(["--sigma", "5", "--device", "cpu", "-q"])
        .assert()
        .success();
    assert!(!cache.exists());
}
