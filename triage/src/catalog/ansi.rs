//! Strip ANSI escape sequences (colours, cursor moves, window titles) before matching.
//!
//! Tools colour their errors (`\x1b[31mERROR\x1b[0m`), and a pattern written against the plain
//! text must still match. A small compiled regex does it; no allocation when the text has no
//! ESC (or C1 CSI) character at all, which is the common case. Tabs and carriage returns are
//! kept, so word boundaries in the text stay where they were.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL` or `ESC ] ... ESC \`, not past a line end),
/// DCS/SOS/PM/APC strings, charset selections, two-character escapes, and the 8-bit CSI.
const ANSI: &str = concat!(
    r"\x1b\[[0-?]*[ -/]*[@-~]",
    r"|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)?",
    r"|\x1b[PX^_][^\x1b\n]*(?:\x1b\\)?",
    r"|\x1b[()*+][0-9A-Za-z]",
    r"|\x1b[ -/]*[0-~]",
    r"|\x{9b}[0-?]*[ -/]*[@-~]",
    r"|\x1b",
);

static ANSI_RE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(ANSI).ok());

/// `text` without ANSI escape sequences; borrowed when there were none.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    // memchr's vector search for ESC and for 0x9B, the last byte of the C1 CSI in UTF-8 (and
    // of a few other characters, which then take the regex's way): `str::contains` with a set
    // of chars decodes every char, and a substring search builds a searcher per call.
    if memchr::memchr2(0x1b, 0x9b, text.as_bytes()).is_none() {
        return Cow::Borrowed(text);
    }
    match ANSI_RE.as_ref() {
        Some(re) => re.replace_all(text, ""),
        None => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_compiles() {
        assert!(ANSI_RE.is_some());
    }

    #[test]
    fn strips_colours_and_keeps_text() {
        let s = "\x1b[1;31mERROR\x1b[0m: Connection \x1b[4mrefused\x1b[24m\tnow";
        assert_eq!(strip_ansi(s), "ERROR: Connection refused\tnow");
    }

    #[test]
    fn strips_osc_titles_charsets_and_8bit_csi() {
        assert_eq!(strip_ansi("\x1b]0;title\x07done"), "done");
        assert_eq!(strip_ansi("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), "link");
        assert_eq!(strip_ansi("\x1b(Bplain\x1b=x"), "plainx");
        assert_eq!(strip_ansi("\u{9b}32mgreen\u{9b}0m"), "green");
        assert_eq!(strip_ansi("\x1b[2K\rprogress 50%"), "\rprogress 50%");
    }

    #[test]
    fn borrows_when_there_is_nothing_to_strip() {
        assert!(matches!(strip_ansi("plain text"), Cow::Borrowed(_)));
    }

    #[test]
    fn unterminated_sequences_do_not_eat_the_next_line() {
        assert_eq!(strip_ansi("a\x1b]0;title\nKeyError: 'x'"), "a\nKeyError: 'x'");
        assert_eq!(strip_ansi("trailing \x1b"), "trailing ");
        assert!(!strip_ansi("\x1b[").contains('\x1b'));
    }
}
