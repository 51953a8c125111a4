//! Loading user catalogs: overrides, removal, and every way a file can be wrong. Each broken
//! file is written to a temporary directory and must be refused with an error that names the
//! file (and line), the entry, and the fix.

use std::path::PathBuf;

use super::*;
use crate::model::{EntryClass, Verdict};

const ENTRY: &str = r#"
[[entry]]
id = "my-flaky-service"
class = "transient"
category = "network"
patterns = ['(?i)flaky service said no']
action = "retry"
strategy = "retry_with_jitter"
hint = "Our flaky service. Retry."
examples = ["ERROR: flaky service said no"]
counter_examples = ["flaky service said yes"]
"#;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// Load `text` as one user file and return the error's message (which must name the file
/// and say how to fix it).
fn load_err(text: &str) -> (CatalogError, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "user.toml", text);
    let err = match Catalog::load(std::slice::from_ref(&path)) {
        Ok(_) => panic!("loaded a broken catalog:\n{text}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "no file in: {msg}");
    assert!(msg.contains("fix:"), "no fix in: {msg}");
    assert_eq!(err.file(), path.as_path());
    (err, msg)
}

#[test]
fn a_user_file_adds_overrides_and_disables_entries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(
        &dir,
        "a.toml",
        &format!(
            "version = \"site.1\"\n{ENTRY}\n[[entry]]\nid = \"cuda-out-of-memory\"\nclass = \"transient\"\nhint = \"Our GPUs are shared: retry.\"\n\n[[entry]]\nid = \"python-lookup-error\"\ndisabled = true\n"
        ),
    );
    let b = write(
        &dir,
        "b.toml",
        "version = \"site.2\"\n[[entry]]\nid = \"my-flaky-service\"\nclass = \"permanent\"\naction = \"fail\"\nstrategy = \"abort\"\n",
    );
    let c = Catalog::load(&[a, b.clone()]).expect("load");
    assert_eq!(c.version(), format!("{}+user", Catalog::builtin().version()));

    // Added, then changed by the second file (fields it did not set stay).
    let e = c.entry("my-flaky-service").expect("added");
    assert_eq!(e.class, EntryClass::Permanent);
    assert_eq!(&*e.category, "network");
    assert_eq!(e.source, b.display().to_string());
    let h = c.scan("ERROR: flaky service said no", &ScanContext::default());
    assert_eq!(h.verdict, Verdict::Permanent);

    // Overridden builtin: patterns and examples kept, class and hint changed.
    let h = c.scan("RuntimeError: CUDA out of memory.", &ScanContext::default());
    assert_eq!(h.verdict, Verdict::Transient);
    assert_eq!(h.hint.as_deref(), Some("Our GPUs are shared: retry."));

    // Disabled.
    assert!(c.entry("python-lookup-error").is_none());
    assert_eq!(c.scan("KeyError: 'x'", &ScanContext::default()).verdict, Verdict::Unknown);
    // The builtin is untouched.
    assert!(Catalog::builtin().entry("python-lookup-error").is_some());
    assert_eq!(Catalog::load(&[]).expect("builtin").version(), Catalog::builtin().version());
}

#[test]
fn a_disabled_entry_can_be_defined_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = write(&dir, "a.toml", "version = \"1\"\n[[entry]]\nid = \"text-file-busy\"\ndisabled = true\n");
    let b = write(&dir, "b.toml", &format!("version = \"2\"\n{}", ENTRY.replace("my-flaky-service", "text-file-busy")));
    let c = Catalog::load(&[a, b]).expect("load");
    assert_eq!(c.entry("text-file-busy").map(|e| &*e.category), Some("network"));
}

#[test]
fn unreadable_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.toml");
    let err = Catalog::load(std::slice::from_ref(&missing)).expect_err("missing file");
    assert!(matches!(err, CatalogError::Read { .. }));
    let msg = err.to_string();
    assert!(msg.contains("nope.toml") && msg.contains("fix:"), "{msg}");
    let bad_utf8 = write(&dir, "bin.toml", "");
    std::fs::write(&bad_utf8, [0xff, 0xfe, 0x00]).expect("write");
    assert!(matches!(Catalog::load(&[bad_utf8]), Err(CatalogError::Read { .. })));
}

#[test]
fn toml_syntax_errors_have_line_and_column() {
    let (err, msg) = load_err("version = \"1\"\n[[entry]]\nid = \"x\nclass = 3\n");
    assert!(matches!(err, CatalogError::Syntax { line: 3, .. }), "{msg}");
    let (err, msg) = load_err(&format!("version = \"1\"\n{}", ENTRY.replace("patterns", "pattern")));
    assert!(matches!(err, CatalogError::Syntax { line: 7, .. }), "{msg}");
    assert!(msg.contains("pattern"), "{msg}");
    let (_, msg) = load_err("version = \"1\"\nentry = 5\n");
    assert!(msg.contains(":2:"), "{msg}");
    let (_, msg) = load_err("version = \"1\"\n[[entry]]\nclass = \"transient\"\n");
    assert!(msg.contains("missing field `id`"), "{msg}");
}

#[test]
fn missing_version() {
    let (err, msg) = load_err(ENTRY);
    assert!(matches!(err, CatalogError::MissingVersion { .. }), "{msg}");
    let (err, _) = load_err(&format!("version = \" \"\n{ENTRY}"));
    assert!(matches!(err, CatalogError::MissingVersion { .. }));
}

#[test]
fn bad_regex_shows_the_regex_error() {
    let (err, msg) = load_err(&format!("version = \"1\"\n{}", ENTRY.replace("said no']", "said (no']")));
    assert!(matches!(err, CatalogError::BadRegex { line: 3, .. }), "{msg}");
    assert!(msg.contains("my-flaky-service") && msg.contains("unclosed group"), "{msg}");
    let look_around = ENTRY.replace("(?i)flaky", "(?=x)flaky");
    let (_, msg) = load_err(&format!("version = \"1\"\n{look_around}"));
    assert!(msg.contains("look-around"), "{msg}");
}

#[test]
fn a_pattern_that_matches_everything_is_refused() {
    let (err, msg) = load_err(&format!("version = \"1\"\n{}", ENTRY.replace("(?i)flaky service said no", "x*")));
    assert!(matches!(err, CatalogError::MatchesEverything { .. }), "{msg}");
}

#[test]
fn unknown_enumeration_values_list_the_valid_ones() {
    let cases = [
        ("class = \"transient\"", "class = \"flaky\"", "transient, permanent, context"),
        ("action = \"retry\"", "action = \"retry_later\"", "retry_more_memory"),
        ("strategy = \"retry_with_jitter\"", "strategy = \"RETRY_WITH_JITTER\"", "circuit_breaker"),
        ("category = \"network\"", "category = \"network\"\nscheduler_states = [\"LOST\"]", "NODE_FAIL"),
    ];
    for (from, to, valid) in cases {
        let (err, msg) = load_err(&format!("version = \"1\"\n{}", ENTRY.replace(from, to)));
        assert!(matches!(err, CatalogError::UnknownValue { line: 3, .. }), "{msg}");
        assert!(msg.contains(valid) && msg.contains("my-flaky-service"), "{msg}");
    }
}

#[test]
fn duplicate_ids_in_one_file() {
    let (err, msg) = load_err(&format!("version = \"1\"\n{ENTRY}{ENTRY}"));
    assert!(matches!(err, CatalogError::DuplicateId { line: 14, first_line: 3, .. }), "{msg}");
}

#[test]
fn invalid_ids() {
    let (err, msg) = load_err(&format!("version = \"1\"\n{}", ENTRY.replace("my-flaky-service", "my flaky")));
    assert!(matches!(err, CatalogError::InvalidId { .. }), "{msg}");
}

#[test]
fn entries_that_match_nothing_or_miss_fields() {
    let no_matcher = ENTRY
        .replace("patterns = ['(?i)flaky service said no']\n", "patterns = []\n")
        .replace("examples = [\"ERROR: flaky service said no\"]\n", "");
    let (err, msg) = load_err(&format!("version = \"1\"\n{no_matcher}"));
    assert!(matches!(err, CatalogError::NoMatcher { .. }), "{msg}");

    let no_hint = ENTRY.replace("hint = \"Our flaky service. Retry.\"\n", "");
    let (err, msg) = load_err(&format!("version = \"1\"\n{no_hint}"));
    assert!(matches!(err, CatalogError::MissingField { field: "hint", .. }), "{msg}");
    let no_class = ENTRY.replace("class = \"transient\"\n", "");
    let (_, msg) = load_err(&format!("version = \"1\"\n{no_class}"));
    assert!(msg.contains("`class`") && msg.contains("context"), "{msg}");
}

#[test]
fn examples_and_counter_examples_are_checked_at_load() {
    let bad = ENTRY.replace("ERROR: flaky service said no", "ERROR: flaky service said maybe");
    let (err, msg) = load_err(&format!("version = \"1\"\n{bad}"));
    assert!(matches!(err, CatalogError::ExampleNotMatched { .. }), "{msg}");
    assert!(msg.contains("said maybe"), "{msg}");

    let bad = ENTRY.replace("flaky service said yes", "FLAKY SERVICE SAID NO!");
    let (err, msg) = load_err(&format!("version = \"1\"\n{bad}"));
    assert!(matches!(err, CatalogError::CounterExampleMatched { .. }), "{msg}");
    assert!(msg.contains("(?i)flaky service said no"), "{msg}");

    // An override that narrows a builtin's patterns is checked against its examples.
    let narrow = "version = \"1\"\n[[entry]]\nid = \"text-file-busy\"\npatterns = ['ETXTBSY']\n";
    let (err, msg) = load_err(narrow);
    assert!(matches!(err, CatalogError::ExampleNotMatched { .. }), "{msg}");
}

#[test]
fn disabling_an_unknown_id() {
    let (err, msg) = load_err("version = \"1\"\n[[entry]]\nid = \"no-such-entry\"\ndisabled = true\n");
    assert!(matches!(err, CatalogError::UnknownDisabled { line: 2, .. }), "{msg}");
}

#[test]
fn garbage_never_panics() {
    let inputs = [
        "",
        "\u{0}",
        "[[entry]]",
        "version = 1",
        "version = \"1\"\n[[entry]]\nid = \"\"\n",
        "version = \"1\"\n[[entry]]\nid = \"a\"\npriority = 99999999999\n",
        "version = \"1\"\n[[entry]]\nid = \"a\"\nexit_codes = [\"x\"]\n",
        "version = \"1\"\n[entry]\nid = \"a\"\n",
        "version = \"1\"\n[[entry]]\nid = \"a\"\npatterns = ['a{99999}{99999}']\nclass = \"context\"\n",
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, text) in inputs.iter().enumerate() {
        let path = write(&dir, &format!("g{i}.toml"), text);
        let err = Catalog::load(&[path]).expect_err(text);
        assert!(err.to_string().contains("fix:"), "{err}");
    }
}

/// A file is parsed one `[[entry]]` at a time (to keep a large file's parse small); a
/// multi-line string with an `[[entry]]` line in it cannot be cut there, and the file is then
/// read whole, with the same result and the same lines in errors.
#[test]
fn an_entry_line_inside_a_multi_line_string_is_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hint = "hint = '''Our flaky service.\n[[entry]]\nRetry.'''";
    let text = format!("version = \"site.1\"\n{}", ENTRY.replace("hint = \"Our flaky service. Retry.\"", hint));
    let path = write(&dir, "user.toml", &text);
    let c = Catalog::load(std::slice::from_ref(&path)).expect("load");
    let e = c.entry("my-flaky-service").expect("the entry");
    assert!(e.hint.contains("\n[[entry]]\n"), "{}", e.hint);

    // An error after such a string names the line it is on.
    let broken = format!("{text}\n[[entry]]\nid = \"my-flaky-service\"\nclass = \"transient\"\n");
    let (err, msg) = load_err(&broken);
    assert!(matches!(err, CatalogError::DuplicateId { line: 16, first_line: 3, .. }), "{msg}");
}
