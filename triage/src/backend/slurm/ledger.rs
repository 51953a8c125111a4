//! The ledger: triage's own record of every decision on a Slurm job, because Slurm has no
//! `pending_failed` and no place for a reason. One JSON object per line, appended durably
//! under the cluster folder's lock (`TRIAGE_STATE_DIR/slurm/<cluster>/ledger.jsonl`); it is
//! the audit trail of the `slurm:` backend, shared by `triage` and `triage-mcp`.
//!
//! A run is keyed by its job id *and* its submit time ([`RunKey`]): a rebuilt cluster starts
//! its ids again at 1, and a requeued job keeps its id with a new submit time. A move writes
//! [`Entry::Begin`] before its first command and [`Entry::Done`] after its last, so a process
//! that dies in between leaves a begun decision that the next run resolves
//! ([`super::SlurmBackend`]'s `recover`). A resubmitted job is recorded in its `Done` entry
//! as the next incarnation of the same triage job, by its id and submit time (Slurm can
//! reissue a purged job's id).
//!
//! Beside the ledger: `logs/` keeps a copy of the end of each decided run's stderr and stdout
//! (a requeued job's output files are truncated when it runs again), `scripts/` the batch
//! script of each job triage saw, and `seen/` what the controller said about a run while it
//! still held it (its expanded output paths), for when it no longer does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::backend::{AuditEvent, BackendError, ResourceChange};
use crate::fsutil::{self, FolderLock};
use crate::model::{Action, Attempt};

/// One run of one Slurm job: its own id (an array task's raw id) and its submit time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RunKey {
    pub raw_id: u64,
    pub submit: Timestamp,
}

/// A Slurm job that carries a triage job: the original, or a resubmission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Incarnation {
    /// The job id (for an array task: the array's id).
    pub job_id: u64,
    /// The array task, for an array workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<u32>,
    /// When the resubmission was submitted, as the controller recorded it: runs of `job_id`
    /// submitted before it belong to whatever job held that id before. Slurm hands an id out
    /// again once its job is purged if the controller's id sequence restarts (a rebuilt or
    /// reset cluster), so an id alone does not name a resubmission. `None` in ledgers written
    /// before this field: any run of the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
}

impl Incarnation {
    /// Whether a run of this incarnation's job id submitted at `submit` belongs to it.
    pub fn holds(&self, submit: Option<Timestamp>) -> bool {
        match (self.since, submit) {
            (Some(since), Some(submit)) => submit >= since,
            _ => true,
        }
    }
}

/// One line of the ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// A decision on one run, before any command was sent.
    Begin {
        id: String,
        workflow_id: i64,
        job_id: i64,
        run: RunKey,
        action: Action,
        /// The attempt decided on, as it was (state, exit code, where its logs were copied).
        attempt: Box<Attempt>,
        #[serde(default)]
        change: ResourceChange,
        audit: AuditEvent,
    },
    /// Every command of decision `id` succeeded.
    Done {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resubmitted: Option<Incarnation>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        canceled: Vec<i64>,
        when: Timestamp,
    },
    /// About to `sbatch` for decisions `ids`, with `--comment=TOKEN`: if the process dies
    /// before their `Done`, recovery finds the submission by its comment.
    Submitting { ids: Vec<String>, token: String, when: Timestamp },
    /// Decision `id` changed nothing on the cluster and was dropped (found by recovery).
    Abandoned { id: String, why: String, when: Timestamp },
    /// Any other audit event of a workflow.
    Event { workflow_id: i64, event: AuditEvent },
}

/// A decision and how it ended.
#[derive(Debug, Clone)]
pub struct Decision {
    pub id: String,
    pub workflow_id: i64,
    pub job_id: i64,
    pub run: RunKey,
    pub action: Action,
    pub attempt: Attempt,
    pub change: ResourceChange,
    pub audit: AuditEvent,
    /// `None` while begun and not ended.
    pub end: Option<End>,
}

/// How a decision ended.
#[derive(Debug, Clone)]
pub enum End {
    Done { resubmitted: Option<Incarnation>, canceled: Vec<i64> },
    Abandoned,
}

/// Everything in the ledger, indexed.
#[derive(Debug, Default, Clone)]
pub struct Book {
    pub decisions: Vec<Decision>,
    /// Decisions by run (the last one that did not end abandoned).
    by_run: HashMap<RunKey, usize>,
    pub events: Vec<(i64, AuditEvent)>,
    /// Submission tokens by decision id.
    pub submitting: HashMap<String, String>,
}

impl Book {
    /// The standing decision on `run`: done, or begun and not ended.
    pub fn on_run(&self, run: &RunKey) -> Option<&Decision> {
        self.by_run.get(run).map(|&i| &self.decisions[i])
    }

    /// The resubmissions of a triage job, in order.
    pub fn incarnations(&self, workflow_id: i64, job_id: i64) -> Vec<Incarnation> {
        self.decisions
            .iter()
            .filter(|d| d.workflow_id == workflow_id && d.job_id == job_id)
            .filter_map(|d| match &d.end {
                Some(End::Done { resubmitted: Some(i), .. }) => Some(*i),
                _ => None,
            })
            .collect()
    }

    /// Every resubmission made for `workflow_id`, with the triage job it carries.
    pub fn resubmissions(&self, workflow_id: i64) -> Vec<(i64, Incarnation)> {
        self.decisions
            .iter()
            .filter(|d| d.workflow_id == workflow_id)
            .filter_map(|d| match &d.end {
                Some(End::Done { resubmitted: Some(i), .. }) => Some((d.job_id, *i)),
                _ => None,
            })
            .collect()
    }

    /// Decisions of `workflow_id` that began and never ended.
    pub fn unfinished(&self, workflow_id: i64) -> Vec<&Decision> {
        self.decisions.iter().filter(|d| d.workflow_id == workflow_id && d.end.is_none()).collect()
    }
}

/// The ledger of one cluster, and the folders beside it.
#[derive(Debug, Clone)]
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    /// The ledger in `dir` (`TRIAGE_STATE_DIR/slurm/<cluster>`), created if missing.
    pub fn open(dir: PathBuf) -> Result<Ledger, BackendError> {
        for sub in ["", "logs", "scripts", "seen"] {
            let d = dir.join(sub);
            std::fs::create_dir_all(&d).map_err(|e| BackendError::io(&d, e))?;
        }
        // Kept scripts are used only from a folder nobody else may write
        // ([`Ledger::private_script`]); make ours so whatever the umask. Best effort: a folder
        // another user owns stays as it is, and its scripts are not used.
        let scripts = dir.join("scripts");
        if private_owner(&scripts) {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(&scripts, std::fs::Permissions::from_mode(0o700));
        }
        Ok(Ledger { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join("ledger.jsonl")
    }

    /// The cluster folder's lock: held across a move's check, commands and entries, so two
    /// triage processes never decide one run twice.
    pub fn lock(&self) -> Result<FolderLock, BackendError> {
        FolderLock::acquire(&self.dir).map_err(|e| BackendError::io(&self.dir, e))
    }

    /// Append one entry, durably.
    pub fn append(&self, entry: &Entry) -> Result<(), BackendError> {
        let line = serde_json::to_string(entry).map_err(|e| BackendError::Internal(e.to_string()))?;
        fsutil::append_line(&self.path(), &line).map_err(|e| BackendError::io(self.path(), e))
    }

    /// Append several entries with one write and one flush to disk (a batch of moves'
    /// entries: each line lands whole, and a process killed mid-write leaves at most a torn
    /// last line, which [`Ledger::read`] skips).
    pub fn append_all(&self, entries: &[Entry]) -> Result<(), BackendError> {
        if entries.is_empty() {
            return Ok(());
        }
        let lines = entries
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BackendError::Internal(e.to_string()))?;
        fsutil::append_lines(&self.path(), &lines).map_err(|e| BackendError::io(self.path(), e))
    }

    /// Read and index every entry. A line that does not parse (a torn write of a killed
    /// process is the only way to get one) is skipped with a warning.
    pub fn read(&self) -> Result<Book, BackendError> {
        let path = self.path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(BackendError::io(&path, e)),
        };
        let mut book = Book::default();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let entry: Entry = match serde_json::from_str(line) {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("{}:{}: skipped an unreadable ledger line: {e}", path.display(), n + 1);
                    continue;
                }
            };
            match entry {
                Entry::Begin { id, workflow_id, job_id, run, action, attempt, change, audit } => {
                    index.insert(id.clone(), book.decisions.len());
                    book.by_run.insert(run, book.decisions.len());
                    book.decisions.push(Decision {
                        id,
                        workflow_id,
                        job_id,
                        run,
                        action,
                        attempt: *attempt,
                        change,
                        audit,
                        end: None,
                    });
                }
                Entry::Done { id, resubmitted, canceled, .. } => {
                    if let Some(&i) = index.get(&id) {
                        book.decisions[i].end = Some(End::Done { resubmitted, canceled });
                    }
                }
                Entry::Abandoned { id, .. } => {
                    if let Some(&i) = index.get(&id) {
                        book.decisions[i].end = Some(End::Abandoned);
                        let run = book.decisions[i].run;
                        if book.by_run.get(&run) == Some(&i) {
                            book.by_run.remove(&run);
                        }
                    }
                }
                Entry::Event { workflow_id, event } => book.events.push((workflow_id, event)),
                Entry::Submitting { ids, token, .. } => {
                    for id in ids {
                        book.submitting.insert(id, token.clone());
                    }
                }
            }
        }
        Ok(book)
    }

    /// Where the copy of a run's stderr (`err`) or stdout (`out`) tail goes.
    pub fn log_copy(&self, run: &RunKey, ext: &str) -> PathBuf {
        self.dir.join("logs").join(format!("{}-{}.{ext}", run.raw_id, run.submit.as_second()))
    }

    /// Where a job's batch script is kept.
    pub fn script(&self, job_id: u64) -> PathBuf {
        self.dir.join("scripts").join(format!("{job_id}.sh"))
    }

    /// Whose the kept script of `job_id` is ([`ScriptOwner`], JSON), written after the script.
    pub fn script_owner(&self, job_id: u64) -> PathBuf {
        self.dir.join("scripts").join(format!("{job_id}.owner.json"))
    }

    /// The kept script of `job_id` and its owner record, if both are private to this process's
    /// user: a kept script is what a resubmission runs, so a copy that another user owns or
    /// could have written (group or world writable, as is its folder) is not used, the way
    /// OpenSSH refuses a key file others can write. `None`: missing, unreadable or not private.
    pub fn private_script(&self, job_id: u64) -> Option<(String, ScriptOwner)> {
        let (script, owner) = (self.script(job_id), self.script_owner(job_id));
        let folder = self.dir.join("scripts");
        if ![&folder, &script, &owner].into_iter().all(|p| private(p)) {
            return None;
        }
        let owner = serde_json::from_slice(&std::fs::read(&owner).ok()?).ok()?;
        Some((std::fs::read_to_string(&script).ok()?, owner))
    }

    /// What the controller said about a run (`seen/<raw>-<submit>.json`).
    pub fn seen(&self, run: &RunKey) -> PathBuf {
        self.dir.join("seen").join(format!("{}-{}.json", run.raw_id, run.submit.as_second()))
    }
}

/// The job a kept batch script belongs to. Slurm hands a purged job's id out again (after a
/// `scontrol reconfigure`, or a controller whose id sequence restarted), so a script kept under
/// an id may be another job's: it is used only for a run of the same name, directory and user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptOwner {
    pub name: String,
    pub work_dir: Option<String>,
    pub user: Option<String>,
}

impl ScriptOwner {
    /// The triple, normalised as every source of it is read: an empty working directory or
    /// user is an unknown one (sacct prints nothing, scontrol `(null)`, for what it lacks).
    pub fn new(name: &str, work_dir: Option<&str>, user: Option<&str>) -> ScriptOwner {
        let known = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_string);
        ScriptOwner { name: name.to_string(), work_dir: known(work_dir), user: known(user) }
    }

    /// The owner of a run as `sacct` shows it.
    pub fn of(row: &super::sacct::SacctRow) -> ScriptOwner {
        ScriptOwner::new(&row.name, row.work_dir.as_deref(), row.user.as_deref())
    }

    /// The owner of the job the controller's `record` describes; `None` without a job name.
    pub fn of_record(record: &super::scontrol::JobRecord) -> Option<ScriptOwner> {
        let user = record.user().map(|(u, _)| u);
        Some(ScriptOwner::new(record.name()?, record.work_dir(), user.as_deref()))
    }

    /// Whether `found` (read from any source) is this owner's job: the same name and working
    /// directory, and the same user unless this owner's user is unknown. The one comparison
    /// behind [`ScriptOwner::held_in`] and [`super::sacct::owner_matches`].
    pub fn same_job(&self, found: &ScriptOwner) -> bool {
        found.name == self.name && found.work_dir == self.work_dir && (self.user.is_none() || found.user == self.user)
    }

    /// Whether the controller's `record` is this owner's job.
    pub fn held_in(&self, record: &super::scontrol::JobRecord) -> bool {
        ScriptOwner::of_record(record).is_some_and(|found| self.same_job(&found))
    }
}

/// Whether `path` is owned by this process's effective user and nobody else may write it.
fn private(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| owned(&m) && m.mode() & 0o022 == 0)
}

/// Whether `path` itself (not a symlink's target) is owned by this process's effective user.
fn private_owner(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| owned(&m))
}

fn owned(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    m.uid() == nix::unistd::geteuid().as_raw() && !m.file_type().is_symlink()
}

/// A fresh decision id.
pub fn decision_id(workflow_id: i64, job_id: i64, run: &RunKey) -> String {
    format!("{workflow_id}-{job_id}-{}-{}-{}", run.raw_id, run.submit.as_second(), Timestamp::now().as_nanosecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt() -> Attempt {
        serde_json::from_str(r#"{"attempt_id": 1, "return_code": 1}"#).unwrap()
    }

    #[test]
    fn a_kept_script_others_could_write_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let l = Ledger::open(tmp.path().join("c")).unwrap();
        let owner = ScriptOwner::new("align", Some("/w"), Some("u"));
        assert_eq!(l.private_script(7), None, "nothing kept");
        let folder_mode = std::fs::metadata(l.dir().join("scripts")).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder_mode, 0o700, "the scripts folder is made private when the ledger opens");
        std::fs::write(l.script(7), "#!/bin/sh\ntrue\n").unwrap();
        std::fs::write(l.script_owner(7), serde_json::to_vec(&owner).unwrap()).unwrap();
        let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
        mode(&l.script(7), 0o600);
        mode(&l.script_owner(7), 0o600);
        mode(&l.dir().join("scripts"), 0o700);
        assert_eq!(l.private_script(7), Some(("#!/bin/sh\ntrue\n".to_string(), owner.clone())));
        mode(&l.script(7), 0o666);
        assert_eq!(l.private_script(7), None, "a script anyone could have written");
        mode(&l.script(7), 0o644);
        mode(&l.dir().join("scripts"), 0o777);
        assert_eq!(l.private_script(7), None, "a folder anyone could have swapped the script in");
        mode(&l.dir().join("scripts"), 0o755);
        mode(&l.script_owner(7), 0o620);
        assert_eq!(l.private_script(7), None, "an owner record the group could have written");
        mode(&l.script_owner(7), 0o644);
        std::fs::remove_file(l.script(7)).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere.sh"), l.script(7)).unwrap();
        std::fs::write(tmp.path().join("elsewhere.sh"), "#!/bin/sh\n").unwrap();
        assert_eq!(l.private_script(7), None, "a symlink to a script elsewhere");
    }

    #[test]
    fn the_controller_and_sacct_name_the_same_owner_alike() {
        use super::super::{sacct, scontrol::JobRecord};
        let owner = ScriptOwner::new("tri-oom", Some("/w"), Some("ana"));
        let record = |name: &str, dir: &str, user: &str| {
            JobRecord::from_line(&format!(
                "JobId=16 JobName={name} UserId={user}(1000) GroupId=ana(1000) JobState=FAILED WorkDir={dir} StdErr=/w/e"
            ))
        };
        // The same job read from either source is the same normalised triple.
        let from_record = ScriptOwner::of_record(&record("tri-oom", "/w", "ana")).unwrap();
        let from_sacct = sacct::owner_row("tri-oom|/w|ana").unwrap();
        assert_eq!(from_record, owner);
        assert_eq!(from_sacct, owner);
        assert!(owner.held_in(&record("tri-oom", "/w", "ana")));
        for (name, dir, user) in [("other", "/w", "ana"), ("tri-oom", "/x", "ana"), ("tri-oom", "/w", "bob")] {
            assert!(!owner.held_in(&record(name, dir, user)), "{name} {dir} {user}");
            assert!(!sacct::owner_matches(&format!("{name}|{dir}|{user}\n"), &owner), "{name} {dir} {user}");
        }
        // What neither source knows reads as unknown in both: scontrol's `(null)`, sacct's empty.
        let no_dir = ScriptOwner::new("tri-oom", None, Some("ana"));
        assert!(no_dir.held_in(&record("tri-oom", "(null)", "ana")));
        assert!(sacct::owner_matches("tri-oom||ana\n", &no_dir));
        assert!(ScriptOwner::of_record(&JobRecord::from_line("JobId=16 JobState=FAILED")).is_none());
    }

    #[test]
    fn decisions_end_and_abandoned_ones_free_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Ledger::open(tmp.path().join("c")).unwrap();
        let run = RunKey { raw_id: 15, submit: "2026-11-23T18:20:21Z".parse().unwrap() };
        let begin = |id: &str| Entry::Begin {
            id: id.into(),
            workflow_id: 15,
            job_id: 15,
            run,
            action: Action::Retry,
            attempt: Box::new(attempt()),
            change: ResourceChange::default(),
            audit: AuditEvent::now("t", "retry", Some(15), "r"),
        };
        l.append(&begin("a")).unwrap();
        assert!(l.read().unwrap().on_run(&run).unwrap().end.is_none());
        assert_eq!(l.read().unwrap().unfinished(15).len(), 1);
        l.append(&Entry::Abandoned { id: "a".into(), why: "nothing moved".into(), when: Timestamp::now() }).unwrap();
        assert!(l.read().unwrap().on_run(&run).is_none(), "an abandoned decision leaves the run undecided");
        l.append(&begin("b")).unwrap();
        let inc = Incarnation { job_id: 40, task: None, since: Some(Timestamp::UNIX_EPOCH) };
        l.append(&Entry::Done { id: "b".into(), resubmitted: Some(inc), canceled: vec![], when: Timestamp::now() })
            .unwrap();
        std::fs::write(l.path(), format!("{}{{\"entry\": \"begi", std::fs::read_to_string(l.path()).unwrap())).unwrap();
        let book = l.read().unwrap();
        assert!(matches!(book.on_run(&run).unwrap().end, Some(End::Done { .. })));
        assert_eq!(book.incarnations(15, 15), vec![inc]);
    }
}
