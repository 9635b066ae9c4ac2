//! Says at build time what the `mozjpeg` crate's build does not: where `nasm` is missing on
//! x86, libjpeg (every JPEG decode and encode) is compiled without its SIMD code, in plain C.
//! `gblur formats` says the same at run time.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=NASM");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let nasm = std::env::var_os("NASM").unwrap_or_else(|| "nasm".into());
    let found = std::process::Command::new(nasm).arg("-v").output().is_ok();
    if matches!(arch.as_str(), "x86" | "x86_64") && !found {
        println!(
            "cargo:warning=nasm is not installed, so libjpeg is built without its SIMD code and \
             every JPEG decode and encode runs in plain C. Install nasm (apt-get install nasm), \
             then run `cargo clean -p mozjpeg-sys` and build again."
        );
    }
}
