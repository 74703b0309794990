//! Escaping of text taken from results files before it goes into HTML or SVG.

/// Escape `&`, `<`, `>`, `"` and `'` so that any text is safe inside element content and
/// quoted attribute values of both HTML and SVG (which share these five rules).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // control characters are not allowed in XML 1.0; drop them rather than emit invalid SVG
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// A file-name-safe slug: lowercase ASCII letters, digits and `-`, never empty.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if c == '.' && out.chars().last().is_some_and(|l| l.is_ascii_digit()) {
            // keep decimal points readable in values like 0.5 -> 0p5
            out.push('p');
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-').to_string();
    if trimmed.is_empty() {
        "x".to_string()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(escape(r#"<a href="x">&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
        assert_eq!(escape("plain c3/fcfs"), "plain c3/fcfs");
        assert_eq!(escape("bell\u{7}x"), "bellx");
        assert_eq!(escape("µs ≥ 1"), "µs ≥ 1");
    }

    #[test]
    fn slugs_are_file_safe() {
        assert_eq!(slug("Latency tail: c3/fcfs"), "latency-tail-c3-fcfs");
        assert_eq!(slug("interval_ms=0.5"), "interval-ms-0p5");
        assert_eq!(slug("../../etc"), "etc");
        assert_eq!(slug("<>"), "x");
    }
}
