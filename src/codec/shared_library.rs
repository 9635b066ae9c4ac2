//! System libraries gblur loads at run time rather than builds (libheif and libde265, libwebp),
//! so that the build compiles no C for them and a machine without one still runs gblur.

use dlopen2::wrapper::{Container, WrapperApi};

/// `T`'s symbols from the first of `names` (one library's names on each system) that loads;
/// Err: the last name's failure.
pub fn load<T: WrapperApi>(names: &[&str]) -> Result<Container<T>, String> {
    let mut last = String::new();
    for &name in names {
        // SAFETY: loading libheif, the codecs it links or libwebp runs their initialisers, which
        // have no preconditions; `T`'s symbols are declared as their headers declare them.
        match unsafe { Container::<T>::load(name) } {
            Ok(api) => return Ok(api),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}
