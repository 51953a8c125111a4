//! `CatalogError`: everything that can be wrong with a catalog file, said so a person can fix it.
//!
//! Every variant names the file, where it has one the line (and column for TOML syntax), the
//! entry id, and what to do. A user's catalog is checked completely at load (regexes,
//! enumerations, examples and counter-examples), so a broken entry is refused before any job is
//! classified with it.

use std::path::PathBuf;

/// Why a catalog could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file could not be read.
    #[error(
        "cannot read catalog file {}: {source}; fix: check the path (given with --catalog or TRIAGE_CATALOG) and its permissions",
        file.display()
    )]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The file is not valid TOML, or does not have the catalog's shape (e.g. a misspelled
    /// field name).
    #[error(
        "{}:{line}:{column}: invalid catalog: {message}; fix: correct the TOML there (a catalog is `version = \"YYYY.MM.N\"` then [[entry]] tables with id, class, category, patterns, action, strategy, hint)",
        file.display()
    )]
    Syntax { file: PathBuf, line: usize, column: usize, message: String },

    /// The top-level `version` string is missing or empty.
    #[error(
        "{}: missing top-level `version`; fix: add a line like `version = \"2026.11.1\"` before the first [[entry]]",
        file.display()
    )]
    MissingVersion { file: PathBuf },

    /// An id is empty or has characters other than letters, digits, `-`, `_` and `.`.
    #[error(
        "{}:{line}: entry id {id:?} is not valid; fix: use only letters, digits, '-', '_' or '.' (e.g. \"my-network-error\")",
        file.display()
    )]
    InvalidId { file: PathBuf, line: usize, id: String },

    /// The same id appears twice in one file.
    #[error(
        "{}:{line}: entry `{id}` is defined twice in this file (first at line {first_line}); fix: merge the two [[entry]] tables or rename one of them",
        file.display()
    )]
    DuplicateId { file: PathBuf, line: usize, first_line: usize, id: String },

    /// A required field is missing (after merging with earlier catalogs).
    #[error(
        "{}:{line}: entry `{id}` has no `{field}`; fix: add `{field} = ...`{valid}",
        file.display()
    )]
    MissingField {
        file: PathBuf,
        line: usize,
        id: String,
        field: &'static str,
        /// Where the field is an enumeration: " (one of: ...)"; else empty.
        valid: String,
    },

    /// A class, action, strategy or scheduler state that triage does not know.
    #[error(
        "{}:{line}: entry `{id}` has {field} {value:?}, which is not one of: {valid}; fix: use one of those",
        file.display()
    )]
    UnknownValue { file: PathBuf, line: usize, id: String, field: &'static str, value: String, valid: String },

    /// The entry could never match: no patterns, no exit codes, no scheduler states.
    #[error(
        "{}:{line}: entry `{id}` matches nothing: it has no `patterns`, `exit_codes` or `scheduler_states`; fix: give at least one of them (or `disabled = true` to remove the entry)",
        file.display()
    )]
    NoMatcher { file: PathBuf, line: usize, id: String },

    /// A pattern is not a valid regex.
    #[error(
        "{}:{line}: entry `{id}` has an invalid regex {pattern:?}: {error}; fix: correct the pattern (Rust regex syntax, no look-around; in TOML prefer '...' literal strings so backslashes stay as written)",
        file.display()
    )]
    BadRegex { file: PathBuf, line: usize, id: String, pattern: String, error: String },

    /// A pattern matches the empty line, so it would match every line of every log.
    #[error(
        "{}:{line}: entry `{id}` has pattern {pattern:?}, which matches an empty line and so every line; fix: make it require some text",
        file.display()
    )]
    MatchesEverything { file: PathBuf, line: usize, id: String, pattern: String },

    /// One of the entry's `examples` is matched by none of its patterns.
    #[error(
        "{}:{line}: entry `{id}`: example {example:?} is matched by none of its patterns; fix: correct the patterns or the example",
        file.display()
    )]
    ExampleNotMatched { file: PathBuf, line: usize, id: String, example: String },

    /// One of the entry's `counter_examples` is matched by one of its patterns.
    #[error(
        "{}:{line}: entry `{id}`: counter-example {example:?} is matched by pattern {pattern:?}; fix: make that pattern stricter or drop the counter-example",
        file.display()
    )]
    CounterExampleMatched { file: PathBuf, line: usize, id: String, example: String, pattern: String },

    /// `disabled = true` on an id that no earlier catalog defines.
    #[error(
        "{}:{line}: `disabled = true` names entry `{id}`, which no earlier catalog defines; fix: check the id against the built-in list (`triage hints --list`) or remove this entry",
        file.display()
    )]
    UnknownDisabled { file: PathBuf, line: usize, id: String },

    /// The patterns together are too large to compile into one set.
    #[error(
        "{}: the catalog's patterns are too large to compile together: {error}; fix: simplify the largest patterns (long alternations, big counted repetitions)",
        file.display()
    )]
    TooLarge { file: PathBuf, error: String },
}

impl CatalogError {
    /// The file the error is about.
    pub fn file(&self) -> &std::path::Path {
        match self {
            CatalogError::Read { file, .. }
            | CatalogError::Syntax { file, .. }
            | CatalogError::MissingVersion { file }
            | CatalogError::InvalidId { file, .. }
            | CatalogError::DuplicateId { file, .. }
            | CatalogError::MissingField { file, .. }
            | CatalogError::UnknownValue { file, .. }
            | CatalogError::NoMatcher { file, .. }
            | CatalogError::BadRegex { file, .. }
            | CatalogError::MatchesEverything { file, .. }
            | CatalogError::ExampleNotMatched { file, .. }
            | CatalogError::CounterExampleMatched { file, .. }
            | CatalogError::UnknownDisabled { file, .. }
            | CatalogError::TooLarge { file, .. } => file,
        }
    }
}
