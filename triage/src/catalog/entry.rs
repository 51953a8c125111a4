//! A catalog entry: its TOML form, its checked form, and the checks between them.
//!
//! A file is read into [`RawFile`] (serde, `deny_unknown_fields`, so a misspelled field is a
//! syntax error with line and column). Each raw entry becomes a [`Patch`]: every field it sets
//! is parsed and checked here, where the file and line are known, so a bad class or scheduler
//! state is blamed on the file that wrote it. Patches are merged by id (`load.rs`) and the
//! merged result must then be a complete [`Entry`].

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::error::CatalogError;
use crate::model::{EntryClass, SchedulerState, Strategy, SuggestedAction};

/// One checked catalog entry, as [`Catalog::entries`](super::Catalog::entries) lists it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Entry {
    /// Unique id, e.g. `dns-temporary-failure`.
    pub id: Arc<str>,
    /// How the entry classes what it matches; `context` never decides a verdict on its own.
    pub class: EntryClass,
    /// Short cause name, e.g. `network`, `oom`, `missing_dependency`.
    pub category: Arc<str>,
    /// Regexes, tried on each line of the (ANSI-stripped) stderr tail.
    pub patterns: Vec<String>,
    /// Exit codes that confirm the entry (or, without patterns, match on their own).
    pub exit_codes: Vec<i64>,
    /// Scheduler states that confirm the entry (or, without patterns, match on their own).
    pub scheduler_states: Vec<SchedulerState>,
    /// What the catalog suggests doing.
    pub action: SuggestedAction,
    /// The recovery strategy (seed 002) it advises.
    pub strategy: Strategy,
    /// For the agent: what it means and what to check.
    pub hint: String,
    /// Higher wins over lower, across the whole tail; default 0 (see the verdict rule).
    pub priority: i32,
    /// Lines that must match this entry. Empty for an entry of the embedded catalog that no
    /// user file changed: those are checked by the crate's tests and stay in the embedded
    /// text, not in every process's memory.
    pub examples: Vec<String>,
    /// Lines that must not match this entry (empty like `examples` for embedded entries).
    pub counter_examples: Vec<String>,
    /// The file that last defined or changed the entry (`builtin` for the embedded catalog).
    pub source: String,
}

/// A catalog file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    pub version: Option<String>,
    #[serde(default)]
    pub entry: Vec<Spanned<RawEntry>>,
}

/// One `[[entry]]` table as written. Everything but `id` is optional, because a later file may
/// change a few fields of an earlier entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEntry {
    pub id: String,
    pub class: Option<String>,
    pub category: Option<String>,
    pub patterns: Option<Vec<String>>,
    pub exit_codes: Option<Vec<i64>>,
    pub scheduler_states: Option<Vec<String>>,
    pub action: Option<String>,
    pub strategy: Option<String>,
    pub hint: Option<String>,
    pub priority: Option<i32>,
    pub examples: Option<Vec<String>>,
    pub counter_examples: Option<Vec<String>>,
    #[serde(default)]
    pub disabled: bool,
}

/// The fields one file sets on one entry, parsed and checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Patch {
    pub class: Option<EntryClass>,
    pub category: Option<String>,
    pub patterns: Option<Vec<String>>,
    pub exit_codes: Option<Vec<i64>>,
    pub scheduler_states: Option<Vec<SchedulerState>>,
    pub action: Option<SuggestedAction>,
    pub strategy: Option<Strategy>,
    pub hint: Option<String>,
    pub priority: Option<i32>,
    pub examples: Option<Vec<String>>,
    pub counter_examples: Option<Vec<String>>,
}

/// Where a piece of catalog text came from, for error messages.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    pub file: PathBuf,
    pub line: usize,
    pub id: String,
}

const CLASSES: &str = "transient, permanent, context";
const ACTIONS: &str = "retry, retry_more_memory, retry_more_time, fail, escalate";
const STRATEGIES: &str = "retry_immediate, retry_exponential, retry_with_jitter, fallback, \
    circuit_breaker, skip, abort, escalate, checkpoint_restore, manual_intervention";
const STATES: &str = "PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, TIMEOUT, BOOT_FAIL, DEADLINE, \
    CANCELLED, FAILED";

/// Parse a snake_case enumeration value through serde, so the accepted spellings are exactly
/// the model's wire names.
fn parse_enum<T: serde::de::DeserializeOwned>(value: &str) -> Option<T> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(value)).ok()
}

impl Origin {
    fn unknown(&self, field: &'static str, value: &str, valid: &str) -> CatalogError {
        CatalogError::UnknownValue {
            file: self.file.clone(),
            line: self.line,
            id: self.id.clone(),
            field,
            value: value.to_string(),
            valid: valid.to_string(),
        }
    }

    pub fn missing(&self, field: &'static str) -> CatalogError {
        let valid = match field {
            "class" => format!(" (one of: {CLASSES})"),
            "action" => format!(" (one of: {ACTIONS})"),
            "strategy" => format!(" (one of: {STRATEGIES})"),
            _ => String::new(),
        };
        CatalogError::MissingField { file: self.file.clone(), line: self.line, id: self.id.clone(), field, valid }
    }
}

/// Whether `id` is a usable entry id.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 100 && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl RawEntry {
    /// Check every field this entry sets and turn it into a [`Patch`].
    pub fn into_patch(self, origin: &Origin) -> Result<Patch, CatalogError> {
        let class = match self.class.as_deref() {
            None => None,
            Some(v) => Some(parse_enum(v).ok_or_else(|| origin.unknown("class", v, CLASSES))?),
        };
        let action = match self.action.as_deref() {
            None => None,
            Some(v) => Some(parse_enum(v).ok_or_else(|| origin.unknown("action", v, ACTIONS))?),
        };
        let strategy = match self.strategy.as_deref() {
            None => None,
            Some(v) => Some(parse_enum(v).ok_or_else(|| origin.unknown("strategy", v, STRATEGIES))?),
        };
        let scheduler_states = match self.scheduler_states {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|s| SchedulerState::from_str(s).map_err(|_| origin.unknown("scheduler state", s, STATES)))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(Patch {
            class,
            category: self.category.map(|c| c.trim().to_string()),
            patterns: self.patterns,
            exit_codes: self.exit_codes,
            scheduler_states,
            action,
            strategy,
            hint: self.hint.map(|h| h.trim().to_string()),
            priority: self.priority,
            examples: self.examples,
            counter_examples: self.counter_examples,
        })
    }
}

/// Compile one pattern alone (with the set's semantics), to blame a bad regex on the file and
/// entry that wrote it, or to check an entry's examples against its own patterns.
pub(crate) fn compile_one(pattern: &str, origin: &Origin) -> Result<regex::bytes::Regex, CatalogError> {
    super::scan::compile(pattern).map_err(|e| CatalogError::BadRegex {
        file: origin.file.clone(),
        line: origin.line,
        id: origin.id.clone(),
        pattern: pattern.to_string(),
        error: e.to_string(),
    })
}

impl Patch {
    /// Apply `later` over `self`: every field `later` sets replaces this one's.
    pub fn merge(&mut self, later: Patch) {
        fn over<T>(a: &mut Option<T>, b: Option<T>) {
            if b.is_some() {
                *a = b;
            }
        }
        over(&mut self.class, later.class);
        over(&mut self.category, later.category);
        over(&mut self.patterns, later.patterns);
        over(&mut self.exit_codes, later.exit_codes);
        over(&mut self.scheduler_states, later.scheduler_states);
        over(&mut self.action, later.action);
        over(&mut self.strategy, later.strategy);
        over(&mut self.hint, later.hint);
        over(&mut self.priority, later.priority);
        over(&mut self.examples, later.examples);
        over(&mut self.counter_examples, later.counter_examples);
    }

    /// The complete entry, or which required field is missing.
    pub fn finish(self, origin: &Origin, source: &Path) -> Result<Entry, CatalogError> {
        let patterns = self.patterns.unwrap_or_default();
        let exit_codes = self.exit_codes.unwrap_or_default();
        let scheduler_states = self.scheduler_states.unwrap_or_default();
        if patterns.is_empty() && exit_codes.is_empty() && scheduler_states.is_empty() {
            return Err(CatalogError::NoMatcher {
                file: origin.file.clone(),
                line: origin.line,
                id: origin.id.clone(),
            });
        }
        let category = self.category.filter(|c| !c.is_empty());
        let hint = self.hint.filter(|h| !h.is_empty());
        Ok(Entry {
            id: origin.id.as_str().into(),
            class: self.class.ok_or_else(|| origin.missing("class"))?,
            category: category.ok_or_else(|| origin.missing("category"))?.into(),
            patterns,
            exit_codes,
            scheduler_states,
            action: self.action.ok_or_else(|| origin.missing("action"))?,
            strategy: self.strategy.ok_or_else(|| origin.missing("strategy"))?,
            hint: hint.ok_or_else(|| origin.missing("hint"))?,
            priority: self.priority.unwrap_or(0),
            examples: self.examples.unwrap_or_default(),
            counter_examples: self.counter_examples.unwrap_or_default(),
            source: source.display().to_string(),
        })
    }
}
