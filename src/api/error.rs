//! The library's one error type: every way a call can be refused or fail, a variant each.

use std::path::PathBuf;

/// Why a blur was refused or failed.
///
/// The library never panics on the values or data it is given: a bad sigma, a buffer of the
/// wrong size, a device that cannot be opened and a file that cannot be read all come back as
/// one of these.
///
/// ```
/// use gblur::{Error, Gaussian, Layout};
///
/// match Gaussian::new(f64::INFINITY) {
///     Err(Error::Sigma { axis, .. }) => assert_eq!(axis, "x"),
///     other => panic!("{other:?}"),
/// }
/// let mut short = vec![0u8; 10];
/// let err = Gaussian::new(1.0).unwrap().blur_interleaved(&mut short, Layout::new(8, 8, 1));
/// assert!(matches!(err, Err(Error::Buffer(_))));
/// # Ok::<(), gblur::Error>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A sigma that is not a finite number in the accepted range.
    #[error("sigma {value} ({axis}) must be 0 (no blur along that axis) or a number from 0.001 to 1000000")]
    Sigma {
        /// Which axis: `x`, `y`, or `axis N` for arrays.
        axis: String,
        /// The value given.
        value: f64,
    },
    /// `truncate` outside (0, 20], or a radius of 0.
    #[error("{0}")]
    Truncate(String),
    /// `Method::Fir` at a sigma whose kernel would be too wide to run in reasonable time.
    #[error(
        "the FIR supports sigma up to {max} (got {sigma}); use Method::Recursive or Method::Auto"
    )]
    FirTooWide {
        /// The sigma asked for.
        sigma: f64,
        /// The largest sigma the FIR takes.
        max: f64,
    },
    /// A constant edge value that is not a finite number.
    #[error("the constant edge value must be a finite number (got {0})")]
    Constant(f64),
    /// A derivative order other than 0, 1 or 2.
    #[error("the derivative order must be 0, 1 or 2 (got {0})")]
    Order(u8),
    /// A buffer whose length does not match the layout or shape given with it.
    #[error("{0}")]
    Buffer(String),
    /// An array's shape, or the axes or sigmas given for it, that do not fit together.
    #[error("{0}")]
    Shape(String),
    /// An image whose colour type the blur does not handle.
    #[error("{0}")]
    Unsupported(String),
    /// An OpenCL device that cannot be found, opened, or that failed while blurring.
    #[error("{0}")]
    Device(String),
    /// A file job whose options cannot run: a bad combination, an output that cannot be
    /// written there, a device that does not exist. The command line exits 2 for these.
    #[error("{message}")]
    Setup {
        /// The input named by the job.
        input: PathBuf,
        /// What is wrong, in one sentence.
        message: String,
    },
    /// A file job that ran and failed: an input that cannot be decoded, an output that
    /// cannot be written. Nothing is left at the output.
    #[error("{message}")]
    Failed {
        /// The input named by the job.
        input: PathBuf,
        /// What failed, in one sentence.
        message: String,
    },
}
