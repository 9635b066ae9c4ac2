//! An icon's alpha as Windows, Pillow, ImageMagick and vips read it: a 32-bit entry carries
//! its own alpha channel, and its AND mask (kept for old systems) does not override it. The
//! `image` crate applies the mask on top, so an icon whose mask and alpha disagree decodes
//! transparent where it is not.

use crate::codec::source::Seekable;
use image::DynamicImage;
use std::io::SeekFrom;

/// A BMP entry's header size (BITMAPINFOHEADER) and the offset of its bit count.
const INFO_HEADER: usize = 40;

/// Puts back the alpha of the 32-bit BMP entry that the `image` crate decoded into `image`
/// (the entry it picks: the most bits per pixel, then the most pixels), where that alpha says
/// anything (some sample not 0) and the mask made pixels transparent against it. Anything
/// else is left as decoded.
pub fn keep_alpha_over_mask(reader: &mut dyn Seekable, image: &mut DynamicImage) {
    let Some(rgba) = image.as_mut_rgba8() else {
        return;
    };
    let Some(alpha) = entry_alpha(reader, rgba.width(), rgba.height()) else {
        return;
    };
    if alpha.iter().all(|&a| a == 0) {
        return;
    }
    for (px, a) in rgba.pixels_mut().zip(alpha) {
        px.0[3] = a;
    }
}

/// The alpha samples, top row first, of the icon's chosen entry if it is a 32-bit BMP of
/// `w` × `h` without compression.
fn entry_alpha(reader: &mut dyn Seekable, w: u32, h: u32) -> Option<Vec<u8>> {
    reader.seek(SeekFrom::Start(0)).ok()?;
    let mut head = [0u8; 6];
    reader.read_exact(&mut head).ok()?;
    let count = u16::from_le_bytes([head[4], head[5]]) as usize;
    let mut entries = vec![0u8; 16 * count];
    reader.read_exact(&mut entries).ok()?;
    let best = entries
        .chunks_exact(16)
        .map(|e| {
            let side = |b: u8| if b == 0 { 256 } else { b as u32 };
            let bpp = u16::from_le_bytes([e[6], e[7]]);
            let offset = u32::from_le_bytes([e[12], e[13], e[14], e[15]]);
            ((bpp, side(e[0]) * side(e[1])), offset)
        })
        // The last of equals wins, as in the `image` crate's choice.
        .rev()
        .max_by_key(|(score, _)| *score)?;
    reader.seek(SeekFrom::Start(best.1 as u64)).ok()?;
    let mut info = [0u8; INFO_HEADER];
    reader.read_exact(&mut info).ok()?;
    let le32 = |at: usize| u32::from_le_bytes(info[at..at + 4].try_into().expect("four bytes"));
    let header = le32(0) as usize;
    let (bw, bh) = (le32(4) as i32, le32(8) as i32);
    let bits = u16::from_le_bytes([info[14], info[15]]);
    // An icon's BMP height counts the mask too: twice the image's.
    if header < INFO_HEADER
        || bits != 32
        || le32(16) != 0
        || bw as u32 != w
        || bh.unsigned_abs() != 2 * h
    {
        return None;
    }
    reader
        .seek(SeekFrom::Current((header - INFO_HEADER) as i64))
        .ok()?;
    let mut bgra = vec![0u8; w as usize * h as usize * 4];
    reader.read_exact(&mut bgra).ok()?;
    // Rows are stored bottom-up (a positive height).
    let rows: Vec<&[u8]> = bgra.chunks_exact(w as usize * 4).collect();
    let ordered: Box<dyn Iterator<Item = &&[u8]>> = match bh > 0 {
        true => Box::new(rows.iter().rev()),
        false => Box::new(rows.iter()),
    };
    Some(
        ordered
            .flat_map(|row| row.chunks_exact(4).map(|px| px[3]))
            .collect(),
    )
}

/// ICO: the `image` crate's decoder, the alpha of a 32-bit entry kept over its mask.
pub struct Ico;

impl super::format::Codec for Ico {
    fn format(&self) -> image::ImageFormat {
        image::ImageFormat::Ico
    }

    fn decode(
        &self,
        file: super::format::FileToDecode<'_>,
    ) -> Result<super::DecodedFile, super::ImageIoError> {
        let (path, max_memory_mib) = (file.path, file.max_memory_mib);
        let reader = file.reader;
        let encoded = super::format::FileToDecode {
            path,
            reader: &mut *reader,
            bytes: file.bytes,
            max_memory_mib,
        };
        let mut decoded = super::decode::with_image_crate(image::ImageFormat::Ico, encoded)?;
        super::decode::rewind(path, reader)?;
        keep_alpha_over_mask(reader, &mut decoded.image);
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A 2 × 2 icon of one 32-bit BMP entry with alpha 128 everywhere and an AND mask that
    /// marks every pixel transparent.
    fn conflicting_icon() -> Vec<u8> {
        let mut bmp = Vec::new();
        let mut info = [0u8; INFO_HEADER];
        info[..4].copy_from_slice(&(INFO_HEADER as u32).to_le_bytes());
        info[4..8].copy_from_slice(&2u32.to_le_bytes());
        info[8..12].copy_from_slice(&4u32.to_le_bytes());
        info[12..14].copy_from_slice(&1u16.to_le_bytes());
        info[14..16].copy_from_slice(&32u16.to_le_bytes());
        bmp.extend_from_slice(&info);
        for _ in 0..4 {
            bmp.extend_from_slice(&[10, 20, 30, 128]);
        }
        // The mask: rows of 32 bits, every pixel set.
        bmp.extend_from_slice(&[0xC0, 0, 0, 0, 0xC0, 0, 0, 0]);
        let mut ico = vec![0, 0, 1, 0, 1, 0];
        let mut entry = [0u8; 16];
        entry[0] = 2;
        entry[1] = 2;
        entry[4..6].copy_from_slice(&1u16.to_le_bytes());
        entry[6..8].copy_from_slice(&32u16.to_le_bytes());
        entry[8..12].copy_from_slice(&(bmp.len() as u32).to_le_bytes());
        entry[12..16].copy_from_slice(&22u32.to_le_bytes());
        ico.extend_from_slice(&entry);
        ico.extend_from_slice(&bmp);
        ico
    }

    #[test]
    fn alpha_wins_over_a_conflicting_mask() {
        let ico = conflicting_icon();
        let mut image = image::load_from_memory(&ico).unwrap();
        assert!(image.as_rgba8().unwrap().pixels().all(|p| p.0[3] == 0));
        keep_alpha_over_mask(&mut Cursor::new(&ico), &mut image);
        let px: Vec<[u8; 4]> = image.as_rgba8().unwrap().pixels().map(|p| p.0).collect();
        assert_eq!(px, vec![[30, 20, 10, 128]; 4]);
    }
}
