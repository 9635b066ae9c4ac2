//! What reading EXIF and XMP costs at decode: `image`'s JPEG decoder parses the file's header
//! again for each of `exif_metadata` and `xmp_metadata` (as it does for the orientation and
//! the ICC profile), with or without the segments there. Times each call on the files given,
//! after the decoder is built. Run by benches/metadata.sh.
//! usage: cargo run --release -p gblur --features unstable-internals --example metadata_read -- FILE.jpg... [--calls N]

use image::{ImageDecoder, ImageFormat, ImageReader};
use std::io::Cursor;
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let calls: usize = match args.iter().position(|a| a == "--calls") {
        Some(i) => args[i + 1].parse()?,
        None => 200,
    };
    for path in args.iter().take_while(|a| *a != "--calls") {
        let bytes = std::fs::read(path)?;
        let mut decoder =
            ImageReader::with_format(Cursor::new(&bytes), ImageFormat::Jpeg).into_decoder()?;
        let time = |what: &str, call: &mut dyn FnMut() -> usize| {
            let t = Instant::now();
            let mut found = 0;
            for _ in 0..calls {
                found = std::hint::black_box(call());
            }
            let us = t.elapsed().as_secs_f64() * 1e6 / calls as f64;
            println!("{path}: {what}: {us:.1} µs per call ({found} bytes)");
        };
        time("exif_metadata", &mut || {
            decoder.exif_metadata().unwrap().map_or(0, |v| v.len())
        });
        time("xmp_metadata", &mut || {
            decoder.xmp_metadata().unwrap().map_or(0, |v| v.len())
        });
    }
    Ok(())
}
