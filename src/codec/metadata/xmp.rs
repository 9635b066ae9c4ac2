//! The XMP packet adjusted to the written pixels, as the EXIF is: `tiff:Orientation` 1 and
//! `exif:PixelXDimension`/`exif:PixelYDimension` the output's size. XMP writes a simple
//! property either as an attribute (`tiff:Orientation="6"`) or as an element
//! (`<tiff:Orientation>6</tiff:Orientation>`); both are rewritten, everything else is kept
//! byte for byte. A packet that is not UTF-8 is kept as it is.

/// The packet with the properties set for pixels of `size` (width, height).
pub fn for_output(packet: &[u8], (w, h): (u32, u32)) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(packet) else {
        return packet.to_vec();
    };
    let text = set_property(text, "tiff:Orientation", "1");
    let text = set_property(&text, "exif:PixelXDimension", &w.to_string());
    let text = set_property(&text, "exif:PixelYDimension", &h.to_string());
    text.into_bytes()
}

/// The orientation the packet gives (`tiff:Orientation`, 1 to 8), where it gives one.
pub fn orientation(packet: &[u8]) -> Option<u8> {
    let text = std::str::from_utf8(packet).ok()?;
    let span = value_spans(text, "tiff:Orientation").into_iter().next()?;
    text[span]
        .trim()
        .parse()
        .ok()
        .filter(|v| (1..=8).contains(v))
}

/// `text` with every value of the property `name` set to `value`.
fn set_property(text: &str, name: &str, value: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for span in value_spans(text, name) {
        out.push_str(&text[at..span.start]);
        out.push_str(value);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Where each value of the property `name` lies in `text`, in order: an attribute's quoted
/// value or a simple element's text.
fn value_spans(text: &str, name: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(name) {
        let end_of_name = from + i + name.len();
        let (before, rest) = text.split_at(end_of_name);
        from = end_of_name;
        // Only the property itself: `tiff:OrientationX` is another name.
        let (open, close) = match rest.trim_start().as_bytes().first() {
            Some(b'=') => {
                let eq = rest.find('=').expect("found above");
                let quote_at = rest[eq + 1..].find(['"', '\'']).map(|q| eq + 1 + q);
                let Some(q) = quote_at else { continue };
                let quote = rest[q..].chars().next().expect("a quote");
                (q + 1, rest[q + 1..].find(quote).map(|e| q + 1 + e))
            }
            Some(b'>') if before.ends_with(&format!("<{name}")) => {
                let gt = rest.find('>').expect("found above");
                (gt + 1, rest[gt + 1..].find('<').map(|e| gt + 1 + e))
            }
            _ => continue,
        };
        let Some(close) = close else { continue };
        spans.push(end_of_name + open..end_of_name + close);
        from = end_of_name + close;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_and_elements_are_rewritten_and_nothing_else() {
        let packet = r#"<rdf:Description tiff:Orientation="6" exif:PixelXDimension='4032'
 tiff:OrientationNote="keep" exif:PixelYDimension="3024"><tiff:Orientation>8</tiff:Orientation>
<dc:title>tiff:Orientation is a tag</dc:title></rdf:Description>"#;
        let out = String::from_utf8(for_output(packet.as_bytes(), (30, 40))).unwrap();
        assert_eq!(
            out,
            r#"<rdf:Description tiff:Orientation="1" exif:PixelXDimension='30'
 tiff:OrientationNote="keep" exif:PixelYDimension="40"><tiff:Orientation>1</tiff:Orientation>
<dc:title>tiff:Orientation is a tag</dc:title></rdf:Description>"#
        );
    }

    #[test]
    fn packets_without_the_properties_or_not_utf8_are_unchanged() {
        let p = b"<x:xmpmeta><dc:creator>A</dc:creator></x:xmpmeta>";
        assert_eq!(for_output(p, (1, 1)), p);
        let bad = [0xFFu8, 0xFE, b't'];
        assert_eq!(for_output(&bad, (1, 1)), bad);
    }

    #[test]
    fn orientation_is_read_from_attributes_and_elements() {
        assert_eq!(orientation(br#"<d tiff:Orientation="6"/>"#), Some(6));
        assert_eq!(
            orientation(b"<tiff:Orientation> 8 </tiff:Orientation>"),
            Some(8)
        );
        assert_eq!(orientation(br#"<d tiff:OrientationX="6"/>"#), None);
        assert_eq!(orientation(br#"<d tiff:Orientation="9"/>"#), None);
        assert_eq!(orientation(b"tiff:Orientation"), None);
    }
}
