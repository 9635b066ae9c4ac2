//! The ICC profile a BMP embeds: a BITMAPV5HEADER whose colour space type is
//! `PROFILE_EMBEDDED` ('MBED') points at the profile's bytes, counted from the start of that
//! header (Microsoft's BITMAPV5HEADER reference). The `image` crate's BMP decoder does not
//! read it.

use super::ifd::Source;

/// The size of a BITMAPV5HEADER, and where the file header ends and it begins.
const V5_HEADER: u32 = 124;
const INFO_AT: u64 = 14;
/// `bV5CSType` for a profile stored in the file.
const PROFILE_EMBEDDED: u32 = u32::from_be_bytes(*b"MBED");
/// The most bytes an embedded profile may take to be read: far above any real profile.
const MAX_PROFILE: u32 = 16 << 20;

/// The embedded ICC profile of the BMP `src`, if it has one.
pub fn read_icc(src: &mut impl Source) -> Option<Vec<u8>> {
    let info = src.read_at(INFO_AT, V5_HEADER as usize)?;
    let le = |at: usize| u32::from_le_bytes(info[at..at + 4].try_into().expect("four bytes"));
    if le(0) < V5_HEADER || le(56) != PROFILE_EMBEDDED {
        return None;
    }
    let (offset, size) = (le(112), le(116));
    if size == 0 || size > MAX_PROFILE {
        return None;
    }
    src.read_at(INFO_AT + offset as u64, size as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bmp_with_profile(cs_type: &[u8; 4], profile: &[u8]) -> Vec<u8> {
        let mut b = b"BM".to_vec();
        b.extend_from_slice(&[0; 12]);
        let mut info = vec![0u8; V5_HEADER as usize];
        info[..4].copy_from_slice(&V5_HEADER.to_le_bytes());
        info[56..60].copy_from_slice(&u32::from_be_bytes(*cs_type).to_le_bytes());
        info[112..116].copy_from_slice(&(V5_HEADER + 4).to_le_bytes());
        info[116..120].copy_from_slice(&(profile.len() as u32).to_le_bytes());
        b.extend_from_slice(&info);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(profile);
        b
    }

    #[test]
    fn an_embedded_profile_is_read_and_a_linked_one_is_not() {
        let profile = b"a profile's bytes";
        let file = bmp_with_profile(b"MBED", profile);
        assert_eq!(
            read_icc(&mut file.as_slice()).as_deref(),
            Some(&profile[..])
        );
        let linked = bmp_with_profile(b"LINK", profile);
        assert_eq!(read_icc(&mut linked.as_slice()), None);
        assert_eq!(read_icc(&mut &file[..60]), None);
    }
}
