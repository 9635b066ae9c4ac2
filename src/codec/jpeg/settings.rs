//! `--quality` and `--subsampling` as asked, and as they resolve for one input: `same` takes
//! what the input JPEG's header says (`JpegTraits`).

use super::compress::Chroma;
use super::header::JpegTraits;

/// The quality written when none is asked for, and for `--quality same` where the input has
/// none to copy.
pub const DEFAULT_QUALITY: u8 = 90;

/// `--quality`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quality {
    /// 1-100.
    Fixed(u8),
    /// The input's, estimated from its luminance quantisation table.
    Same,
    /// No loss: a WebP output's lossless coding (refused for one output of another lossy
    /// format before any work, `EncodeOptions::quality_refused`; a batch applies it to its
    /// WebP outputs alone).
    Lossless,
}

/// `--subsampling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsampling {
    /// The input's layout; for an input that is not a colour JPEG, 4:2:0 below quality 90
    /// and 4:4:4 from 90 up (as libvips does).
    Same,
    /// This subsampling.
    Fixed(Chroma),
}

/// The JPEG output settings asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegOptions {
    /// The quality.
    pub quality: Quality,
    /// The chroma subsampling.
    pub subsampling: Subsampling,
}

impl Default for JpegOptions {
    fn default() -> Self {
        JpegOptions {
            quality: Quality::Fixed(DEFAULT_QUALITY),
            subsampling: Subsampling::Same,
        }
    }
}

/// The JPEG output settings for one image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JpegSettings {
    pub quality: u8,
    pub chroma: Chroma,
}

impl JpegOptions {
    /// The settings for an input written as `input` says (None: not a JPEG), and a note where
    /// `--quality same` had nothing to copy.
    pub fn resolve(self, input: Option<&JpegTraits>) -> (JpegSettings, Option<String>) {
        let (quality, note) = match (self.quality, input.and_then(|t| t.quality)) {
            (Quality::Fixed(q), _) => (q, None),
            // WebP's: refused for one JPEG output, and a batch's JPEG outputs keep the default.
            (Quality::Lossless, _) => (DEFAULT_QUALITY, None),
            (Quality::Same, Some(q)) => (q, None),
            (Quality::Same, None) => (
                DEFAULT_QUALITY,
                Some(format!(
                    "--quality same: the input has no JPEG luminance table to read a quality from; wrote quality {DEFAULT_QUALITY}"
                )),
            ),
        };
        let chroma = match (self.subsampling, input.and_then(|t| t.chroma)) {
            (Subsampling::Fixed(c), _) => c,
            (Subsampling::Same, Some(c)) => c,
            (Subsampling::Same, None) if quality < 90 => Chroma::S420,
            (Subsampling::Same, None) => Chroma::S444,
        };
        (JpegSettings { quality, chroma }, note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_copies_the_input_and_falls_back_to_the_quality_rule() {
        let jpeg = JpegTraits {
            chroma: Some(Chroma::S422),
            quality: Some(77),
            components: 3,
            adobe: None,
        };
        let same = JpegOptions {
            quality: Quality::Same,
            subsampling: Subsampling::Same,
        };
        let (s, note) = same.resolve(Some(&jpeg));
        assert_eq!((s.quality, s.chroma, note), (77, Chroma::S422, None));
        let (s, note) = same.resolve(None);
        assert_eq!((s.quality, s.chroma), (DEFAULT_QUALITY, Chroma::S444));
        assert!(note.unwrap().contains("--quality same"));
        let fixed = JpegOptions {
            quality: Quality::Fixed(80),
            subsampling: Subsampling::Same,
        };
        assert_eq!(fixed.resolve(None).0.chroma, Chroma::S420);
        let forced = JpegOptions {
            quality: Quality::Fixed(95),
            subsampling: Subsampling::Fixed(Chroma::S420),
        };
        assert_eq!(forced.resolve(Some(&jpeg)).0.chroma, Chroma::S420);
    }
}
