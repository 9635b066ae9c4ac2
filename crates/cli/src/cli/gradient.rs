//! `gblur gradient`: maps of the Gaussian's derivatives (edges, or blobs with --laplacian) of
//! an image or of every image in a folder, through the library's `feature_map_file`.

use clap::{Args, ValueEnum};
use gblur::command::job::JobError;
use gblur::{feature_map_file, EdgeMode, Feature, FeatureOptions, FeatureReport};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gblur gradient photo.jpg edges.tif --sigma 2\n  gblur gradient cells.png blobs.png --sigma 4 --laplacian\n  gblur gradient scans/ maps/ --sigma 3 --format png --png-scale 60000"
)]
pub struct GradientArgs {
    /// The image to map (its luma; alpha is not used), or a folder: every image in it and its
    /// subfolders.
    pub input: PathBuf,
    /// The map: a .tif (32-bit float, the values themselves) or a .png (16-bit, scaled); for
    /// a folder, the folder the maps go into, under the images' own relative names.
    pub output: PathBuf,
    /// The Gaussian's sigma in pixels (more than 0): the scale of the edges or blobs.
    #[arg(short, long, value_parser = parse_sigma)]
    pub sigma: f64,
    /// The Laplacian of the Gaussian (signed: negative on bright blobs and lines) instead of
    /// the gradient magnitude (edges).
    #[arg(long)]
    pub laplacian: bool,
    /// The maps' format when INPUT is a folder.
    #[arg(long, value_enum, default_value_t = MapFormat::Tif)]
    pub format: MapFormat,
    /// A PNG's levels per unit of the map (a Laplacian's offset by 32768), the same for every
    /// image; default: each image's largest magnitude is the top level (the report says the
    /// scale it took, and how many values a given scale clips).
    #[arg(long, value_name = "F", value_parser = parse_scale)]
    pub png_scale: Option<f64>,
    /// What lies beyond the image's edges (as the main command's --edge); default reflect,
    /// scipy's.
    #[arg(long, default_value = "reflect", value_parser = EdgeMode::parse, value_name = "MODE")]
    pub edge: EdgeMode,
    /// The memory a decoder may use, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 512)]
    pub max_memory: u64,
    /// Print the reports as JSON on stdout (one array for a folder).
    #[arg(long)]
    pub json: bool,
}

/// A folder's maps' format.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MapFormat {
    /// 32-bit float gray TIFF.
    Tif,
    /// 16-bit gray PNG.
    Png,
}

fn parse_sigma(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    match v > 0.0 && gblur::nd::Filter::new(&[v]).is_ok() {
        true => Ok(v),
        false => Err(format!(
            "sigma must be a number from 0.001 to 1000000, got {s}"
        )),
    }
}

fn parse_scale(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number above 0")),
    }
}

impl GradientArgs {
    fn options(&self) -> FeatureOptions {
        let feature = match self.laplacian {
            true => Feature::Laplacian,
            false => Feature::GradientMagnitude,
        };
        let options = FeatureOptions::new(feature, self.sigma)
            .mode(self.edge)
            .max_memory_mib(self.max_memory);
        match self.png_scale {
            Some(scale) => options.png_scale(scale),
            None => options,
        }
    }

    /// The combinations that cannot run, as usage errors, before any work.
    fn check(&self) -> Result<(), JobError> {
        let usage = |m: String| Err(JobError::Setup(anyhow::anyhow!(m)));
        let folder = self.input.is_dir();
        if !folder && self.output.is_dir() {
            return usage(format!(
                "{}: is a folder; the map of one image is a file: name it .tif or .png",
                self.output.display()
            ));
        }
        if folder && self.output.exists() && !self.output.is_dir() {
            return usage(format!(
                "{}: INPUT is a folder, so OUTPUT must be one too",
                self.output.display()
            ));
        }
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if folder && same(&self.input, &self.output) {
            return usage(format!(
                "{}: OUTPUT is INPUT: the maps would be mixed with the images they come from",
                self.output.display()
            ));
        }
        let tiff = match folder {
            true => matches!(self.format, MapFormat::Tif),
            false => self.output.extension().is_some_and(|e| {
                ["tif", "tiff"].contains(&e.to_string_lossy().to_lowercase().as_str())
            }),
        };
        if self.png_scale.is_some() && tiff {
            return usage(
                "--png-scale sets a PNG's levels; a float TIFF holds the values themselves".into(),
            );
        }
        Ok(())
    }

    /// Maps the file or the folder, printing each report; a folder's failed files are
    /// named one a line and the others still mapped (exit 1 at the end).
    pub fn run(&self, quiet: bool) -> Result<(), JobError> {
        self.check()?;
        let options = self.options();
        if !self.input.is_dir() {
            let report = feature_map_file(&self.input, &self.output, &options)
                .map_err(|e| job_error((&self.input, &self.output), e))?;
            return emit(&[Ok(report)], self.json, quiet, false);
        }
        let pairs = self.folder_pairs();
        if pairs.is_empty() {
            return Err(JobError::Setup(anyhow::anyhow!(
                "{}: no image files in this folder",
                self.input.display()
            )));
        }
        // Two images of one name and different extensions would have one map.
        let mut taken: HashMap<PathBuf, PathBuf> = HashMap::new();
        let mut outcomes = Vec::new();
        for (input, output) in pairs {
            let done = match taken.get(&output) {
                Some(first) => Err(JobError::Failed(anyhow::anyhow!(
                    "{}: its map would be {}, as {}'s is: not mapped (rename one of them)",
                    input.display(),
                    output.display(),
                    first.display()
                ))),
                None => {
                    taken.insert(output.clone(), input.clone());
                    map_into_folder(&input, &output, &options)
                }
            };
            outcomes.push(done.map_err(|e| {
                let (JobError::Setup(e) | JobError::Failed(e)) = e;
                gblur::command::report::diagnostic(&gblur::command::report::one_line(&format!(
                    "gblur: {e:#}"
                )));
                (input, format!("{e:#}"))
            }));
        }
        emit(&outcomes, self.json, quiet, true)?;
        match outcomes.iter().filter(|o| o.is_err()).count() {
            0 => Ok(()),
            n => Err(JobError::Failed(anyhow::anyhow!(
                "{n} of {} files could not be mapped",
                outcomes.len()
            ))),
        }
    }

    /// Every image file under the input folder (by its content's signature), in name order,
    /// with its map's path: the same relative path under OUTPUT, the format's extension.
    /// OUTPUT inside INPUT is not walked.
    fn folder_pairs(&self) -> Vec<(PathBuf, PathBuf)> {
        let extension = match self.format {
            MapFormat::Tif => "tif",
            MapFormat::Png => "png",
        };
        let out_inside = self.output.starts_with(&self.input) && self.output != self.input;
        walkdir::WalkDir::new(&self.input)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| !(out_inside && e.path().starts_with(&self.output)))
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() && is_image(e.path()))
            .map(|e| {
                let rel = e.path().strip_prefix(&self.input).unwrap_or(e.path());
                let out = self.output.join(rel).with_extension(extension);
                (e.path().to_path_buf(), out)
            })
            .collect()
    }
}

/// One image of a folder mapped into `output`, its folder made first.
fn map_into_folder(
    input: &Path,
    output: &Path,
    options: &FeatureOptions,
) -> Result<FeatureReport, JobError> {
    if let Some(parent) = output.parent() {
        std::fs::create_dir_all(parent).map_err(|e| {
            JobError::Failed(anyhow::anyhow!(
                "{}: cannot create the folder: {e}",
                parent.display()
            ))
        })?;
    }
    feature_map_file(input, output, options).map_err(|e| job_error((input, output), e))
}

/// Whether the file's content starts as an image format gblur reads.
fn is_image(path: &Path) -> bool {
    matches!(gblur::command::formats::sniff(path), Ok(Some(_)))
}

/// The library's error as the command's: set-up errors exit 2, failures 1; the message names
/// the file (the input, where it names neither file).
fn job_error((input, output): (&Path, &Path), e: gblur::Error) -> JobError {
    let names = |m: &str, p: &Path| m.contains(&p.display().to_string());
    let named = |m: String| match names(&m, input) || names(&m, output) {
        true => anyhow::anyhow!(m),
        false => anyhow::anyhow!("{}: {m}", input.display()),
    };
    match e {
        gblur::Error::Failed { message, .. } => JobError::Failed(named(message)),
        gblur::Error::Setup { message, .. } => JobError::Setup(named(message)),
        other => JobError::Setup(named(other.to_string())),
    }
}

/// A file's report, or its input and why it failed.
type Outcome = Result<FeatureReport, (PathBuf, String)>;

/// Prints the reports: tables on stderr (unless quiet; failures were named as they came), or
/// JSON on stdout: one object for a file, an array for a folder, where a failed file is
/// `{"input": ..., "error": ...}`.
fn emit(outcomes: &[Outcome], json: bool, quiet: bool, folder: bool) -> Result<(), JobError> {
    use std::io::Write;
    if json {
        let value = |o: &Outcome| match o {
            Ok(report) => serde_json::to_value(report).expect("plain data"),
            Err((input, error)) => serde_json::json!({ "input": input, "error": error }),
        };
        let text = match (folder, outcomes) {
            (false, [one]) => serde_json::to_string_pretty(&value(one)),
            _ => serde_json::to_string_pretty(&outcomes.iter().map(value).collect::<Vec<_>>()),
        };
        let _ = writeln!(std::io::stdout().lock(), "{}", text.expect("plain data"));
    } else if !quiet {
        for report in outcomes.iter().flatten() {
            gblur::command::report::diagnostic(report.table().trim_end());
        }
    }
    Ok(())
}
