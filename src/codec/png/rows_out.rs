//! PNG rows out: the container as the whole-image encoder writes it (IHDR, the ICC profile in
//! iCCP, then eXIf and XMP before the pixels), the rows through the `png` crate's stream
//! writer, into a temporary file renamed over the output once complete. `--png-compression
//! fast` is the whole-image path's own streamed encoder (fdeflate, adaptive filters); `small`
//! and `best` are zlib levels 6 and 9 as there, in one stream on the encoder's thread.

use crate::codec::metadata::{self, Metadata};
use crate::codec::rows::{all_rows, encode_error, Batches, RowSample, RowsOf};
use crate::codec::{self, ImageIoError};
use image::codecs::png::CompressionType;
use image::ColorType;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// What the PNG is to hold besides its rows.
pub struct PngHeader<'a> {
    pub size: (u32, u32),
    pub color: ColorType,
    pub meta: &'a Metadata,
    pub compression: CompressionType,
}

fn layout(color: ColorType) -> (png::ColorType, png::BitDepth) {
    use png::{BitDepth, ColorType as P};
    let depth = match color.bytes_per_pixel() / color.channel_count() {
        1 => BitDepth::Eight,
        _ => BitDepth::Sixteen,
    };
    let kind = match color.channel_count() {
        1 => P::Grayscale,
        2 => P::GrayscaleAlpha,
        3 => P::Rgb,
        _ => P::Rgba,
    };
    (kind, depth)
}

/// The PNG encoder of `header`'s image into `file`: its layout, ICC profile, compression
/// and adaptive filtering.
fn encoder<W: std::io::Write>(
    file: W,
    header: &PngHeader,
) -> Result<png::Encoder<'static, W>, png::EncodingError> {
    let (w, h) = header.size;
    let (kind, depth) = layout(header.color);
    let mut info = png::Info::with_size(w, h);
    info.color_type = kind;
    info.bit_depth = depth;
    info.icc_profile = header.meta.icc.clone().map(Into::into);
    let mut e = png::Encoder::with_info(file, info)?;
    match header.compression {
        CompressionType::Fast => e.set_compression(png::Compression::Fast),
        CompressionType::Best => e.set_deflate_compression(png::DeflateCompression::Level(9)),
        _ => e.set_deflate_compression(png::DeflateCompression::Level(6)),
    }
    e.set_filter(png::Filter::Adaptive);
    Ok(e)
}

/// Writes the rows `rows` delivers (batches of whole rows, top to bottom) as a PNG at `path`,
/// atomically: nothing is renamed over `path` unless every row arrived and was written, so a
/// sender that stops early (an error upstream) leaves no output. Returns the time spent
/// converting and writing, not waiting.
pub fn write<T: RowSample>(
    path: &Path,
    replace: codec::Replace,
    header: PngHeader,
    (rows, back): Batches<T>,
) -> Result<Duration, ImageIoError> {
    let encode_err = encode_error(path, "Png");
    let mut busy = Duration::ZERO;
    let t = Instant::now();
    let tmp = codec::temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    let (w, h) = header.size;
    let file = BufWriter::with_capacity(1 << 20, tmp.as_file());
    let e = encoder(file, &header).map_err(|e| encode_err(e.to_string()))?;
    let row_samples = w as usize * header.color.channel_count() as usize;
    let expected = row_samples * h as usize;
    let mut done = 0usize;
    let written = (|| -> Result<(), png::EncodingError> {
        let mut writer = e.write_header()?;
        for (kind, data) in metadata::png_chunks(header.meta, header.size) {
            writer.write_chunk(png::chunk::ChunkType(kind), &data)?;
        }
        let mut stream = writer.stream_writer()?;
        let mut bytes = Vec::new();
        busy += t.elapsed();
        for batch in rows.iter() {
            let t = Instant::now();
            bytes.clear();
            T::to_png(&batch, &mut bytes);
            stream.write_all(&bytes)?;
            done += batch.len();
            // The blur's next strip goes into this one's memory.
            let _ = back.try_send(batch);
            busy += t.elapsed();
        }
        let t = Instant::now();
        if done == expected {
            stream.finish()?;
            writer.finish()?;
        }
        busy += t.elapsed();
        Ok(())
    })();
    written.map_err(|e| encode_err(e.to_string()))?;
    all_rows(
        done,
        RowsOf {
            row: row_samples,
            height: h,
        },
    )
    .map_err(&encode_err)?;
    let t = Instant::now();
    codec::persist_with(tmp, path, replace)?;
    Ok(busy + t.elapsed())
}
