//! Reading `sacct -D -P --format=SACCT_FIELDS -j IDS` (Slurm 22.05), the accounting record of
//! every run of a job, and the value formats Slurm's clients share (times, memory, time limits).
//!
//! Why sacct: it is the only 22.05 source that still knows a job after the controller has
//! forgotten it (`MinJobAge`), and with `-D` it keeps one row per run, so a requeued job's earlier
//! runs stay visible. What it prints, as measured on a 22.05.8 cluster:
//!
//! - A header line with the field names, then one `|`-separated line per record, no trailing
//!   delimiter (`-P`). A job row (`15`, `16_2`) is followed by its step rows (`15.batch`,
//!   `15.extern`, `15.0`); step rows leave ReqMem, Timelimit, WorkDir and User empty.
//! - `-D` prints one job row per run. A manual requeue (`scontrol requeue`/`requeuehold`)
//!   rewrites the previous run's job row to `REQUEUED`; its `.batch` row keeps the real end state
//!   (`FAILED`, `OUT_OF_MEMORY`, `CANCELLED`). Requeues Slurm makes itself (node failure,
//!   preemption in REQUEUE mode) keep `NODE_FAIL` / `PREEMPTED`. Each run has its own Submit (the
//!   previous requeue time). A rerun of one array task comes after all other tasks' rows.
//! - Array tasks show as `ARRAY_TASK` in JobID (`16_2`) and their own job id in JobIDRaw (`18`);
//!   the last task to start keeps the array's id (`16_4` has JobIDRaw `16`). A pending array not
//!   yet split shows as `16_[1-4]`. There are no ArrayJobID/ArrayTaskID fields in 22.05.
//! - State may carry words after the state (`CANCELLED by 0`); ExitCode is `code:signal`, empty
//!   on some step rows.
//! - For the first seconds after submission sacct may show a placeholder record (JobName
//!   `allocation`, ReqMem `16?`, empty Timelimit and WorkDir) until the job's start record reaches
//!   the database: [`Run::is_placeholder`] says when to ask again.
//! - Times are local wall-clock times without a zone (`2026-11-23T18:20:21`), `Unknown` or `None`
//!   when not (yet) set. sacct prints them in its own process's time zone; [`parse`] reads them in
//!   the machine's (run sacct on this machine with the same `TZ`), [`parse_in`] in a given one.
//!
//! The parser is strict where a mistake would misattribute a run (header, column count, job ids,
//! exit codes, times) and lenient where a value is only informative (ReqMem, Timelimit: an
//! unknown form reads as `None`).

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use super::ledger::ScriptOwner;

/// The `--format` list [`parse`] expects, in this order.
pub const SACCT_FIELDS: &str =
    "JobID,JobIDRaw,JobName,State,ExitCode,Submit,Start,End,NodeList,ReqMem,Timelimit,WorkDir,User";

/// The `--format` list [`owner_matches`] reads: whose job a record is.
pub const OWNER_FIELDS: &str = "JobName,WorkDir,User";

/// Whether every row of `sacct -X -n -P -o OWNER_FIELDS` (at least one) is `owner`'s job
/// ([`ScriptOwner::same_job`]).
pub fn owner_matches(text: &str, owner: &ScriptOwner) -> bool {
    let mut rows = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    rows.peek().is_some() && rows.all(|l| owner_row(l).is_some_and(|found| owner.same_job(&found)))
}

/// One row of `sacct -X -n -P -o OWNER_FIELDS`; `None` unless it has the three fields.
pub fn owner_row(line: &str) -> Option<ScriptOwner> {
    let mut f = line.split('|');
    let (name, work_dir, user) = (f.next()?, f.next()?, f.next()?);
    f.next().is_none().then(|| ScriptOwner::new(name, Some(work_dir), Some(user)))
}

/// How many columns a row of [`SACCT_FIELDS`] has.
const COLUMNS: usize = 13;

/// Why sacct's output could not be read. Each message names the input and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SacctError {
    #[error(
        "sacct printed no header line; run `sacct -D -P --format={SACCT_FIELDS} -j IDS` without `-n`/`--noheader` (with -P it prints the header even when no job matches)"
    )]
    NoHeader,

    #[error(
        "sacct's header is `{found}`, expected `{}`; run sacct with `-P --format={SACCT_FIELDS}` exactly (no `-n`, no `--delimiter`)",
        SACCT_FIELDS.replace(',', "|")
    )]
    Header { found: String },

    #[error(
        "sacct line {line} has {found} columns, expected {COLUMNS}: `{text}`; a `|` inside a job name or working directory shifts the columns (check that job with `sacct -j ID -o JobName,WorkDir`), otherwise make sure the command used `-P --format={SACCT_FIELDS}`"
    )]
    Columns { line: usize, found: usize, text: String },

    #[error("sacct line {line}: {field} `{value}` is not {expected}; the line was `{text}`; {}", field_fix(field))]
    Field { line: usize, field: &'static str, value: String, expected: &'static str, text: String },
}

/// What to do about a field sacct printed in an unexpected form.
fn field_fix(field: &str) -> String {
    if matches!(field, "Submit" | "Start" | "End") {
        "sacct prints times in the form SLURM_TIME_FORMAT asks for: run it with that variable unset or set to `standard`"
            .to_string()
    } else {
        format!("make sure the command was `sacct -D -P --format={SACCT_FIELDS} -j IDS`")
    }
}

/// One line of sacct's output: a run of a job (JobID without a step) or a step of that run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctRow {
    /// JobID as shown: `15`, `16_2`, `15.batch`, `16_2.batch`, `16_[1-4]`.
    pub job_id: String,
    /// JobID without the step: `16_2` for `16_2.batch`; rows of one job share it.
    pub key: String,
    /// JobIDRaw without the step: the job's own id (an array task's own id, `18` for `16_2`).
    pub raw_id: u64,
    /// `(array job id, task id)` when JobID names one array task (`16_2` -> `(16, 2)`); `None` for
    /// plain jobs and for a pending array's range (`16_[1-4]`).
    pub array: Option<(u64, u32)>,
    /// The step after the dot: `batch`, `extern`, `0`; `None` on job rows.
    pub step: Option<String>,
    /// JobName (`batch` on `.batch` rows).
    pub name: String,
    /// The state word: `CANCELLED` of `CANCELLED by 0`.
    pub state: String,
    /// What follows the state word: `by 0` of `CANCELLED by 0`.
    pub state_detail: Option<String>,
    /// The exit code of `code:signal` (0 when sacct printed nothing).
    pub exit_code: i32,
    /// The signal of `code:signal` (0 when sacct printed nothing).
    pub signal: i32,
    /// Submit time (for a rerun: the time of the requeue that started it).
    pub submit: Option<Timestamp>,
    /// Start time; `None` while pending.
    pub start: Option<Timestamp>,
    /// End time; `None` while running.
    pub end: Option<Timestamp>,
    /// NodeList; `None` for `None assigned` (never ran) and empty.
    pub node_list: Option<String>,
    /// ReqMem in bytes (`100M`, `2G`, `4000Mn`, `1.50G`); `None` when empty or unknown (`16?`).
    pub req_mem_bytes: Option<u64>,
    /// Timelimit in seconds; `None` for `UNLIMITED`, `Partition_Limit`, empty or unknown forms.
    pub timelimit_secs: Option<u64>,
    /// WorkDir; `None` when empty (step rows, placeholder records).
    pub work_dir: Option<String>,
    /// User name; `None` when empty (step rows).
    pub user: Option<String>,
}

/// The first script of `sacct --batch-script -j IDS`, which prints, for each job, a header
/// (`Batch Script for 16_2`, a line of dashes) and then the script: a 10,000-task array asked
/// by its id prints its script 10,000 times. Text without a header is returned whole (a script
/// kept by triage); with one, what lies between the first header and the next.
pub fn first_batch_script(text: &str) -> String {
    let header = |l: &str| l.starts_with("Batch Script for ");
    if !text.lines().any(header) {
        return text.to_string();
    }
    let mut lines = text.lines().peekable();
    if !lines.peek().is_some_and(|l| header(l)) {
        // A script kept by an earlier version of triage, with every task's after it.
        let mut out = String::new();
        for l in text.lines().take_while(|l| !header(l)) {
            out.push_str(l);
            out.push('\n');
        }
        return out;
    }
    lines.next();
    if lines.peek().is_some_and(|l| !l.is_empty() && l.chars().all(|c| c == '-')) {
        lines.next();
    }
    let mut out = String::new();
    for l in lines.take_while(|l| !header(l)) {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Parses sacct's output (see the module documentation), reading times in the machine's time
/// zone.
pub fn parse(text: &str) -> Result<Vec<SacctRow>, SacctError> {
    parse_in(text, &TimeZone::system())
}

/// [`parse`] with the time zone sacct printed its times in.
pub fn parse_in(text: &str, tz: &TimeZone) -> Result<Vec<SacctRow>, SacctError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let header = loop {
        match lines.next() {
            None => return Err(SacctError::NoHeader),
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((_, l)) => break l,
        }
    };
    if !header.trim_end().split('|').eq(SACCT_FIELDS.split(',')) {
        return Err(SacctError::Header { found: header.to_string() });
    }
    let mut rows = Vec::new();
    for (line, text) in lines {
        if text.trim().is_empty() {
            continue;
        }
        rows.push(parse_row(line, text, tz)?);
    }
    Ok(rows)
}

fn parse_row(line: usize, text: &str, tz: &TimeZone) -> Result<SacctRow, SacctError> {
    let cols: Vec<&str> = text.split('|').collect();
    let [job_id, raw, name, state, exit, submit, start, end, nodes, req_mem, timelimit, work_dir, user] = cols[..]
    else {
        return Err(SacctError::Columns { line, found: cols.len(), text: text.to_string() });
    };
    let bad = |field: &'static str, value: &str, expected: &'static str| SacctError::Field {
        line,
        field,
        value: value.to_string(),
        expected,
        text: text.to_string(),
    };

    let (key, step) = match job_id.split_once('.') {
        Some((k, s)) => (k, Some(s.to_string())),
        None => (job_id, None),
    };
    if key.is_empty() {
        return Err(bad("JobID", job_id, "a job id like `15`, `16_2` or `15.batch`"));
    }
    let raw_job = raw.split_once('.').map_or(raw, |(j, _)| j);
    let raw_id = raw_job.parse::<u64>().map_err(|_| bad("JobIDRaw", raw, "a job id like `18` or `18.batch`"))?;
    let array = key.split_once('_').and_then(|(a, t)| Some((a.parse::<u64>().ok()?, t.parse::<u32>().ok()?)));

    let (state, state_detail) = match state.trim().split_once(' ') {
        Some((s, d)) => (s.to_string(), Some(d.trim().to_string()).filter(|d| !d.is_empty())),
        None => (state.trim().to_string(), None),
    };
    let (exit_code, signal) =
        exit_pair(exit).ok_or_else(|| bad("ExitCode", exit, "`code:signal` like `1:0` or `0:125`"))?;
    let time = |field: &'static str, value: &str| match local_time(value, tz) {
        Some(t) => Ok(Some(t)),
        None if is_unset_time(value) => Ok(None),
        None => Err(bad(field, value, "a time like 2026-11-23T18:20:21, `Unknown` or `None`")),
    };

    Ok(SacctRow {
        job_id: job_id.to_string(),
        key: key.to_string(),
        raw_id,
        array,
        step,
        name: name.to_string(),
        state,
        state_detail,
        exit_code,
        signal,
        submit: time("Submit", submit)?,
        start: time("Start", start)?,
        end: time("End", end)?,
        node_list: non_empty(nodes).filter(|n| n != "None assigned"),
        req_mem_bytes: memory_bytes(req_mem),
        timelimit_secs: duration_secs(timelimit),
        work_dir: non_empty(work_dir),
        user: non_empty(user),
    })
}

/// A failed run for tests: job `job_id` (raw id `raw_id`), named `name`, in `/w`, submitted
/// `submit` seconds after a fixed instant, started 1 s and ended 2 s later.
#[cfg(test)]
pub(super) fn test_row(job_id: &str, raw_id: u64, name: &str, submit: i64) -> SacctRow {
    let t = |s: i64| jiff::Timestamp::from_second(1_800_000_000 + s).ok();
    SacctRow {
        job_id: job_id.into(),
        key: job_id.into(),
        raw_id,
        array: None,
        step: None,
        name: name.into(),
        state: "FAILED".into(),
        state_detail: None,
        exit_code: 1,
        signal: 0,
        submit: t(submit),
        start: t(submit + 1),
        end: t(submit + 2),
        node_list: None,
        req_mem_bytes: None,
        timelimit_secs: None,
        work_dir: Some("/w".into()),
        user: None,
    }
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// `code:signal` (`1:0`, `0:125`) as a pair; empty reads as `(0, 0)`.
pub(super) fn exit_pair(text: &str) -> Option<(i32, i32)> {
    let text = text.trim();
    if text.is_empty() {
        return Some((0, 0));
    }
    let (code, signal) = text.split_once(':')?;
    Some((code.parse().ok()?, signal.parse().ok()?))
}

fn is_unset_time(text: &str) -> bool {
    matches!(text.trim(), "" | "Unknown" | "None" | "N/A")
}

/// A Slurm time as its clients print it (`2026-11-23T18:20:21`, local wall-clock time without a
/// zone) read in `tz`; `None` for `Unknown`, `None`, `N/A`, empty and anything else.
pub fn local_time(text: &str, tz: &TimeZone) -> Option<Timestamp> {
    let text = text.trim();
    if is_unset_time(text) {
        return None;
    }
    let dt: DateTime = text.parse().ok()?;
    // A time in a daylight-saving fold is ambiguous; Slurm cannot tell either, take the earlier.
    tz.to_ambiguous_timestamp(dt).compatible().ok()
}

/// A Slurm memory amount in bytes: a number with an optional binary unit K, M (the default), G,
/// T or P, optionally followed by `n` (per node) or `c` (per CPU), which is ignored: `100M`,
/// `4000Mn`, `1.50G`, `0`. `None` for empty text and anything else, such as `16?` (the
/// placeholder record's unknown amount).
pub fn memory_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let text = text.strip_suffix(['n', 'c']).unwrap_or(text);
    let (amount, shift) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 10),
        b'M' | b'm' => (&text[..text.len() - 1], 20),
        b'G' | b'g' => (&text[..text.len() - 1], 30),
        b'T' | b't' => (&text[..text.len() - 1], 40),
        b'P' | b'p' => (&text[..text.len() - 1], 50),
        b'0'..=b'9' => (text, 20),
        _ => return None,
    };
    let (whole, frac) = amount.split_once('.').unwrap_or((amount, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let unit = 1u64 << shift;
    let whole_bytes = whole.parse::<u64>().ok()?.checked_mul(unit)?;
    if frac.is_empty() {
        return Some(whole_bytes);
    }
    let frac_bytes = (format!("0.{frac}").parse::<f64>().ok()? * unit as f64).round() as u64;
    whole_bytes.checked_add(frac_bytes)
}

/// A Slurm time limit in seconds, in any of the forms Slurm accepts and prints: `MM`, `MM:SS`,
/// `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS` (`365-00:00:00`, `00:10:00`, `10:00` = ten
/// minutes, `1-00:00`). `None` for `UNLIMITED`, `INFINITE`, `Partition_Limit`, `N/A`, empty and
/// anything else.
pub fn duration_secs(text: &str) -> Option<u64> {
    let text = text.trim();
    let (days, rest) = match text.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, text),
    };
    let parts = rest.split(':').map(number).collect::<Option<Vec<u64>>>()?;
    let (d, h, m, s) = match (days, parts.as_slice()) {
        (None, &[m]) => (0, 0, m, 0),
        (None, &[m, s]) => (0, 0, m, s),
        (days, &[h, m, s]) => (days.unwrap_or(0), h, m, s),
        (Some(d), &[h]) => (d, h, 0, 0),
        (Some(d), &[h, m]) => (d, h, m, 0),
        _ => return None,
    };
    d.checked_mul(86_400)?.checked_add(h.checked_mul(3_600)?)?.checked_add(m.checked_mul(60)?)?.checked_add(s)
}

fn number(text: &str) -> Option<u64> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

/// One run of a job: its job row and the step rows that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The job row (JobID without a step).
    pub job: SacctRow,
    /// Its step rows (`.batch`, `.extern`, `.0`...), in sacct's order.
    pub steps: Vec<SacctRow>,
}

/// Groups rows into runs, in sacct's order: each job row begins a run, and a step row joins the
/// most recent run with the same key (sacct prints a run's steps right after its job row; a rerun
/// of an array task comes after the other tasks). A step row with no run before it (which sacct
/// does not print) is dropped.
pub fn runs(rows: Vec<SacctRow>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for row in rows {
        if row.step.is_none() {
            runs.push(Run { job: row, steps: Vec::new() });
        } else if let Some(run) = runs.iter_mut().rev().find(|r| r.job.key == row.key) {
            run.steps.push(row);
        }
    }
    runs
}

impl Run {
    /// The `.batch` step row, if sacct has one for this run.
    pub fn batch(&self) -> Option<&SacctRow> {
        self.steps.iter().find(|s| s.step.as_deref() == Some("batch"))
    }

    /// Whether this is the placeholder record sacct shows for the first seconds after submission
    /// (before the job's start record reaches the database): WorkDir empty, with JobName
    /// `allocation` or ReqMem unknown (`16?`). Ask again a little later. (A job the user named
    /// `allocation` is not mistaken for one: real records always have a WorkDir.)
    pub fn is_placeholder(&self) -> bool {
        self.job.work_dir.is_none() && (self.job.name == "allocation" || self.job.req_mem_bytes.is_none())
    }

    /// Whether the job row says a manual requeue ended this run (`REQUEUED`).
    pub fn was_requeued(&self) -> bool {
        self.job.state == "REQUEUED"
    }

    /// How the run really ended: the job row's state, except after a manual requeue, which
    /// rewrites the job row to `REQUEUED`: then the `.batch` step's state (`FAILED`,
    /// `OUT_OF_MEMORY`, `CANCELLED`...), or `REQUEUED` when there is no `.batch` row. Note that a
    /// preempted run requeued by hand reads `CANCELLED` here (its `.batch` step was cancelled).
    pub fn outcome_state(&self) -> String {
        self.outcome_row().state.clone()
    }

    /// `(exit code, signal)` of the row [`Run::outcome_state`] comes from.
    pub fn exit(&self) -> (i32, i32) {
        let row = self.outcome_row();
        (row.exit_code, row.signal)
    }

    fn outcome_row(&self) -> &SacctRow {
        match self.batch() {
            Some(batch) if self.was_requeued() => batch,
            _ => &self.job,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_used_only_for_its_own_job() {
        let owner = ScriptOwner { name: "tri-oom".into(), work_dir: Some("/w".into()), user: Some("ana".into()) };
        assert!(owner_matches("tri-oom|/w|ana\n", &owner));
        assert!(!owner_matches("", &owner), "no record: nothing to check against");
        assert!(!owner_matches("other|/w|ana\n", &owner), "the id now names another job");
        assert!(!owner_matches("tri-oom|/elsewhere|ana\n", &owner));
        assert!(!owner_matches("tri-oom|/w|bob\n", &owner));
        assert!(!owner_matches("tri-oom|/w|ana\nother|/w|ana\n", &owner));
        assert!(!owner_matches("tri-oom|/w\n", &owner), "a row without the three fields");
        assert!(!owner_matches("tri-oom|/w|ana|x\n", &owner));
        // An owner whose user is unknown is matched by name and directory; an empty directory
        // is an unknown one.
        let anyone = ScriptOwner::new("tri-oom", Some(""), None);
        assert_eq!(anyone.work_dir, None);
        assert!(owner_matches("tri-oom||bob\n", &anyone));
        assert!(!owner_matches("tri-oom|/w|bob\n", &anyone));
    }

    #[test]
    fn batch_scripts_of_an_array_come_once() {
        let dashes = "-".repeat(80);
        let script = "#!/bin/bash\n#SBATCH --job-name=x\necho $SLURM_ARRAY_TASK_ID\n";
        let all: String = (0..3).map(|t| format!("Batch Script for 16_{t}\n{dashes}\n{script}")).collect();
        assert_eq!(first_batch_script(&all), script);
        assert_eq!(first_batch_script(&format!("Batch Script for 15\n{dashes}\n{script}")), script);
        // A kept script comes back as it is; one kept with every task's after it, cut.
        assert_eq!(first_batch_script("#!/bin/sh\r\necho hi\r\n"), "#!/bin/sh\r\necho hi\r\n");
        assert_eq!(
            first_batch_script(&format!("{script}{}", &all[all.find("Batch Script for 16_1").unwrap()..])),
            script
        );
    }

    /// The 12-field list the captures below were taken with (`$F`): SACCT_FIELDS without User.
    const F12_HEADER: &str = "JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir";

    /// Adds the User column to a capture taken without it, the way sacct prints it (the user on
    /// job rows, empty on step rows; compare the 13-column captures of jobs 28 below).
    fn with_user(capture: &str, user: &str) -> String {
        capture
            .lines()
            .map(|l| {
                if l == F12_HEADER {
                    format!("{l}|User")
                } else if l.split('|').next().is_some_and(|id| id.contains('.')) {
                    format!("{l}|")
                } else {
                    format!("{l}|{user}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn runs_of(capture: &str) -> Vec<Run> {
        runs(parse_in(&with_user(capture, "root"), &TimeZone::UTC).expect("parses"))
    }

    fn utc(text: &str) -> Timestamp {
        local_time(text, &TimeZone::UTC).expect("a time")
    }

    fn states(runs: &[Run]) -> Vec<(String, String)> {
        runs.iter().map(|r| (r.job.job_id.clone(), r.outcome_state())).collect()
    }

    const FAILED_EXIT_1: &str = "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
20|20|depx|FAILED|1:0|2026-11-23T18:21:15|2026-11-23T18:21:15|2026-11-23T18:21:18|localhost|100M|UNLIMITED|/tmp/sj
20.batch|20.batch|batch|FAILED|1:0|2026-11-23T18:21:15|2026-11-23T18:21:15|2026-11-23T18:21:18|localhost|||
";

    #[test]
    fn exit_1_job_and_batch_step() {
        let rows = parse_in(&with_user(FAILED_EXIT_1, "root"), &TimeZone::UTC).expect("parses");
        assert_eq!(rows.len(), 2);
        let job = &rows[0];
        assert_eq!(job.job_id, "20");
        assert_eq!(job.key, "20");
        assert_eq!(job.raw_id, 20);
        assert_eq!(job.array, None);
        assert_eq!(job.step, None);
        assert_eq!(job.name, "depx");
        assert_eq!((job.state.as_str(), job.state_detail.as_deref()), ("FAILED", None));
        assert_eq!((job.exit_code, job.signal), (1, 0));
        assert_eq!(job.submit, Some(utc("2026-11-23T18:21:15")));
        assert_eq!(job.end, Some(utc("2026-11-23T18:21:18")));
        assert_eq!(job.node_list.as_deref(), Some("localhost"));
        assert_eq!(job.req_mem_bytes, Some(100 << 20));
        assert_eq!(job.timelimit_secs, None);
        assert_eq!(job.work_dir.as_deref(), Some("/tmp/sj"));
        assert_eq!(job.user.as_deref(), Some("root"));
        let batch = &rows[1];
        assert_eq!((batch.key.as_str(), batch.raw_id, batch.step.as_deref()), ("20", 20, Some("batch")));
        assert_eq!(
            (batch.req_mem_bytes, batch.timelimit_secs, &batch.work_dir, &batch.user),
            (None, None, &None, &None)
        );

        let runs = runs(rows);
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].steps.len(), 1);
        assert!(!runs[0].is_placeholder());
        assert_eq!((runs[0].outcome_state().as_str(), runs[0].exit()), ("FAILED", (1, 0)));
    }

    #[test]
    fn out_of_memory() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
3|3|oom|OUT_OF_MEMORY|0:125|2026-11-23T18:11:49|2026-11-23T18:11:49|2026-11-23T18:11:49|localhost|50M|365-00:00:00|/tmp/sj
3.batch|3.batch|batch|OUT_OF_MEMORY|0:125|2026-11-23T18:11:49|2026-11-23T18:11:49|2026-11-23T18:11:49|localhost|||
",
        );
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].outcome_state().as_str(), runs[0].exit()), ("OUT_OF_MEMORY", (0, 125)));
        assert_eq!(runs[0].job.req_mem_bytes, Some(50 << 20));
        assert_eq!(runs[0].job.timelimit_secs, Some(365 * 86_400));
    }

    #[test]
    fn timeout() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
4|4|tmo|TIMEOUT|0:0|2026-11-23T18:11:49|2026-11-23T18:11:49|2026-11-23T18:12:58|localhost|100M|00:01:00|/tmp/sj
4.batch|4.batch|batch|TIMEOUT|0:0|2026-11-23T18:11:49|2026-11-23T18:11:49|2026-11-23T18:12:58|localhost|||
",
        );
        assert_eq!((runs[0].outcome_state().as_str(), runs[0].exit()), ("TIMEOUT", (0, 0)));
        assert_eq!(runs[0].job.timelimit_secs, Some(60));
        let (start, end) = (runs[0].job.start.expect("start"), runs[0].job.end.expect("end"));
        assert_eq!(end.duration_since(start).as_secs(), 69);
    }

    #[test]
    fn node_fail_then_slurm_requeue_keeps_node_fail() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
8|8|nfrq|NODE_FAIL|0:0|2026-11-23T18:13:01|2026-11-23T18:13:02|2026-11-23T18:13:04|localhost|100M|UNLIMITED|/tmp/sj
8.batch|8.batch|batch|CANCELLED||2026-11-23T18:13:02|2026-11-23T18:13:02|2026-11-23T18:13:04|localhost|||
8|8|nfrq|RUNNING|0:0|2026-11-23T18:13:04|2026-11-23T18:13:16|Unknown|localhost|100M|UNLIMITED|/tmp/sj
8.batch|8.batch|batch|RUNNING|0:0|2026-11-23T18:13:16|2026-11-23T18:13:16|Unknown|localhost|||
",
        );
        assert_eq!(states(&runs), [("8".into(), "NODE_FAIL".into()), ("8".into(), "RUNNING".into())]);
        assert_eq!((runs[0].steps[0].exit_code, runs[0].steps[0].signal), (0, 0), "empty ExitCode");
        assert_eq!(runs[1].job.end, None, "End=Unknown while running");
        assert_eq!(runs[1].job.submit, runs[0].job.end, "the rerun's Submit is the requeue time");
        assert!(runs.iter().all(|r| r.steps.len() == 1));
    }

    #[test]
    fn preempted_in_requeue_mode_then_rerun() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
9|9|low|PREEMPTED|0:0|2026-11-23T18:13:27|2026-11-23T18:13:28|2026-11-23T18:13:31|localhost|200M|365-00:00:00|/tmp/sj
9.batch|9.batch|batch|CANCELLED|0:15|2026-11-23T18:13:28|2026-11-23T18:13:28|2026-11-23T18:13:31|localhost|||
9|9|low|RUNNING|0:0|2026-11-23T18:13:31|2026-11-23T18:14:08|Unknown|localhost|200M|365-00:00:00|/tmp/sj
9.batch|9.batch|batch|RUNNING|0:0|2026-11-23T18:14:08|2026-11-23T18:14:08|Unknown|localhost|||
",
        );
        assert_eq!(states(&runs), [("9".into(), "PREEMPTED".into()), ("9".into(), "RUNNING".into())]);
        assert_eq!(runs[0].exit(), (0, 0), "the job row's exit, not the batch step's 0:15");
    }

    #[test]
    fn preempted_then_requeued_by_hand_reads_the_batch_step() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
13|13|lowc|REQUEUED|0:15|2026-11-23T18:19:53|2026-11-23T18:19:53|2026-11-23T18:20:03|localhost|200M|365-00:00:00|/tmp/sj
13.batch|13.batch|batch|CANCELLED|0:15|2026-11-23T18:19:53|2026-11-23T18:19:53|2026-11-23T18:19:58|localhost|||
13|13|lowc|RUNNING|0:0|2026-11-23T18:20:03|2026-11-23T18:20:15|Unknown|localhost|200M|UNLIMITED|/tmp/sj
13.batch|13.batch|batch|RUNNING|0:0|2026-11-23T18:20:15|2026-11-23T18:20:15|Unknown|localhost|||
",
        );
        assert!(runs[0].was_requeued());
        assert_eq!((runs[0].outcome_state().as_str(), runs[0].exit()), ("CANCELLED", (0, 15)));
        assert_eq!(runs[1].outcome_state(), "RUNNING");
        assert_eq!(runs[0].job.timelimit_secs, Some(365 * 86_400));
        assert_eq!(runs[1].job.timelimit_secs, None);
    }

    #[test]
    fn cancelled_by_uid() {
        // Job 8's second run after `scancel 8`: State and ExitCode as sacct printed them
        // (`8|nfrq|CANCELLED by 0|0:0|...`, `8.batch|batch|CANCELLED|0:15|...`), the other
        // columns from the same run's rows while it ran; its End is assumed.
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
8|8|nfrq|NODE_FAIL|0:0|2026-11-23T18:13:01|2026-11-23T18:13:02|2026-11-23T18:13:04|localhost|100M|UNLIMITED|/tmp/sj
8.batch|8.batch|batch|CANCELLED||2026-11-23T18:13:02|2026-11-23T18:13:02|2026-11-23T18:13:04|localhost|||
8|8|nfrq|CANCELLED by 0|0:0|2026-11-23T18:13:04|2026-11-23T18:13:16|2026-11-23T18:13:22|localhost|100M|UNLIMITED|/tmp/sj
8.batch|8.batch|batch|CANCELLED|0:15|2026-11-23T18:13:16|2026-11-23T18:13:16|2026-11-23T18:13:22|localhost|||
",
        );
        let last = &runs[1];
        assert_eq!((last.job.state.as_str(), last.job.state_detail.as_deref()), ("CANCELLED", Some("by 0")));
        assert_eq!((last.outcome_state().as_str(), last.exit()), ("CANCELLED", (0, 0)));
        assert_eq!(last.batch().map(|b| (b.exit_code, b.signal)), Some((0, 15)));
    }

    #[test]
    fn pending_cancelled_never_ran() {
        // Job 33_1's pending rerun row, verbatim, and job 6 (`CANCELLED by 0` while pending),
        // assembled from its `6|canc|CANCELLED by 0|0:0|0:0|None|None assigned|00:00:00` row and
        // the times `scontrol show job 6` gave.
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
33_1|34|arr|PENDING|0:0|2026-11-23T18:24:31|Unknown|Unknown|None assigned|100M|Partition_Limit|/tmp/sj
6|6|canc|CANCELLED by 0|0:0|2026-11-23T18:11:59|None|2026-11-23T18:12:02|None assigned|100M|Partition_Limit|/tmp/sj
",
        );
        for run in &runs {
            assert_eq!((run.job.start, run.job.node_list.as_deref(), run.job.timelimit_secs), (None, None, None));
            assert!(run.steps.is_empty());
            assert!(!run.is_placeholder());
        }
        assert_eq!(runs[0].job.array, Some((33, 1)));
        assert_eq!(runs[1].outcome_state(), "CANCELLED");
    }

    #[test]
    fn array_tasks_and_a_rerun_after_the_others() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
16_1|17|arr|COMPLETED|0:0|2026-11-23T18:20:42|2026-11-23T18:20:42|2026-11-23T18:20:42|localhost|100M|365-00:00:00|/tmp/sj
16_1.batch|17.batch|batch|COMPLETED|0:0|2026-11-23T18:20:42|2026-11-23T18:20:42|2026-11-23T18:20:42|localhost|||
16_2|18|arr|REQUEUED|1:0|2026-11-23T18:20:42|2026-11-23T18:20:42|2026-11-23T18:20:55|localhost|100M|365-00:00:00|/tmp/sj
16_2.batch|18.batch|batch|FAILED|1:0|2026-11-23T18:20:42|2026-11-23T18:20:42|2026-11-23T18:20:42|localhost|||
16_3|19|arr|COMPLETED|0:0|2026-11-23T18:20:42|2026-11-23T18:20:43|2026-11-23T18:20:43|localhost|100M|UNLIMITED|/tmp/sj
16_3.batch|19.batch|batch|COMPLETED|0:0|2026-11-23T18:20:43|2026-11-23T18:20:43|2026-11-23T18:20:43|localhost|||
16_4|16|arr|FAILED|1:0|2026-11-23T18:20:42|2026-11-23T18:20:43|2026-11-23T18:20:44|localhost|100M|UNLIMITED|/tmp/sj
16_4.batch|16.batch|batch|FAILED|1:0|2026-11-23T18:20:43|2026-11-23T18:20:43|2026-11-23T18:20:44|localhost|||
16_2|18|arr|FAILED|1:0|2026-11-23T18:20:55|2026-11-23T18:21:07|2026-11-23T18:21:08|localhost|200M|UNLIMITED|/tmp/sj
16_2.batch|18.batch|batch|FAILED|1:0|2026-11-23T18:21:07|2026-11-23T18:21:07|2026-11-23T18:21:08|localhost|||
",
        );
        assert_eq!(
            runs.iter().map(|r| (r.job.key.as_str(), r.job.raw_id, r.job.array)).collect::<Vec<_>>(),
            [
                ("16_1", 17, Some((16, 1))),
                ("16_2", 18, Some((16, 2))),
                ("16_3", 19, Some((16, 3))),
                ("16_4", 16, Some((16, 4))),
                ("16_2", 18, Some((16, 2))),
            ]
        );
        assert!(runs.iter().all(|r| r.steps.len() == 1 && r.steps[0].key == r.job.key));
        assert_eq!(runs[1].outcome_state(), "FAILED", "the REQUEUED row's batch step");
        assert_eq!(runs[1].steps[0].end, Some(utc("2026-11-23T18:20:42")), "first run's own batch step");
        assert_eq!(runs[4].steps[0].end, Some(utc("2026-11-23T18:21:08")), "the rerun's batch step");
        assert_eq!((runs[1].job.req_mem_bytes, runs[4].job.req_mem_bytes), (Some(100 << 20), Some(200 << 20)));
        assert_ne!(runs[1].job.submit, runs[4].job.submit);
    }

    #[test]
    fn requeue_hold_release_three_runs() {
        // The capture after the second run, updated with what `sacct -D -P -j 15
        // --format=JobID,State,Submit` printed after a third run: job rows REQUEUED, REQUEUED,
        // FAILED submitted 18:20:21, 18:20:24, 18:21:12, the third `.batch` at 18:21:23. The
        // second run's End (= the requeue time) and the third run's End are assumed.
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
15|15|pyfail|REQUEUED|1:0|2026-11-23T18:20:21|2026-11-23T18:20:21|2026-11-23T18:20:24|localhost|100M|UNLIMITED|/tmp/sj
15.batch|15.batch|batch|FAILED|1:0|2026-11-23T18:20:21|2026-11-23T18:20:21|2026-11-23T18:20:22|localhost|||
15|15|pyfail|REQUEUED|1:0|2026-11-23T18:20:24|2026-11-23T18:20:35|2026-11-23T18:21:12|localhost|300M|00:10:00|/tmp/sj
15.batch|15.batch|batch|FAILED|1:0|2026-11-23T18:20:35|2026-11-23T18:20:35|2026-11-23T18:20:36|localhost|||
15|15|pyfail|FAILED|1:0|2026-11-23T18:21:12|2026-11-23T18:21:23|2026-11-23T18:21:24|localhost|300M|00:10:00|/tmp/sj
15.batch|15.batch|batch|FAILED|1:0|2026-11-23T18:21:23|2026-11-23T18:21:23|2026-11-23T18:21:24|localhost|||
",
        );
        assert_eq!(runs.len(), 3);
        assert_eq!(runs.iter().map(|r| r.job.state.as_str()).collect::<Vec<_>>(), ["REQUEUED", "REQUEUED", "FAILED"]);
        assert!(runs.iter().all(|r| r.outcome_state() == "FAILED" && r.exit() == (1, 0)));
        let submits: Vec<_> = runs.iter().map(|r| r.job.submit).collect();
        assert_eq!(
            submits,
            [Some(utc("2026-11-23T18:20:21")), Some(utc("2026-11-23T18:20:24")), Some(utc("2026-11-23T18:21:12"))]
        );
        assert_eq!(runs[1].job.timelimit_secs, Some(600));
        assert_eq!(runs[1].job.req_mem_bytes, Some(300 << 20));
    }

    #[test]
    fn whole_array_requeued_and_rerun() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
32|32|oom|REQUEUED|0:125|2026-11-23T18:24:24|2026-11-23T18:24:24|2026-11-23T18:24:30|localhost|50M|365-00:00:00|/tmp/sj
32.batch|32.batch|batch|OUT_OF_MEMORY|0:125|2026-11-23T18:24:24|2026-11-23T18:24:24|2026-11-23T18:24:25|localhost|||
33_1|34|arr|REQUEUED|0:0|2026-11-23T18:24:24|2026-11-23T18:24:24|2026-11-23T18:24:31|localhost|100M|365-00:00:00|/tmp/sj
33_1.batch|34.batch|batch|COMPLETED|0:0|2026-11-23T18:24:24|2026-11-23T18:24:24|2026-11-23T18:24:24|localhost|||
33_2|35|arr|REQUEUED|1:0|2026-11-23T18:24:24|2026-11-23T18:24:25|2026-11-23T18:24:31|localhost|100M|UNLIMITED|/tmp/sj
33_2.batch|35.batch|batch|FAILED|1:0|2026-11-23T18:24:25|2026-11-23T18:24:25|2026-11-23T18:24:25|localhost|||
33_3|36|arr|REQUEUED|0:0|2026-11-23T18:24:24|2026-11-23T18:24:26|2026-11-23T18:24:31|localhost|100M|UNLIMITED|/tmp/sj
33_3.batch|36.batch|batch|COMPLETED|0:0|2026-11-23T18:24:26|2026-11-23T18:24:26|2026-11-23T18:24:26|localhost|||
33_4|33|arr|REQUEUED|1:0|2026-11-23T18:24:24|2026-11-23T18:24:26|2026-11-23T18:24:31|localhost|100M|UNLIMITED|/tmp/sj
33_4.batch|33.batch|batch|FAILED|1:0|2026-11-23T18:24:26|2026-11-23T18:24:26|2026-11-23T18:24:26|localhost|||
32|32|oom|COMPLETED|0:0|2026-11-23T18:24:30|2026-11-23T18:24:41|2026-11-23T18:24:47|localhost|600M|UNLIMITED|/tmp/sj
32.batch|32.batch|batch|COMPLETED|0:0|2026-11-23T18:24:41|2026-11-23T18:24:41|2026-11-23T18:24:47|localhost|||
33_1|34|arr|PENDING|0:0|2026-11-23T18:24:31|Unknown|Unknown|None assigned|100M|Partition_Limit|/tmp/sj
33_2|35|arr|FAILED|1:0|2026-11-23T18:24:31|2026-11-23T18:24:45|2026-11-23T18:24:45|localhost|100M|365-00:00:00|/tmp/sj
33_2.batch|35.batch|batch|FAILED|1:0|2026-11-23T18:24:45|2026-11-23T18:24:45|2026-11-23T18:24:45|localhost|||
33_3|36|arr|COMPLETED|0:0|2026-11-23T18:24:31|2026-11-23T18:24:45|2026-11-23T18:24:45|localhost|100M|UNLIMITED|/tmp/sj
33_3.batch|36.batch|batch|COMPLETED|0:0|2026-11-23T18:24:45|2026-11-23T18:24:45|2026-11-23T18:24:45|localhost|||
33_4|33|arr|FAILED|1:0|2026-11-23T18:24:31|2026-11-23T18:24:43|2026-11-23T18:24:43|localhost|100M|UNLIMITED|/tmp/sj
33_4.batch|33.batch|batch|FAILED|1:0|2026-11-23T18:24:43|2026-11-23T18:24:43|2026-11-23T18:24:43|localhost|||
",
        );
        assert_eq!(
            states(&runs),
            [
                ("32", "OUT_OF_MEMORY"),
                ("33_1", "COMPLETED"),
                ("33_2", "FAILED"),
                ("33_3", "COMPLETED"),
                ("33_4", "FAILED"),
                ("32", "COMPLETED"),
                ("33_1", "PENDING"),
                ("33_2", "FAILED"),
                ("33_3", "COMPLETED"),
                ("33_4", "FAILED"),
            ]
            .map(|(k, s)| (k.to_string(), s.to_string()))
        );
        assert_eq!(runs[0].exit(), (0, 125));
        assert_eq!(runs[5].job.req_mem_bytes, Some(600 << 20));
        assert!(runs[6].steps.is_empty(), "a pending rerun has no steps yet");
        assert!(runs.iter().all(|r| r.steps.iter().all(|s| s.submit >= r.job.submit)));
    }

    #[test]
    fn placeholder_then_complete_as_another_user() {
        // Job 28, submitted by root and later requeued, with the User column (verbatim).
        let placeholder = "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir|User
28|28|allocation|FAILED|1:0|2026-11-23T18:23:15|2026-11-23T18:23:16|2026-11-23T18:23:16|localhost|16?|||root
28.batch|28.batch|batch|FAILED|1:0|2026-11-23T18:23:16|2026-11-23T18:23:16|2026-11-23T18:23:16|localhost||||
";
        let runs1 = runs(parse_in(placeholder, &TimeZone::UTC).expect("parses"));
        assert_eq!(runs1.len(), 1);
        assert!(runs1[0].is_placeholder());
        assert_eq!((runs1[0].job.req_mem_bytes, runs1[0].job.timelimit_secs), (None, None));

        let later = "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir|User
28|28|pyfail|REQUEUED|1:0|2026-11-23T18:23:15|2026-11-23T18:23:16|2026-11-23T18:23:18|localhost|100M|Partition_Limit|/tmp/uj|tuser
28.batch|28.batch|batch|FAILED|1:0|2026-11-23T18:23:16|2026-11-23T18:23:16|2026-11-23T18:23:16|localhost||||
28|28|pyfail|FAILED|1:0|2026-11-23T18:23:18|2026-11-23T18:23:29|2026-11-23T18:23:29|localhost|200M|00:30:00|/tmp/uj|tuser
28.batch|28.batch|batch|FAILED|1:0|2026-11-23T18:23:29|2026-11-23T18:23:29|2026-11-23T18:23:29|localhost||||
";
        let runs2 = runs(parse_in(later, &TimeZone::UTC).expect("parses"));
        assert_eq!(runs2.len(), 2);
        assert!(runs2.iter().all(|r| !r.is_placeholder()));
        assert!(runs2.iter().all(|r| r.job.user.as_deref() == Some("tuser") && r.outcome_state() == "FAILED"));
        assert_eq!(runs2[1].job.timelimit_secs, Some(1_800));
        assert_ne!(runs2[0].job.submit, runs2[1].job.submit);
    }

    #[test]
    fn placeholder_from_the_12_field_capture() {
        let runs = runs_of(
            "\
JobID|JobIDRaw|JobName|State|ExitCode|Submit|Start|End|NodeList|ReqMem|Timelimit|WorkDir
15|15|allocation|FAILED|1:0|2026-11-23T18:20:21|2026-11-23T18:20:21|2026-11-23T18:20:22|localhost|16?||
15.batch|15.batch|batch|FAILED|1:0|2026-11-23T18:20:21|2026-11-23T18:20:21|2026-11-23T18:20:22|localhost|||
",
        );
        assert!(runs[0].is_placeholder());
    }

    #[test]
    fn a_job_named_allocation_is_not_a_placeholder() {
        let runs = runs_of(&FAILED_EXIT_1.replace("|depx|", "|allocation|"));
        assert!(!runs[0].is_placeholder());
    }

    #[test]
    fn times_are_read_in_the_given_zone() {
        let rows = parse(&with_user(FAILED_EXIT_1, "root")).expect("parses");
        let tz = TimeZone::system();
        assert_eq!(rows[0].submit, local_time("2026-11-23T18:21:15", &tz));
        let plus_one = TimeZone::fixed(jiff::tz::offset(1));
        let rows = parse_in(&with_user(FAILED_EXIT_1, "root"), &plus_one).expect("parses");
        assert_eq!(rows[0].submit, Some(utc("2026-11-23T17:21:15")));
    }

    #[test]
    fn empty_output_and_wrong_header_are_errors_that_say_what_to_run() {
        assert_eq!(parse("").unwrap_err(), SacctError::NoHeader);
        assert_eq!(parse("\n\n").unwrap_err(), SacctError::NoHeader);
        let err = parse(FAILED_EXIT_1).unwrap_err();
        assert_eq!(err, SacctError::Header { found: F12_HEADER.to_string() });
        let msg = err.to_string();
        assert!(msg.contains(F12_HEADER) && msg.contains(SACCT_FIELDS), "{msg}");
        // The header alone (no job matched) is an empty list.
        assert_eq!(parse(&SACCT_FIELDS.replace(',', "|")), Ok(vec![]));
    }

    #[test]
    fn wrong_column_count_names_the_line() {
        let text = with_user(FAILED_EXIT_1, "root").replace("|depx|", "|de|px|");
        let err = parse_in(&text, &TimeZone::UTC).unwrap_err();
        let SacctError::Columns { line, found, text } = &err else { panic!("{err:?}") };
        assert_eq!((*line, *found), (2, 14));
        assert!(text.starts_with("20|20|de|px|"));
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn bad_fields_are_errors_naming_the_field() {
        let base = with_user(FAILED_EXIT_1, "root");
        for (from, to, field) in [
            ("|20|depx|", "|x|depx|", "JobIDRaw"),
            ("|FAILED|1:0|", "|FAILED|one|", "ExitCode"),
            ("|1:0|2026-11-23T18:21:15|", "|1:0|11/23-18:21:15|", "Submit"),
            ("|2026-11-23T18:21:18|localhost|100M|", "|now|localhost|100M|", "End"),
        ] {
            let text = base.replacen(from, to, 1);
            assert_ne!(text, base, "{field}: replacement applied");
            match parse_in(&text, &TimeZone::UTC) {
                Err(err @ SacctError::Field { line: 2, field: f, .. }) => {
                    assert_eq!(f, field);
                    let msg = err.to_string();
                    let fix = if matches!(f, "Submit" | "End") { "SLURM_TIME_FORMAT" } else { SACCT_FIELDS };
                    assert!(msg.contains(fix), "{msg}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn step_ids_and_odd_job_ids() {
        let text = format!(
            "{}\n{}\n{}\n{}\n",
            SACCT_FIELDS.replace(',', "|"),
            "16_[1-4]|16|arr|PENDING|0:0|2026-11-23T18:20:42|Unknown|Unknown|None assigned|100M|Partition_Limit|/tmp/sj|root",
            "15|15|x|RUNNING|0:0|2026-11-23T18:20:42|2026-11-23T18:20:42|Unknown|localhost|100M|UNLIMITED|/tmp/sj|root",
            "15.extern|15.extern|extern|RUNNING|0:0|2026-11-23T18:20:42|2026-11-23T18:20:42|Unknown|localhost||||",
        ) + "15.0|15.0|python3|RUNNING|0:0|2026-11-23T18:20:42|2026-11-23T18:20:42|Unknown|localhost||||\n";
        let rows = parse_in(&text, &TimeZone::UTC).expect("parses");
        assert_eq!((rows[0].key.as_str(), rows[0].raw_id, rows[0].array), ("16_[1-4]", 16, None));
        assert_eq!(rows[2].step.as_deref(), Some("extern"));
        assert_eq!(rows[3].step.as_deref(), Some("0"));
        let runs = runs(rows);
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[1].steps.len(), 2);
        assert_eq!(runs[1].batch(), None);
    }

    #[test]
    fn memory_forms() {
        assert_eq!(memory_bytes("100M"), Some(100 << 20));
        assert_eq!(memory_bytes("4000M"), Some(4000 << 20));
        assert_eq!(memory_bytes("4000Mn"), Some(4000 << 20));
        assert_eq!(memory_bytes("100Mc"), Some(100 << 20));
        assert_eq!(memory_bytes("2G"), Some(2 << 30));
        assert_eq!(memory_bytes("1.50G"), Some(3 << 29));
        assert_eq!(memory_bytes("512K"), Some(512 << 10));
        assert_eq!(memory_bytes("1T"), Some(1 << 40));
        assert_eq!(memory_bytes("300"), Some(300 << 20), "a bare number is in megabytes");
        assert_eq!(memory_bytes("0"), Some(0));
        for bad in ["16?", "", "M", "1.2.3G", "-1M", "12X", "1e3M"] {
            assert_eq!(memory_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn time_limit_forms() {
        assert_eq!(duration_secs("365-00:00:00"), Some(365 * 86_400));
        assert_eq!(duration_secs("00:10:00"), Some(600));
        assert_eq!(duration_secs("10:00"), Some(600), "MM:SS");
        assert_eq!(duration_secs("10"), Some(600), "minutes");
        assert_eq!(duration_secs("1-00:00"), Some(86_400), "D-HH:MM");
        assert_eq!(duration_secs("1-2"), Some(93_600), "D-HH");
        assert_eq!(duration_secs("1-02:03:04"), Some(93_784));
        assert_eq!(duration_secs("2982251-04:16:00"), Some(2_982_251 * 86_400 + 4 * 3_600 + 16 * 60));
        for none in ["UNLIMITED", "Partition_Limit", "", "INFINITE", "N/A", "1:2:3:4", "1-", "-5", "a:b"] {
            assert_eq!(duration_secs(none), None, "{none}");
        }
    }

    #[test]
    fn exit_code_forms() {
        assert_eq!(exit_pair("1:0"), Some((1, 0)));
        assert_eq!(exit_pair("0:125"), Some((0, 125)));
        assert_eq!(exit_pair(""), Some((0, 0)));
        assert_eq!(exit_pair("1"), None);
    }
}
