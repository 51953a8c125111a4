//! The pattern catalog: what a failed job's stderr, exit code and scheduler state say about
//! whether a retry will help.
//!
//! The catalog is evidence, not a decision (DESIGN.md): the agent decides, and the engine
//! checks the agent's proposal against what [`Catalog::scan`] concludes. Entries live in TOML
//! (`triage/catalog/default.toml` is embedded; users add or override entries with their own
//! files, see [`Catalog::load`]). Each entry has an `id`, a `class` (`transient`, `permanent`,
//! or `context`: worth saying, decides nothing), a `category`, regex `patterns` and/or
//! `exit_codes` and `scheduler_states`, a suggested `action`, a `strategy` (seed 002), a
//! `hint` written for the agent, an optional `priority`, and `examples` and
//! `counter_examples`: checked at load for every entry a user file adds or changes, and for
//! the embedded entries by this module's tests (with every pattern needing an example; a
//! loaded catalog does not keep the embedded entries' examples in memory).
//!
//! Patterns are Rust regexes tried on each line of the ANSI-stripped text (`^`/`$` are the
//! line's ends); use `(?i)` for case-insensitivity. They are matched with ASCII classes
//! (`\w`, `\d`, `\s`, `\b` and `(?i)` are ASCII, `.` is one byte): logs are English and
//! ASCII where it matters, and a Unicode-aware set of this size scans markedly slower. A
//! non-ASCII character written in a pattern still matches itself. Exit codes and scheduler states on an entry
//! with patterns only confirm it (making it specific); an entry without patterns matches on
//! them alone.
//!
//! Where the meaning is in numbers or in a combination of lines, an **analyzer** (Rust, one
//! file each under `analyzers/`) weighs it: the size of a CUDA allocation against the GPU, a
//! Java heap error against a fixed `-Xmx`, an NCCL watchdog's sequence number, a SIGKILL
//! against memory evidence, a Go panic's goroutine, a time-limit kill against the job's own
//! "done", Snakemake's latency wait, a CrashLoopBackOff's last exit. Their triggers share the
//! entries' `RegexSet`, their outcomes are listed with the entries (ids with `/`, source
//! `analyzer`), and their findings compete in the verdict rule like matches.
//!
//! # Verdict rule
//!
//! Every entry that matched is a candidate (at its latest matching line). The highest one by
//! (1) basis: text confirmed by exit code or scheduler state > scheduler state alone > text
//! alone > exit code alone; (2) `priority`; (3) the later line; (4) on one line permanent >
//! transient > context; (5) catalog order, decides. A `context` entry never makes a verdict
//! transient or permanent: when it decides, the verdict is `unknown` with its hint. A
//! transient and a permanent candidate that tie on (1) and (2) on different lines are a
//! conflict: `unknown`, with both named. Details and reasons in `verdict.rs`, tests there and
//! in `tests.rs`.
//!
//! # Choices worth knowing
//!
//! - `CUDA out of memory` is `context`: seed 000 calls it transient only "if memory is
//!   shared", and real cases are mostly the job's own tensors (a retry on the same GPU fails
//!   again). The hint says what to check.
//! - `Input/output error` (EIO) and `Network is unreachable` are `context`, though seed 000
//!   calls them transient: an EIO is as often a failing disk, a damaged file or a mount that
//!   is broken on this node as a passing storage fault, and a compute node without a route
//!   out fails every time. Their refinements decide: EIO from the node's own system files (a
//!   sick node: retry elsewhere), a completion error on the interconnect mid-run (transient).
//!   A stale NFS handle on a file stays transient.
//! - `Connection refused` is `context`, though it is often listed with the transient network
//!   errors: nothing listened on the port, and a service that was restarting (a retry passes)
//!   reads the same as a wrong host or port or a service that is not running at all (every
//!   retry fails); the labelled corpus's real cases of this text are ambiguous by about eight
//!   to one against retry. Entries for refusals the text explains decide where they match (a
//!   service on the job's own node, a proxy, a public service's overload message).
//! - An NCCL collective timeout is `context` unless it shows progress, though seed 000 calls
//!   "NCCL timeout" transient: a hang after hundreds of completed collectives (the sequence
//!   number the watchdog prints) is a passing fault and the `nccl-watchdog` analyzer calls it
//!   transient, but a hang on the first collectives (setup that recurs, or a rank stuck in its
//!   own start-up work) and one with no sequence number at all cannot be told apart by text.
//! - `FileNotFoundError` and `No such file or directory` are `permanent`, with a hint: for a
//!   job's own inputs, a missing file stays missing. When the file is an upstream job's
//!   output and that job is being retried, the engine (which knows the dependencies, and
//!   reports how a group's upstream jobs stand) is the place to wait instead.
//! - Text that speaks of retrying or of time is not evidence by itself: "a simple retry will get
//!   you on your way" (conda), "retry with --force" (npm), "not valid yet" (a clock), "Topic
//!   not present in metadata after 60000 ms" (Kafka), "Resource temporarily unavailable" from
//!   fork (a process limit). Entries are written for what the error means; where the text cannot
//!   decide (a bare SIGKILL, a segfault, a CrashLoopBackOff without its exit, NaN), the entry is
//!   `context` and the verdict `unknown`: a wrong verdict costs more than none.
//! - A resolver saying a name does not exist (`no such host`, `Name or service not known`) is
//!   `context`: a typo'd or region-less endpoint fails forever, a broken resolver recovers;
//!   the text alone cannot tell. Names that are clearly not hosts (`https`, `$HOST`) are
//!   permanent; well-known public hosts that "do not exist" are transient.

mod analyzers;
mod ansi;
mod common_grams;
mod entry;
mod error;
mod freq;
mod grams;
mod hints;
mod hir_walk;
mod lines;
mod load;
mod need;
mod packed;
mod prefilter;
mod scan;
mod verdict;
mod word_edges;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_load;
#[cfg(test)]
mod tests_prefilter;

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

pub use ansi::strip_ansi;
pub use entry::Entry;
pub use error::CatalogError;
pub use hints::{HintMatch, Hints, ScanContext};

use load::{BUILTIN_NAME, BUILTIN_TOML, Embedded, Merger};
use scan::Matcher;

/// A loaded, checked catalog with its patterns compiled. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Catalog {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    version: String,
    entries: Vec<Entry>,
    matcher: Matcher,
}

/// The embedded catalog, loaded once per process.
static BUILTIN: LazyLock<Result<Catalog, CatalogError>> = LazyLock::new(|| Catalog::from_sources(&[]));

impl Catalog {
    /// The embedded default catalog.
    ///
    /// # Panics
    ///
    /// Never for a released build: the embedded file is checked by this crate's tests (every
    /// entry, example and counter-example). A broken edit to it panics here, in those tests,
    /// with the file, line and fix.
    pub fn builtin() -> Catalog {
        match &*BUILTIN {
            Ok(c) => c.clone(),
            Err(e) => panic!("the embedded catalog is invalid: {e}"),
        }
    }

    /// The embedded catalog, then each file of `extra` in order: a file adds entries, changes
    /// fields of an earlier entry with the same id, or removes one with `disabled = true`.
    /// Every file is checked completely (syntax, values, regexes, examples).
    pub fn load(extra: &[PathBuf]) -> Result<Catalog, CatalogError> {
        if extra.is_empty() {
            return Ok(Catalog::builtin());
        }
        let mut texts = Vec::with_capacity(extra.len());
        for file in extra {
            let text =
                std::fs::read_to_string(file).map_err(|source| CatalogError::Read { file: file.clone(), source })?;
            texts.push((file.clone(), text));
        }
        Catalog::from_sources(&texts)
    }

    /// The embedded catalog merged with catalogs given as text (file name, contents).
    pub fn from_sources(extra: &[(PathBuf, String)]) -> Result<Catalog, CatalogError> {
        let mut merger = Merger::default();
        merger.add(&PathBuf::from(BUILTIN_NAME), BUILTIN_TOML, false)?;
        // Each embedded table's pages go as soon as it is read, so the two are never resident
        // together (a start's peak memory).
        load::release_pages(Embedded::Toml);
        for (file, text) in extra {
            merger.add(file, text, true)?;
        }
        let (version, entries, matcher) = merger.finish()?;
        load::release_pages(Embedded::Needs);
        Ok(Catalog { inner: Arc::new(Inner { version, entries, matcher }) })
    }

    /// The catalog's version, e.g. `2026.11.1`, or `2026.11.1+user` when user files were
    /// merged in.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// Every entry, in catalog order, then the analyzers' outcomes (source `analyzer`: no
    /// patterns, reached only through their analyzer; see `analyzers/`).
    pub fn entries(&self) -> &[Entry] {
        &self.inner.entries
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.inner.entries.iter().find(|e| &*e.id == id)
    }

    /// What the catalog says about a stderr tail (already decoded) and its context.
    pub fn scan(&self, text: &str, ctx: &ScanContext) -> Hints {
        scan::scan(&self.inner.entries, &self.inner.matcher, text, ctx)
    }

    /// Compile the analyzers' own regexes (a fixed few, which read the text once a trigger
    /// woke them), which the first scan that wakes each would otherwise compile. For a
    /// long-running process, once at start. The entries' patterns still compile on the first
    /// line that may match them (there are hundreds; most processes need a few).
    pub fn warm_up(&self) {
        analyzers::warm_up();
    }

    /// [`Catalog::scan`] for raw bytes: invalid UTF-8 is replaced, never refused.
    pub fn scan_bytes(&self, bytes: &[u8], ctx: &ScanContext) -> Hints {
        self.scan(&String::from_utf8_lossy(bytes), ctx)
    }
}
