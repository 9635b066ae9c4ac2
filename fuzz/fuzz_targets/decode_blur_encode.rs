//! Arbitrary bytes → gblur's decode (by content, under a small memory limit; a JPEG also as
//! its YCbCr planes) → the Rust blur → encode into a format chosen from the input → atomic write → decode again.
//!
//! Must never panic, hang or allocate without bound: the decoder limit (8 MiB) bounds every
//! decoded image, and images over 256 K pixels are decoded but not blurred, to keep the
//! executions fast. What gblur writes must read back with the same size.
#![no_main]

use gblur::codec::jpeg::{JpegOptions, Quality, Subsampling};
use gblur::codec::{self, EncodeOptions};
use gblur::filter::{Blur2d, Method};
use gblur::work::edges::{EdgeMode, EdgePlan, Edges};
use gblur::work::load::load;
use gblur::work::save::{save, Output};
use gblur::work::{blur::blur_on_host, Keep, Working};
use image::codecs::png::CompressionType;
use image::ImageFormat;
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

const LIMIT_MIB: u64 = 8;
const MAX_BLUR_PIXELS: usize = 1 << 18;

const OUTPUTS: [ImageFormat; 10] = [
    ImageFormat::Png,
    ImageFormat::Jpeg,
    ImageFormat::Tiff,
    ImageFormat::WebP,
    ImageFormat::Bmp,
    ImageFormat::Tga,
    ImageFormat::Gif,
    ImageFormat::Qoi,
    ImageFormat::OpenExr,
    ImageFormat::Hdr,
];

/// A private folder on a RAM disk where there is one: the input file and the outputs.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let d = base.join(format!("gblur-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    })
}

fuzz_target!(|data: &[u8]| {
    // The choices come from the data's length and last byte, so that seed files stay plain
    // image files.
    let sel = data.len() ^ (*data.last().unwrap_or(&0) as usize) << 3;
    let linear = sel & 1 == 1;
    let sigma = [0.7, 1.9, 2.0, 5.5, 40.0][(sel >> 1) % 5];
    let input = dir().join("input");
    std::fs::write(&input, data).unwrap();

    // Every way a decoded image is blurred on the host: as planar f32 (the reference path, and
    // what the FIR takes), in place by the banded blur, or as a JPEG's YCbCr planes.
    let blur = Blur2d::new(Method::Auto, sigma, sigma);
    // Planes as the main command asks for them: only where the Rust path blurs in place.
    let in_place = Keep::for_path(None, &blur);
    let keep = match (sel & 32 == 0, sel & 0x200 == 0) {
        (true, _) => Keep::Planar,
        (false, false) if in_place == Keep::Decoded => Keep::JpegPlanes {
            subsampling: Subsampling::Same,
            on_device: false,
        },
        (false, _) => in_place,
    };
    // Every edge mode: the extension and the crop run on every decoded image.
    let mode = [
        EdgeMode::Clamp,
        EdgeMode::Reflect,
        EdgeMode::Reflect101,
        EdgeMode::Wrap,
        EdgeMode::Constant(0.5),
    ][(sel >> 6) % 5];
    let plan = EdgePlan::new(Edges { x: mode, y: mode }, &blur);
    let mut passes = Vec::new();
    let mut loaded = match load(&input, LIMIT_MIB, linear, keep, &plan, &mut passes) {
        Ok(l) => l,
        Err(e) => {
            // Every refusal is one line naming the file.
            let msg = e.to_string();
            assert!(msg.starts_with(input.to_str().unwrap()), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
            return;
        }
    };
    let pixels = loaded.size().0 * loaded.size().1;
    if let Working::Planar(p) = &loaded.working {
        assert_eq!((p.width, p.height), loaded.size());
        assert!(p.data.len() as u64 * 4 <= 4 * (LIMIT_MIB << 20) + 64);
        assert!(
            p.data.iter().all(|v| v.is_finite()),
            "non-finite samples reached the blur"
        );
    }
    if pixels > MAX_BLUR_PIXELS {
        return;
    }
    blur_on_host(&mut loaded, &blur, &mut passes);
    if let Working::Planar(p) = &loaded.working {
        assert!(
            p.data.iter().all(|v| v.is_finite()),
            "the blur made a non-finite sample"
        );
    }

    let format = OUTPUTS[(sel >> 4) % OUTPUTS.len()];
    let output = dir().join(format!("out.{}", format.extensions_str()[0]));
    let mut notes = Vec::new();
    let encode = EncodeOptions {
        jpeg: JpegOptions {
            quality: Quality::Fixed(1 + (sel % 100) as u8),
            subsampling: Subsampling::Same,
        },
        png_compression: CompressionType::Fast,
        dither: sel & 0x100 != 0,
        quality_given: false,
        webp_lossless_input: false,
        tiff: codec::tiff::TiffCompression::Same,
        tiff_given: false,
        subsampling_given: false,
        png_given: false,
    };
    let size = (loaded.width, loaded.height);
    let to = Output {
        path: &output,
        format,
        encode,
        metadata: codec::metadata::KeepMetadata::ALL,
        replace: codec::Replace::Any,
        // No HEIF among the outputs: no encoder that counts against a budget.
        max_memory_mib: None,
    };
    let saved = save(loaded, to, &mut passes, &mut notes);
    match saved {
        Ok(_) => {
            let back = codec::decode(&output, 4 * LIMIT_MIB + 64)
                .unwrap_or_else(|e| panic!("gblur wrote a {format:?} it cannot read: {e}"));
            assert_eq!((back.image.width(), back.image.height()), size);
            let _ = std::fs::remove_file(&output);
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg}");
            assert!(!output.exists(), "a failed save left {}", output.display());
        }
    }
    // No temporary file is ever left next to the output.
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().starts_with(".gblur-"), "{name:?}");
    }
});
