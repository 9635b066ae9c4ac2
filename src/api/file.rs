//! `blur_file`: what the `gblur` command does for one file, for programs: decode (streamed
//! where the image is over the memory budget), blur on the fastest path, encode with the
//! input's metadata, write atomically, and report every pass.

use super::{Error, Gaussian};
use crate::backend::DeviceSet;
use crate::codec::jpeg::Quality;
use crate::codec::metadata::KeepMetadata;
use crate::gpu::opencl::DeviceChoice;
use crate::job::{self, BlurJob, JobError};
use crate::report::Report;
use image::ImageFormat;
use std::path::{Path, PathBuf};

/// How [`blur_file`] blurs and writes a file; the defaults are the command line's.
///
/// ```
/// use gblur::{FileOptions, Gaussian};
///
/// let options = FileOptions::new(Gaussian::new(5.0)?)
///     .device("rust")
///     .quality(85)?
///     .max_memory_mib(256);
/// # let _ = options;
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FileOptions {
    gaussian: Gaussian,
    device: String,
    /// The quality given (`quality`, or `lossless` for WebP); None: each format's default.
    quality: Option<Quality>,
    keep: KeepMetadata,
    max_memory_mib: Option<u64>,
    format: Option<ImageFormat>,
    to_srgb: bool,
}

impl FileOptions {
    /// The blur, with every other setting at the command line's default: `--device auto`,
    /// JPEG quality 90, WebP quality 75 (lossless from a lossless WebP), the input's ICC profile, EXIF, XMP and IPTC kept, the
    /// default memory budget, the output format from the output's extension.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?);
    /// blur_file("samples/coffee.png", &out, &options)?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn new(gaussian: Gaussian) -> FileOptions {
        FileOptions {
            gaussian,
            device: "auto".into(),
            quality: None,
            keep: KeepMetadata::ALL,
            max_memory_mib: None,
            format: None,
            to_srgb: false,
        }
    }

    /// Where to blur, as [`crate::Device::open`] names it (default `auto`).
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?).device("rust"); // the host's cores
    /// let report = blur_file("samples/coffee.png", &out, &options)?;
    /// assert!(report.device().contains("Rust"));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn device(mut self, which: &str) -> Self {
        self.device = which.into();
        self
    }

    /// The quality of a lossy output, 1 to 100: a JPEG's (default 90), an AVIF's (default 50),
    /// a WebP's (default 75, or lossless from a lossless WebP input). An output of another
    /// format is then refused, as the command line refuses `--quality`.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.jpg");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?).quality(80)?;
    /// blur_file("samples/chelsea.jpg", &out, &options)?;
    /// assert!(FileOptions::new(Gaussian::new(3.0)?).quality(0).is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn quality(mut self, quality: u8) -> Result<Self, Error> {
        if !(1..=100).contains(&quality) {
            return Err(Error::Buffer(format!(
                "a quality is 1 to 100, not {quality}"
            )));
        }
        self.quality = Some(Quality::Fixed(quality));
        Ok(self)
    }

    /// A WebP output written lossless, whatever the input (`--quality lossless`); an output of
    /// another lossy format (JPEG, AVIF, HEIC) or of a format without a quality is refused.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.webp");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?).lossless();
    /// blur_file("samples/chelsea.jpg", &out, &options)?;
    /// assert_eq!(&std::fs::read(&out)?[12..16], b"VP8L");
    /// # let jpeg = dir.path().join("out.jpg");
    /// assert!(blur_file("samples/chelsea.jpg", &jpeg, &options).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lossless(mut self) -> Self {
        self.quality = Some(Quality::Lossless);
        self
    }

    /// Convert an input with an RGB ICC profile (Adobe RGB, Display P3, ...) to sRGB before
    /// the blur, relative colorimetric, and write no profile (`--to-srgb`); the report's notes
    /// say what was done. Such a job takes the whole-image path.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?).to_srgb();
    /// blur_file("samples/coffee.png", &out, &options)?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn to_srgb(mut self) -> Self {
        self.to_srgb = true;
        self
    }

    /// Write no ICC profile, EXIF, XMP or IPTC (default: keep them where the format can).
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.jpg");
    ///
    /// let options = FileOptions::new(Gaussian::new(3.0)?).strip_metadata();
    /// blur_file("samples/chelsea.jpg", &out, &options)?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn strip_metadata(mut self) -> Self {
        self.keep = KeepMetadata::NONE;
        self
    }

    /// The memory the job may take, in MiB (default 512); images over it are streamed through the strip
    /// engine, and a job that cannot fit is refused.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// // A small budget: the PNG is streamed through the strip engine instead of held whole.
    /// let options = FileOptions::new(Gaussian::new(3.0)?).max_memory_mib(1);
    /// blur_file("samples/coffee.png", &out, &options)?;
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn max_memory_mib(mut self, mib: u64) -> Self {
        self.max_memory_mib = Some(mib);
        self
    }

    /// The output format by its usual extension (`png`, `jpg`, `tiff`, `webp`, …); the
    /// default is the output path's extension.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("blurred.img");
    ///
    /// // An output whose name does not say its format.
    /// let options = FileOptions::new(Gaussian::new(3.0)?).format("tiff")?;
    /// blur_file("samples/coffee.png", &out, &options)?;
    /// assert!(FileOptions::new(Gaussian::new(3.0)?).format("nope").is_err());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn format(mut self, extension: &str) -> Result<Self, Error> {
        self.format =
            Some(ImageFormat::from_extension(extension).ok_or_else(|| {
                Error::Unsupported(format!("'{extension}' names no image format"))
            })?);
        Ok(self)
    }

    fn job(&self, input: &Path, output: &Path) -> BlurJob {
        let g = &self.gaussian;
        let mut job = BlurJob::new(input, output, g.blur.clone());
        job.output_format = self.format;
        job.device = DeviceSet::One(DeviceChoice::parse(self.device.trim()));
        job.linear = g.linear;
        job.to_srgb = self.to_srgb;
        if let Some(quality) = self.quality {
            job.encode.jpeg.quality = quality;
            job.encode.quality_given = true;
        }
        if let Some(mib) = self.max_memory_mib {
            job.max_memory_mib = crate::memory::budget_mib(mib);
        }
        job.metadata = self.keep;
        job.edges = g.edges;
        job
    }
}

/// What [`blur_file`] did: where it ran, and the time of every pass.
///
/// ```
/// use gblur::{blur_file, FileOptions, Gaussian};
/// # let dir = tempfile::tempdir().unwrap();
/// # let out = dir.path().join("out.png");
///
/// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
/// eprintln!("{} on {}: {:.1} ms", report.method(), report.device(), report.total_ms());
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct FileReport {
    report: Report,
}

/// One timed pass of a file job.
///
/// ```
/// use gblur::{blur_file, FileOptions, Gaussian};
/// # let dir = tempfile::tempdir().unwrap();
/// # let out = dir.path().join("out.png");
///
/// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
/// for pass in report.passes() {
///     let place = if pass.on_host { "host" } else { "device" };
///     println!("{:<24} {place:<6} {:8.3} ms", pass.name, pass.ms);
/// }
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PassTime {
    /// What the pass did: `decode`, `rows (x)`, `upload`, `encode`, …
    pub name: String,
    /// Whether it ran on the host (else on the OpenCL device, timed by its events).
    pub on_host: bool,
    /// Milliseconds.
    pub ms: f64,
}

impl FileReport {
    /// The device that blurred (or the host's path).
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// println!("blurred on {}", report.device());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn device(&self) -> &str {
        &self.report.device
    }

    /// Which filter ran: `recursive`, `fir`, or one per axis.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// assert_eq!(report.method(), "recursive");
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn method(&self) -> &str {
        &self.report.method
    }

    /// The input's width and height in pixels (upright).
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// assert_eq!(report.size(), (600, 400));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn size(&self) -> (u32, u32) {
        (self.report.input.width, self.report.input.height)
    }

    /// Every pass, in order.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// assert!(report.passes().iter().any(|p| p.name.starts_with("decode")));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn passes(&self) -> Vec<PassTime> {
        self.report
            .passes
            .iter()
            .map(|p| PassTime {
                name: p.name.clone(),
                on_host: p.on_host(),
                ms: p.ms,
            })
            .collect()
    }

    /// The whole job's wall time in milliseconds.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// assert!(report.total_ms() > 0.0);
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn total_ms(&self) -> f64 {
        self.report.total_ms
    }

    /// What the job changed or could not keep (metadata the format cannot hold, samples
    /// clipped, a device that fell back to the host).
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// for note in report.notes() {
    ///     eprintln!("note: {note}");
    /// }
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn notes(&self) -> &[String] {
        &self.report.notes
    }

    /// The report as `gblur --json` prints it.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// let json = report.to_json();
    /// assert!(json.contains("\"passes\""));
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.report).unwrap_or_default()
    }

    /// The report as the `gblur` command prints it on stderr.
    ///
    /// ```
    /// use gblur::{blur_file, FileOptions, Gaussian};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let out = dir.path().join("out.png");
    ///
    /// let report = blur_file("samples/coffee.png", &out, &FileOptions::new(Gaussian::new(5.0)?))?;
    /// eprintln!("{}", report.table());
    /// # Ok::<(), gblur::Error>(())
    /// ```
    pub fn table(&self) -> String {
        self.report.table()
    }
}

/// Blurs the image file `input` into `output`, as the `gblur` command does: the format read
/// from the content, the output's from its extension (or [`FileOptions::format`]), metadata
/// and bit depth kept, the output written to a temporary file and renamed into place, so
/// nothing is left half-written on failure.
///
/// ```no_run
/// use gblur::{blur_file, FileOptions, Gaussian};
///
/// let report = blur_file("photo.jpg", "blurred.jpg", &FileOptions::new(Gaussian::new(5.0)?))?;
/// println!("{} ms on {}", report.total_ms(), report.device());
/// # Ok::<(), gblur::Error>(())
/// ```
pub fn blur_file(
    input: impl AsRef<Path>,
    output: impl AsRef<Path>,
    options: &FileOptions,
) -> Result<FileReport, Error> {
    let (input, output) = (input.as_ref(), output.as_ref());
    let input_name = || PathBuf::from(input);
    match job::run(&options.job(input, output)) {
        Ok(report) => Ok(FileReport { report }),
        Err(JobError::Setup(e)) => Err(Error::Setup {
            input: input_name(),
            message: format!("{e:#}"),
        }),
        Err(JobError::Failed(e)) => Err(Error::Failed {
            input: input_name(),
            message: format!("{e:#}"),
        }),
    }
}
