//! Loading: the embedded catalog, then user files in order, merged by entry id.
//!
//! A later file may add entries, change some fields of an earlier entry with the same id (the
//! fields it sets replace the earlier ones; the rest stay), or remove one with
//! `disabled = true`. After merging, every entry must be complete and every pattern must
//! compile and need some text to match. Examples and counter-examples of every entry a user
//! file added or changed are checked here, so a user's broken entry is refused before any job
//! is classified with it. The embedded catalog's examples are checked by the test suite
//! instead (all of them, on every build): checking them at each start would cost a CLI call
//! hundreds of milliseconds for nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::entry::{Entry, Origin, Patch, RawEntry, RawFile, compile_one, valid_id};
use super::error::CatalogError;
use super::scan::{BuildError, Matcher};

/// The embedded default catalog, as loaded: `catalog/default.toml` with every `examples` and
/// `counter_examples` value emptied, each entry on its own line still (written by `build.rs`:
/// a process neither keeps nor checks the embedded examples, and parsing them was about half
/// of every start's parsing and of the catalog's pages in memory). A `static`, not a `const`:
/// a constant's text may be copied into each codegen unit that uses it, and
/// [`release_pages`] must drop the very pages the parse read.
pub(crate) static BUILTIN_TOML: &str = include_str!(concat!(env!("OUT_DIR"), "/default.rules.toml"));

/// What each pattern of the embedded catalog needs, and its anchors (`need::Table`), worked
/// out by `build.rs` from the same code a load would run (`need.rs`): a start looks them up
/// instead of parsing and walking about two thousand regexes, most of a load's time. A
/// `static` for the same reason as [`BUILTIN_TOML`]'s.
pub(crate) static BUILTIN_NEEDS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/needs.bin"));

/// The embedded tables a load reads once.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Embedded {
    /// [`BUILTIN_TOML`].
    Toml,
    /// [`BUILTIN_NEEDS`].
    Needs,
}

/// Drop the pages of an embedded table from the process's memory once a load has read it:
/// every entry keeps its own copy of what it needs, so after the parse the text is read again
/// only to name a line in an error (and the needs table only by another load). Each table is
/// over half a megabyte of the executable, and reading it brings all of it in; the kernel
/// would keep those pages in the process's resident set for its whole life (about 3% of a
/// small listing's peak each). They stay mapped: a later read faults them in again from the
/// executable, which the kernel keeps unchanged while it runs. Only whole pages inside the
/// table are dropped, never a neighbour's.
pub(crate) fn release_pages(table: Embedded) {
    let bytes = match table {
        Embedded::Toml => BUILTIN_TOML.as_bytes(),
        Embedded::Needs => BUILTIN_NEEDS,
    };
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
    #[cfg(target_os = "linux")]
    if let Some((pages, size)) = whole_pages(bytes)
        && !pages.is_empty()
    {
        // SAFETY: the range is whole pages of a read-only mapping of the executable (a
        // `static` the compiler embedded) that hold nothing but that table; `MADV_DONTNEED` on
        // such pages only drops them from the resident set (the next read maps them again,
        // with the same bytes). An error leaves the pages resident.
        unsafe {
            libc::madvise((pages.start * size) as *mut libc::c_void, pages.len() * size, libc::MADV_DONTNEED);
        }
    }
}

/// The pages that lie wholly inside `text`, by number (address / page size), and the page
/// size; `None` when the system does not say its page size.
#[cfg(target_os = "linux")]
fn whole_pages(text: &[u8]) -> Option<(std::ops::Range<usize>, usize)> {
    // SAFETY: `sysconf` only reads a system setting.
    let size = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|&p| p > 0)?;
    let start = text.as_ptr() as usize;
    Some((start.div_ceil(size)..(start + text.len()) / size, size))
}

/// The embedded default catalog as written, examples and all: read only by
/// [`builtin_examples`].
static BUILTIN_FULL_TOML: &str = include_str!("../../catalog/default.toml");

/// The name errors and `Entry::source` use for the embedded catalog.
pub(crate) const BUILTIN_NAME: &str = "builtin:catalog/default.toml";

/// One entry being merged: the accumulated fields and who touched it last.
struct Slot {
    patch: Patch,
    /// The last file (and line) that touched the entry.
    origin: Origin,
    /// The file that set the current `patterns`.
    patterns_origin: Origin,
    removed: bool,
    /// A user file added or changed it: check its examples at load.
    check: bool,
    /// It comes from the embedded catalog (whose examples are not kept in memory).
    builtin: bool,
    /// A user file set its `examples` / `counter_examples`.
    sets_examples: bool,
    sets_counter_examples: bool,
}

/// Entries in first-definition order, by id.
#[derive(Default)]
pub(crate) struct Merger {
    slots: Vec<Slot>,
    index: HashMap<String, usize>,
    versions: Vec<String>,
}

/// 1-based line and column of byte offset `pos` in `text`.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let pos = pos.min(text.len());
    let before = text.get(..pos).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl Merger {
    /// Parse one catalog file's text and merge it over what came before. `check` marks the
    /// entries it touches for the example check (user files).
    pub fn add(&mut self, file: &Path, text: &str, check: bool) -> Result<(), CatalogError> {
        let (version, entries) = match parse_by_entry(text) {
            Some(parsed) => parsed,
            None => parse_whole(file, text)?,
        };
        let version = version.map(|v| v.trim().to_string()).unwrap_or_default();
        if version.is_empty() {
            return Err(CatalogError::MissingVersion { file: file.to_path_buf() });
        }
        self.versions.push(version);

        let mut seen: HashMap<String, usize> = HashMap::new();
        for (line, raw_entry) in entries {
            let id = raw_entry.id.trim().to_string();
            let origin = Origin { file: file.to_path_buf(), line, id: id.clone() };
            if !valid_id(&id) {
                return Err(CatalogError::InvalidId { file: file.to_path_buf(), line, id });
            }
            if let Some(&first_line) = seen.get(&id) {
                return Err(CatalogError::DuplicateId { file: file.to_path_buf(), line, first_line, id });
            }
            seen.insert(id.clone(), line);

            let disabled = raw_entry.disabled;
            let mut patch = raw_entry.into_patch(&origin)?;
            if !check {
                // The embedded catalog's examples are checked by the test suite, not at load:
                // they stay in the embedded text as written (see `builtin_examples`), not in
                // memory, and `BUILTIN_TOML` has none.
                patch.examples = None;
                patch.counter_examples = None;
            }
            let sets_patterns = patch.patterns.is_some();
            let (sets_examples, sets_counter_examples) = (patch.examples.is_some(), patch.counter_examples.is_some());
            match self.index.get(&id).copied() {
                Some(i) if disabled => self.slots[i].removed = true,
                None if disabled => {
                    return Err(CatalogError::UnknownDisabled { file: file.to_path_buf(), line, id });
                }
                Some(i) => {
                    let slot = &mut self.slots[i];
                    if slot.removed {
                        // Re-defining a removed entry starts it afresh.
                        slot.patch = patch;
                        slot.removed = false;
                        slot.builtin = !check;
                        slot.sets_examples = false;
                        slot.sets_counter_examples = false;
                    } else {
                        slot.patch.merge(patch);
                    }
                    if sets_patterns {
                        slot.patterns_origin = origin.clone();
                    }
                    slot.origin = origin;
                    slot.check |= check;
                    slot.sets_examples |= sets_examples;
                    slot.sets_counter_examples |= sets_counter_examples;
                }
                None => {
                    self.index.insert(id, self.slots.len());
                    self.slots.push(Slot {
                        patch,
                        patterns_origin: origin.clone(),
                        origin,
                        removed: false,
                        check,
                        builtin: !check,
                        sets_examples,
                        sets_counter_examples,
                    });
                }
            }
        }
        Ok(())
    }

    /// Complete every entry, compile the patterns into one set, and check the examples of the
    /// entries user files touched.
    pub fn finish(self) -> Result<(String, Vec<Entry>, Matcher), CatalogError> {
        let version = match self.versions.len() {
            0 => String::new(),
            1 => self.versions[0].clone(),
            _ => format!("{}+user", self.versions[0]),
        };
        let mut entries = Vec::new();
        let mut slots = Vec::new();
        for mut slot in self.slots.into_iter().filter(|s| !s.removed) {
            entries.push(std::mem::take(&mut slot.patch).finish(&slot.origin, &slot.origin.file)?);
            slots.push(slot);
        }
        // The analyzers' outcomes follow the entries (they have no patterns of their own).
        let (outcomes, first) = super::analyzers::outcome_entries();
        let first = first.into_iter().map(|f| f + entries.len()).collect();
        entries.extend(outcomes);
        // Kept for the life of the process: without the room the pushes left.
        entries.shrink_to_fit();
        let matcher = match Matcher::build(&entries, first) {
            Ok(m) => m,
            Err(error) => return Err(blame_build_error(&entries, &slots, error)),
        };
        if let Some((e, p)) = matcher.matching_empty_line().first().copied() {
            let o = &slots[e].patterns_origin;
            return Err(CatalogError::MatchesEverything {
                file: o.file.clone(),
                line: o.line,
                id: o.id.clone(),
                pattern: entries[e].patterns.get(p).cloned().unwrap_or_default(),
            });
        }
        // A user file that changed an embedded entry without giving its own examples is
        // checked against the embedded ones (read again from the embedded text: rare).
        let mut builtin: Option<Examples> = None;
        for (entry, slot) in entries.iter_mut().zip(&slots).filter(|(_, s)| s.check) {
            if slot.builtin && (!slot.sets_examples || !slot.sets_counter_examples) {
                let map = builtin.get_or_insert_with(builtin_examples);
                if let Some((examples, counter)) = map.get(&*entry.id) {
                    if !slot.sets_examples {
                        entry.examples.clone_from(examples);
                    }
                    if !slot.sets_counter_examples {
                        entry.counter_examples.clone_from(counter);
                    }
                }
            }
            check_examples(entry, &slot.origin, &slot.patterns_origin)?;
        }
        Ok((version, entries, matcher))
    }
}

/// Examples and counter-examples, by entry id.
pub(crate) type Examples = HashMap<String, (Vec<String>, Vec<String>)>;

/// The embedded catalog's examples and counter-examples, by entry id (read from the embedded
/// text: a loaded catalog does not keep them).
pub(crate) fn builtin_examples() -> Examples {
    parse_by_entry(BUILTIN_FULL_TOML)
        .or_else(|| parse_whole(Path::new(BUILTIN_NAME), BUILTIN_FULL_TOML).ok())
        .map(|(_, entries)| entries)
        .unwrap_or_default()
        .into_iter()
        .map(|(_, e)| {
            (e.id.trim().to_string(), (e.examples.unwrap_or_default(), e.counter_examples.unwrap_or_default()))
        })
        .collect()
}

/// A file's `version` and its entries, each with the line its `[[entry]]` is on.
type Parsed = (Option<String>, Vec<(usize, RawEntry)>);

/// The whole file parsed at once: the parser's error, with its line and column, if it is not
/// valid.
fn parse_whole(file: &Path, text: &str) -> Result<Parsed, CatalogError> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_col(text, s.start));
        CatalogError::Syntax { file: file.to_path_buf(), line, column, message: e.message().trim().to_string() }
    })?;
    // Where each line ends, once: counting from the top for every entry is quadratic.
    let newlines: Vec<usize> = memchr::memchr_iter(b'\n', text.as_bytes()).collect();
    let entries = raw
        .entry
        .into_iter()
        .map(|spanned| (newlines.partition_point(|&n| n < spanned.span().start) + 1, spanned.into_inner()))
        .collect();
    Ok((raw.version, entries))
}

/// The file parsed one `[[entry]]` at a time (the text before the first one, then from each
/// line that is exactly `[[entry]]` to the next), or `None` if a piece does not parse alone
/// (a multi-line string with such a line in it, or an error: the whole file is then parsed
/// at once, which says where). The parser holds a whole file's document in memory before it
/// hands over the entries: for the embedded catalog, a few hundred kilobytes of TOML, that
/// was about 2 MB at the peak of every process; one entry at a time it is a few kilobytes.
fn parse_by_entry(text: &str) -> Option<Parsed> {
    // Where each piece starts: (byte offset, 1-based line).
    let mut starts = vec![(0usize, 1usize)];
    let mut at = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if at > 0 && l.trim_end() == "[[entry]]" {
            starts.push((at, i + 1));
        }
        at += l.len();
    }
    starts.push((text.len(), 0));
    let mut version = None;
    let mut entries = Vec::new();
    for (piece, bounds) in starts.windows(2).enumerate() {
        let ((from, first_line), (to, _)) = (bounds[0], bounds[1]);
        let chunk = text.get(from..to)?;
        let raw: RawFile = toml::from_str(chunk).ok()?;
        if piece == 0 {
            version = raw.version;
        } else if raw.version.is_some() || raw.entry.len() != 1 {
            return None;
        }
        // A piece's own first entry is on its first line (for the first piece, wherever it is).
        for spanned in raw.entry {
            let within = chunk.get(..spanned.span().start).map_or(0, |b| b.matches('\n').count());
            entries.push((first_line + within, spanned.into_inner()));
        }
    }
    Some((version, entries))
}

/// The patterns could not be prepared: the pattern to blame, with the regex crate's own
/// message, or else the catalog as a whole.
fn blame_build_error(entries: &[Entry], slots: &[Slot], error: BuildError) -> CatalogError {
    if let Some((e, p)) = error.pattern
        && let (Some(entry), Some(slot)) = (entries.get(e), slots.get(e))
        && let Some(pattern) = entry.patterns.get(p)
        && let Err(err) = compile_one(pattern, &slot.patterns_origin)
    {
        return err;
    }
    for (entry, slot) in entries.iter().zip(slots) {
        for pattern in &entry.patterns {
            if let Err(e) = compile_one(pattern, &slot.patterns_origin) {
                return e;
            }
        }
    }
    CatalogError::TooLarge {
        file: slots.last().map_or_else(|| PathBuf::from(BUILTIN_NAME), |s| s.origin.file.clone()),
        error: error.message,
    }
}

/// Every example must match one of the entry's patterns; no counter-example may.
fn check_examples(entry: &Entry, origin: &Origin, patterns_origin: &Origin) -> Result<(), CatalogError> {
    let compiled = entry.patterns.iter().map(|p| compile_one(p, patterns_origin)).collect::<Result<Vec<_>, _>>()?;
    for example in &entry.examples {
        if !compiled.iter().any(|re| re.is_match(example.as_bytes())) {
            return Err(CatalogError::ExampleNotMatched {
                file: origin.file.clone(),
                line: origin.line,
                id: entry.id.to_string(),
                example: example.clone(),
            });
        }
    }
    for example in &entry.counter_examples {
        if let Some(re) = compiled.iter().find(|re| re.is_match(example.as_bytes())) {
            return Err(CatalogError::CounterExampleMatched {
                file: origin.file.clone(),
                line: origin.line,
                id: entry.id.to_string(),
                example: example.clone(),
                pattern: re.as_str().to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded text as loaded is the file as written with only its examples emptied:
    /// the same version, the same entries on the same lines, every other field the same.
    #[test]
    fn embedded_rules_are_the_catalog_without_its_examples() {
        let (full_version, full) = parse_by_entry(BUILTIN_FULL_TOML).expect("the catalog parses entry by entry");
        let (version, rules) = parse_by_entry(BUILTIN_TOML).expect("the embedded rules parse entry by entry");
        assert_eq!(version, full_version);
        assert_eq!(rules.len(), full.len());
        assert!(BUILTIN_TOML.len() < BUILTIN_FULL_TOML.len() * 2 / 3, "the examples are most of what is left out");
        assert_eq!(BUILTIN_TOML.lines().count(), BUILTIN_FULL_TOML.lines().count());
        let mut with_examples = 0;
        for ((line, rule), (full_line, mut entry)) in rules.into_iter().zip(full) {
            assert_eq!(line, full_line, "entry {} moved", entry.id);
            assert_eq!(rule.examples.as_deref(), entry.examples.as_ref().map(|_| &[][..]), "{}", entry.id);
            assert_eq!(rule.counter_examples.as_deref(), entry.counter_examples.as_ref().map(|_| &[][..]));
            with_examples += usize::from(entry.examples.as_ref().is_some_and(|e| !e.is_empty()));
            entry.examples = rule.examples.clone();
            entry.counter_examples = rule.counter_examples.clone();
            assert_eq!(format!("{rule:?}"), format!("{entry:?}"));
        }
        assert!(with_examples > 100, "the written catalog has its examples ({with_examples} entries)");
    }

    /// Building a catalog drops the embedded tables' pages (the text, the needs) from the
    /// resident set, and they read the same afterwards. Run in a child process (this test
    /// binary, this test alone) so that no other test reads them in between.
    #[cfg(target_os = "linux")]
    #[test]
    fn building_a_catalog_hands_the_embedded_tables_pages_back() {
        const CHILD: &str = "TRIAGE_TEST_RESIDENT_PAGES_CHILD";
        let name = "catalog::load::tests::building_a_catalog_hands_the_embedded_tables_pages_back";
        if std::env::var_os(CHILD).is_none() {
            let exe = std::env::current_exe().expect("the test binary's path");
            let out = std::process::Command::new(exe)
                .args(["--exact", name, "--test-threads=1", "--nocapture"])
                .env(CHILD, "1")
                .output()
                .expect("run this test in a child process");
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
            return;
        }
        let sum = |bytes: &[u8]| bytes.iter().fold(0u64, |sum, &b| sum.wrapping_add(u64::from(b)));
        let tables = [BUILTIN_TOML.as_bytes(), BUILTIN_NEEDS];
        let before = tables.map(sum);
        for table in tables {
            let (resident, pages) = resident_pages(table);
            assert!(pages > 64, "each embedded table spans {pages} whole pages");
            assert_eq!(resident, pages, "a read of the table brought every page in");
        }
        let catalog = crate::catalog::Catalog::from_sources(&[]).expect("the embedded catalog builds");
        assert!(catalog.entries().len() > 100);
        for table in tables {
            let (resident, pages) = resident_pages(table);
            assert_eq!(resident, 0, "after the build none of the table's {pages} pages is resident");
        }
        assert_eq!(tables.map(sum), before, "the tables read the same once their pages come back");
    }

    /// How many of the whole pages inside `text` are mapped in this process, and how many
    /// there are, by the present bit (63) of each page's entry in `/proc/self/pagemap`.
    #[cfg(target_os = "linux")]
    fn resident_pages(text: &[u8]) -> (usize, usize) {
        use std::io::{Read, Seek, SeekFrom};
        let (pages, _) = whole_pages(text).expect("a page size");
        let mut map = std::fs::File::open("/proc/self/pagemap").expect("open /proc/self/pagemap");
        map.seek(SeekFrom::Start(pages.start as u64 * 8)).expect("seek in pagemap");
        let mut entries = vec![0u8; pages.len() * 8];
        map.read_exact(&mut entries).expect("read pagemap");
        let present = entries
            .chunks_exact(8)
            .filter(|e| u64::from_le_bytes((*e).try_into().expect("8 bytes")) >> 63 == 1)
            .count();
        (present, pages.len())
    }
}
