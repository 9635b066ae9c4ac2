use super::*;
use crate::codec::jpeg::{encode_stripe, Chroma, JpegColor, JpegSettings};

/// A photo-like picture: gradients, texture and noise, so that codes of every length occur.
fn photo(w: u32, h: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state % 61) as i32 - 30
    };
    (0..h)
        .flat_map(|y| (0..w).map(move |x| (x, y)))
        .flat_map(|(x, y)| {
            let base = [
                (x * 255 / w) as i32,
                (y * 255 / h) as i32,
                ((x * 7 + y * 13) % 256) as i32,
            ];
            base.map(|b| b)
        })
        .map(|b| (b + noise()).clamp(0, 255) as u8)
        .collect()
}

type Planes3 = Vec<Vec<u8>>;

/// The planes as libjpeg's `jpeg_read_raw_data` gives them, and as this decoder gives them
/// with chunks of `least` bytes, padded alike.
fn both(file: &[u8], least: usize) -> (Option<Planes3>, Option<Planes3>) {
    let scan = Scan::read(file).expect("a plain sequential file");
    let mut strides = [0; 3];
    let mut rows = [0; 3];
    for c in &scan.components {
        strides[c.plane] = c.width_in_blocks * 8;
        rows[c.plane] = scan.mcus_down * c.v * 8;
    }
    let fresh = || -> Vec<Vec<u8>> { (0..3).map(|k| vec![0u8; strides[k] * rows[k]]).collect() };
    let mut want = fresh();
    let [y, cb, cr] = &mut want[..] else {
        unreachable!()
    };
    let frame = crate::codec::jpeg::Frame::read(&mut std::io::Cursor::new(file));
    let libjpeg = crate::codec::jpeg::errors::run(|| {
        let frame = frame.ok_or_else(|| std::io::Error::other("no frame header"))?;
        crate::codec::jpeg::planes::raw_into(
            file,
            (frame.width, frame.height as usize),
            [y, cb, cr],
            strides,
        )
    });
    let mut got = fresh();
    let [y, cb, cr] = &mut got[..] else {
        unreachable!()
    };
    let ok = decode_in_chunks(file, [y, cb, cr], strides, least);
    (libjpeg.ok().map(|()| want), ok.map(|()| got))
}

fn file(w: u32, h: u32, chroma: Chroma, quality: u8, seed: u32) -> Vec<u8> {
    let settings = JpegSettings { quality, chroma };
    encode_stripe(&photo(w, h, seed), w, JpegColor::Rgb, settings, None).unwrap()
}

/// In chunks of a few hundred bytes (dozens of them, each started blind), every layout and
/// odd sizes decode to libjpeg's planes byte for byte.
#[test]
fn chunks_started_blind_join_into_libjpegs_planes() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    for chroma in [Chroma::S420, Chroma::S422, Chroma::S444] {
        for (w, h) in [(1, 1), (17, 33), (67, 45), (300, 97), (64, 700), (517, 301)] {
            for quality in [30, 90, 100] {
                let f = file(w, h, chroma, quality, w + h);
                for least in [64, 700, 1 << 20] {
                    let (want, got) = pool.install(|| both(&f, least));
                    let want = want.expect("libjpeg decodes it");
                    let got = got.unwrap_or_else(|| {
                        panic!("{chroma:?} {w}x{h} q{quality} chunks of {least}: refused")
                    });
                    assert!(
                        want == got,
                        "{chroma:?} {w}x{h} q{quality} chunks of {least}"
                    );
                }
            }
        }
    }
}

/// Every JPEG of the folder `GBLUR_JPEG_DIR` that both decoders take gives libjpeg's planes,
/// in chunks of 64 bytes and of 4 KiB: `GBLUR_JPEG_DIR=../shared/corpus/files cargo test
/// --release -p gblur --lib entropy -- --ignored`.
#[test]
#[ignore = "reads a folder of JPEG files named by GBLUR_JPEG_DIR"]
fn a_folder_of_jpegs_decodes_as_libjpeg_decodes_it() {
    let dir = std::env::var("GBLUR_JPEG_DIR").expect("GBLUR_JPEG_DIR");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    let (mut same, mut refused) = (0, 0);
    for entry in walkdir::WalkDir::new(dir) {
        let path = entry.unwrap().into_path();
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Some(scan) = Scan::read(&bytes) else {
            continue;
        };
        // The test needs libjpeg's planes: files it refuses, or too large, are left out.
        if scan.mcus_across * scan.mcus_down > 1 << 20 {
            continue;
        }
        for least in [64, 4096] {
            let (want, got) = pool.install(|| both(&bytes, least));
            let Some(want) = want else {
                assert!(
                    got.is_none(),
                    "{}: libjpeg refuses what this decoder takes",
                    path.display()
                );
                continue;
            };
            match got {
                Some(got) => {
                    assert!(
                        want == got,
                        "{}: other planes in chunks of {least}",
                        path.display()
                    );
                    same += 1;
                }
                None => {
                    refused += 1;
                    eprintln!("{}: refused in chunks of {least}", path.display());
                }
            }
        }
    }
    eprintln!("{same} decodes the same as libjpeg's, {refused} refused");
    assert!(same > 0);
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]
    /// Damaged files (bytes of the header or the data overwritten, the data cut short):
    /// whatever this decoder takes, libjpeg takes too and decodes to the same planes; it
    /// never panics.
    #[test]
    fn damaged_files_decode_as_libjpeg_or_not_at_all(
        which in 0usize..3,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<bool>()), 0..6),
        cut in any::<prop::sample::Index>(),
        shorten in any::<bool>(),
        least in prop::sample::select(vec![16usize, 200, 1 << 20]),
    ) {
        let chroma = [Chroma::S420, Chroma::S422, Chroma::S444][which];
        let mut f = file(90, 70, chroma, 85, which as u32);
        let start = Scan::read(&f).unwrap().data_start;
        for (at, byte, header) in edits {
            // The header's tables and frame, or the entropy-coded data.
            let i = match header {
                true => 2 + at.index(start - 2),
                false => start + at.index(f.len() - 2 - start),
            };
            f[i] = byte;
        }
        if shorten {
            let at = start + cut.index(f.len() - 2 - start);
            f.drain(at..f.len() - 2);
        }
        // The planes path has libjpeg read the header first (strictly): what it refuses there
        // never reaches this decoder.
        let header = crate::codec::jpeg::errors::run(|| {
            mozjpeg::Decompress::with_err(crate::codec::jpeg::errors::strict_errors()).from_mem(&f).map(|_| ())
        });
        if header.is_err() || Scan::read(&f).is_none() {
            return Ok(());
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let (want, got) = pool.install(|| both(&f, least));
        if let Some(got) = got {
            prop_assert!(want.as_ref() == Some(&got), "libjpeg: {}", if want.is_some() { "other planes" } else { "refused" });
        }
    }
}

/// Huffman tables with more codes of a length than its bits hold, or a code of all ones, are
/// refused (as libjpeg refuses them), never filled past the lookup table.
#[test]
fn over_full_huffman_tables_are_refused() {
    let mut counts = [0u8; 16];
    counts[0] = 3;
    assert!(tables::Huffman::new_for_test(&counts, &[1, 2, 3], false).is_none());
    counts[0] = 2;
    assert!(tables::Huffman::new_for_test(&counts, &[1, 2], false).is_none());
    counts = [0; 16];
    counts[8] = 255;
    assert!(tables::Huffman::new_for_test(&counts, &[5; 255], false).is_some());
    counts[8] = 0;
    counts[1] = 4;
    assert!(tables::Huffman::new_for_test(&counts, &[1, 2, 3, 4], false).is_none());
    counts[1] = 3;
    assert!(tables::Huffman::new_for_test(&counts, &[1, 2, 3], true).is_some());
    assert!(
        tables::Huffman::new_for_test(&counts, &[1, 2, 16], true).is_none(),
        "a DC size over 15"
    );
}
