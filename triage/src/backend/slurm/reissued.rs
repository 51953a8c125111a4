//! Runs of a job id that belong to an earlier job.
//!
//! Slurm hands a purged job's id out again: slurmctld 22.05 resets its id sequence on
//! `scontrol reconfigure` (to where it stood when it last saved its state), and a rebuilt
//! controller starts over. The accounting database keeps every run, so `sacct -D -j 96` can
//! list the runs of two unrelated jobs. Taken together they would make one job's history out
//! of two: another job's failures counted against this one's retry budget, another job's
//! stderr shown as its previous attempt.
//!
//! A later run of the same id is a rerun of the *same* job only when something reran it:
//! - Slurm or a person requeued it: the earlier run ends `REQUEUED` (or `REQUEUE_HOLD`,
//!   `REQUEUE_FED`), `PREEMPTED` (preemption with requeue), `NODE_FAIL` or `BOOT_FAIL` (the
//!   default requeue of a batch job on a failed node);
//! - triage requeued it: the ledger holds a retry decision on the earlier run;
//! - triage resubmitted it and Slurm gave the resubmission the same id: the ledger's decision
//!   on the earlier run names that id, submitted at or before the later run.
//!
//! Otherwise (the earlier run ended `COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`,
//! `OUT_OF_MEMORY`... and nothing reran it) the later run is another job's, and every run
//! before it is left out.

use std::collections::{HashMap, HashSet};

use super::ledger::{Book, End, RunKey};
use super::sacct::Run;
use crate::model::Action;

/// States after which Slurm itself runs the same job again.
const RERUN_STATES: &[&str] = &["REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "PREEMPTED", "NODE_FAIL", "BOOT_FAIL"];

/// The keys of the runs in `runs` that belong to an earlier job of the same id.
pub fn earlier_jobs(runs: &[Run], book: &Book) -> HashSet<RunKey> {
    let mut by_key: HashMap<&str, Vec<&Run>> = HashMap::new();
    for run in runs {
        by_key.entry(run.job.key.as_str()).or_default().push(run);
    }
    let mut out = HashSet::new();
    for (_, mut same_id) in by_key {
        if same_id.len() < 2 {
            continue;
        }
        // A run without a submit time (sacct's first seconds) is the newest.
        same_id.sort_by_key(|r| r.job.submit.map_or(i128::MAX, |t| t.as_nanosecond()));
        let last_break = (1..same_id.len()).rev().find(|&k| !reran(same_id[k - 1], same_id[k], book));
        if let Some(k) = last_break {
            out.extend(same_id[..k].iter().filter_map(|r| key_of(r)));
        }
    }
    out
}

fn key_of(run: &Run) -> Option<RunKey> {
    Some(RunKey { raw_id: run.job.raw_id, submit: run.job.submit? })
}

/// Whether `later` is a rerun of the job that ran `earlier` (see the module docs).
fn reran(earlier: &Run, later: &Run, book: &Book) -> bool {
    if RERUN_STATES.contains(&earlier.job.state.as_str()) || earlier.job.end.is_none() {
        return true;
    }
    let Some(decision) = key_of(earlier).and_then(|k| book.on_run(&k)) else { return false };
    if decision.action != Action::Retry {
        return false;
    }
    match &decision.end {
        // Requeued by triage, or begun and not ended (recovery finishes it): the same job.
        None | Some(End::Done { resubmitted: None, .. }) => true,
        Some(End::Done { resubmitted: Some(inc), .. }) => {
            let id = later.job.array.map_or(later.job.raw_id, |(array, _)| array);
            inc.job_id == id && inc.holds(later.job.submit)
        }
        Some(End::Abandoned) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::slurm::sacct::{SacctRow, test_row};
    use jiff::Timestamp;

    fn run(id: u64, state: &str, submit: i64) -> Run {
        Run {
            job: SacctRow {
                state: state.into(),
                node_list: Some("n1".into()),
                req_mem_bytes: Some(1 << 20),
                user: Some("u".into()),
                ..test_row(&id.to_string(), id, "j", submit)
            },
            steps: vec![],
        }
    }

    #[test]
    fn runs_before_a_reissue_of_the_id_are_another_jobs() {
        let book = Book::default();
        // Requeued, preempted, then failed; then the id went to another job that failed too.
        let runs = vec![
            run(96, "REQUEUED", 0),
            run(96, "PREEMPTED", 10),
            run(96, "FAILED", 20),
            run(96, "FAILED", 100),
            run(97, "COMPLETED", 5),
        ];
        let gone = earlier_jobs(&runs, &book);
        let mut gone: Vec<i64> = gone.iter().map(|k| k.submit.as_second() - 1_800_000_000).collect();
        gone.sort();
        assert_eq!(gone, vec![0, 10, 20]);
        // Nothing reissued: nothing left out.
        assert!(earlier_jobs(&runs[..3], &book).is_empty());
    }

    #[test]
    fn triage_s_own_requeues_and_resubmissions_keep_the_history() {
        use crate::backend::slurm::ledger::{Entry, Incarnation, Ledger};
        use crate::backend::{AuditEvent, ResourceChange};
        let tmp = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(tmp.path().join("c")).unwrap();
        let decide = |id: &str, run: &Run, action: Action, resubmitted: Option<Incarnation>| {
            let attempt = serde_json::from_str(r#"{"attempt_id": 1, "return_code": 1}"#).unwrap();
            ledger
                .append(&Entry::Begin {
                    id: id.into(),
                    workflow_id: 96,
                    job_id: 96,
                    run: key_of(run).unwrap(),
                    action,
                    attempt: Box::new(attempt),
                    change: ResourceChange::default(),
                    audit: AuditEvent::now("t", "retry", Some(96), "r"),
                })
                .unwrap();
            ledger
                .append(&Entry::Done { id: id.into(), resubmitted, canceled: vec![], when: Timestamp::now() })
                .unwrap();
        };
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        // Triage requeued run 0 (a FAILED row here, as if the database had not marked it), then
        // resubmitted run 20 and Slurm gave the resubmission the same id (run 30).
        let runs = vec![run(96, "FAILED", 0), run(96, "OUT_OF_MEMORY", 20), run(96, "COMPLETED", 30)];
        decide("a", &runs[0], Action::Retry, None);
        decide("b", &runs[1], Action::Retry, Some(Incarnation { job_id: 96, task: None, since: Some(t(30)) }));
        assert!(earlier_jobs(&runs, &ledger.read().unwrap()).is_empty());
        // A failed decision, or a resubmission under another id, leaves the next run of 96 to
        // another job.
        let runs = vec![run(96, "FAILED", 100), run(96, "FAILED", 200), run(96, "FAILED", 300)];
        decide("c", &runs[0], Action::Fail, None);
        decide("d", &runs[1], Action::Retry, Some(Incarnation { job_id: 120, task: None, since: Some(t(250)) }));
        let gone = earlier_jobs(&runs, &ledger.read().unwrap());
        assert_eq!(gone.len(), 2, "{gone:?}");
        assert!(!gone.contains(&key_of(&runs[2]).unwrap()));
    }
}
