//! Analyzers: catalog evidence that one regex cannot weigh.
//!
//! Some meanings are in numbers or in a combination of lines: a CUDA allocation larger than
//! the whole GPU can never succeed, one that fails with free memory to spare is
//! fragmentation; a Java heap error under a `-Xmx` of a few megabytes is a configuration,
//! under a real heap it is a memory shortfall; an NCCL watchdog that fires on the first
//! collectives is a setup problem, one that fires after hours is a hang. An analyzer is a
//! small piece of Rust beside the TOML entries, one file each, declared as one static
//! [`Analyzer`] (listed in [`ALL`]): its function `analyze` and, beside it, its
//! triggers, outcomes, regexes and examples, with the same discipline:
//!
//! - **Triggers**: regexes added to the catalog's one `RegexSet`. An analyzer runs only on a
//!   text where one of its triggers matched a line, so a scan that finds nothing for it costs
//!   nothing more than before.
//! - **Outcomes**: what it can conclude, each shown exactly like an entry (id, class,
//!   category, action, strategy, hint, priority). They are listed by
//!   [`Catalog::entries`](super::Catalog::entries) after the TOML entries (source
//!   `analyzer`), and a finding becomes a candidate of the verdict rule like an entry's
//!   match, at the line that carries the evidence (`confirmed_by` set when the exit code or
//!   scheduler state took part, which makes it specific).
//! - **Examples**: texts (with an exit code where it matters) and the outcome each must reach,
//!   or `None` for a counter-example that must reach none of the analyzer's outcomes. The
//!   tests check all of them, and that every outcome and every trigger is exercised.
//! - **Regexes**: every lazily compiled regex the analyzer reads lines with, compiled ahead by
//!   [`warm_up`] (a test checks that each module lists all the ones it declares: one left out
//!   would compile inside a listing).
//!
//! Outcome ids never clash with a user's entry: they contain `/`, which entry ids may not.

use std::sync::LazyLock;

use lean::Regex;

use super::entry::Entry;
use super::hints::ScanContext;
use crate::model::{EntryClass, Strategy, SuggestedAction};

mod allocation_size;
mod cloud_quota;
mod crashloop;
mod cuda_oom;
mod go_panic;
mod java_heap;
mod lean;
mod missing_output;
mod nccl_watchdog;
mod retry_after;
mod sigkill;
mod tensor_oom;
mod time_limit;
mod token_limit;
mod truncated_download;
mod xla_memory;

#[cfg(test)]
mod tests;

/// Every built-in analyzer, in the order their outcomes are listed.
pub(crate) static ALL: &[&Analyzer] = &[
    &cuda_oom::ANALYZER,
    &java_heap::ANALYZER,
    &nccl_watchdog::ANALYZER,
    &sigkill::ANALYZER,
    &go_panic::ANALYZER,
    &time_limit::ANALYZER,
    &missing_output::ANALYZER,
    &crashloop::ANALYZER,
    &cloud_quota::ANALYZER,
    &truncated_download::ANALYZER,
    &tensor_oom::ANALYZER,
    &allocation_size::ANALYZER,
    &retry_after::ANALYZER,
    &xla_memory::ANALYZER,
    &token_limit::ANALYZER,
];

/// A conclusion an analyzer can reach; shown like a catalog entry.
pub(crate) struct Outcome {
    pub id: &'static str,
    pub class: EntryClass,
    pub category: &'static str,
    pub action: SuggestedAction,
    pub strategy: Strategy,
    /// As an entry's (see the verdict rule).
    pub priority: i32,
    pub hint: &'static str,
}

impl Outcome {
    /// The outcome as a catalog entry (no patterns: it is reached only through its analyzer).
    pub fn entry(&self) -> Entry {
        Entry {
            id: self.id.into(),
            class: self.class,
            category: self.category.into(),
            patterns: Vec::new(),
            exit_codes: Vec::new(),
            scheduler_states: Vec::new(),
            action: self.action,
            strategy: self.strategy,
            hint: self.hint.to_string(),
            priority: self.priority,
            examples: Vec::new(),
            counter_examples: Vec::new(),
            source: "analyzer".to_string(),
        }
    }
}

/// What an analyzer sees.
pub(crate) struct Input<'a> {
    /// Every line of the ANSI-stripped text (without `\r`), in order.
    pub lines: &'a [&'a str],
    /// 0-based indices of the lines that matched one of its triggers, in order (the last
    /// [`MAX_WOKEN_LINES`] of them).
    pub woken: &'a [usize],
    /// Per line of `woken`, which of the analyzer's triggers matched it: bit `t` for
    /// `triggers[t]` (an analyzer has at most [`MAX_TRIGGERS`]).
    pub triggered: &'a [u32],
    pub ctx: &'a ScanContext,
}

impl<'a> Input<'a> {
    /// Line `i` of the text (empty past the end).
    pub fn line(&self, i: usize) -> &'a str {
        self.lines.get(i).copied().unwrap_or_default()
    }

    /// The woken lines that one of the triggers in `mask` (bit `t` for trigger `t`) matched,
    /// in order.
    pub fn woken_by(&self, mask: u32) -> impl DoubleEndedIterator<Item = usize> + '_ {
        self.woken.iter().zip(self.triggered).filter(move |(_, t)| *t & mask != 0).map(|(&i, _)| i)
    }
}

/// At most this many triggers per analyzer (one bit each in [`Input::triggered`]).
pub(crate) const MAX_TRIGGERS: usize = 32;

/// At most this many trigger lines (the latest) are passed to an analyzer.
pub(crate) const MAX_WOKEN_LINES: usize = 64;

/// What an analyzer concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// Index into the analyzer's [`Analyzer::outcomes`].
    pub outcome: usize,
    /// 0-based line that carries the evidence.
    pub line: usize,
    /// Set when the exit code or scheduler state took part (e.g. `exit code 137`).
    pub confirmed_by: Option<String>,
}

impl Finding {
    /// Outcome `id` (one of `outcomes`) on line `line`, found in the text alone.
    pub fn text(outcomes: &[Outcome], id: &str, line: usize) -> Finding {
        Finding { outcome: outcome(outcomes, id), line, confirmed_by: None }
    }
}

/// One example of an analyzer: the text, its exit code, and the outcome id it must reach
/// (`None`: a counter-example, which must reach none). Read by the tests only.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Example {
    pub text: &'static str,
    pub exit_code: Option<i64>,
    pub expect: Option<&'static str>,
}

/// One analyzer: what it declares, and its logic.
pub(crate) struct Analyzer {
    /// Regexes (catalog syntax: tried on each line) that wake the analyzer.
    pub triggers: &'static [&'static str],
    /// What it can conclude.
    pub outcomes: &'static [Outcome],
    /// Every lazily compiled regex of its own (compiled ahead by [`warm_up`]).
    pub regexes: &'static [&'static Lazy],
    /// Its conclusion, if the evidence supports one.
    pub analyze: fn(&Input<'_>) -> Option<Finding>,
    /// Examples and counter-examples (checked by the tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub examples: &'static [Example],
}

/// The outcome index of `id` in `outcomes` (for analyzers naming their outcomes).
pub(crate) fn outcome(outcomes: &[Outcome], id: &str) -> usize {
    outcomes.iter().position(|o| o.id == id).unwrap_or(usize::MAX)
}

/// A size such as `2.26 GiB`, `512m`, `38427376kb` in bytes (binary multiples; `k`, `m`,
/// `g`, `t` alone as the JVM and schedulers use them). `None` if the unit is unknown.
pub(crate) fn bytes(number: &str, unit: &str) -> Option<f64> {
    let n: f64 = number.parse().ok()?;
    let mult = match unit.to_ascii_lowercase().trim_end_matches('b').trim_end_matches('i') {
        "" => 1.0,
        "k" => 1024.0,
        "m" => 1024.0 * 1024.0,
        "g" => 1024.0 * 1024.0 * 1024.0,
        "t" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "p" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "e" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * mult)
}

/// Compile a regex written in this crate (a bad one is a bug the tests catch at once).
///
/// Classes are ASCII (`\d`, `\w`, `\s`, `\b`, `(?i)`), as in the catalog's patterns that wake
/// the analyzers: Unicode-aware classes make each regex many times larger, and the first scan
/// that wakes an analyzer pays for building it. A part that must be Unicode-aware says so with
/// `(?u:...)`. See `lean.rs` for what else is left out.
pub(crate) fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap_or_else(|e| panic!("analyzer regex {pattern:?}: {e}"))
}

/// Lazily compiled regexes of one analyzer.
pub(crate) type Lazy = LazyLock<Regex>;

/// Compile every analyzer's regexes now (see [`crate::catalog::Catalog::warm_up`]).
pub(crate) fn warm_up() {
    for re in ALL.iter().flat_map(|a| a.regexes) {
        LazyLock::force(re);
    }
}

/// The outcomes of every analyzer as entries, in [`ALL`] order, and for each analyzer the
/// index of its first outcome in that list.
pub(crate) fn outcome_entries() -> (Vec<Entry>, Vec<usize>) {
    let mut entries = Vec::new();
    let mut first = Vec::new();
    for a in ALL {
        first.push(entries.len());
        entries.extend(a.outcomes.iter().map(Outcome::entry));
    }
    (entries, first)
}
