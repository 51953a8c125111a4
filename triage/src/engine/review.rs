//! A person's review: the only way a reviewed decision is made.
//!
//! `triage review` shows each plan entry that needs a person and reads an answer for it (at a
//! terminal, or piped); this module turns the answer into the entry's new proposal. A decision
//! made here has [`super::Authority::Review`]: `triage apply` then holds it only to the hard
//! rules (state, budget, exit-code lists, resources), not to the catalog or the review
//! triggers. It lives in the plan file the person writes, which is why a plan file is trusted
//! as that person's word (and should be writable only by the people who review).

use std::str::FromStr;

use super::plan::{Outcome, Plan};
use super::proposal::Proposal;
use crate::model::Action;

/// One answer to one job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Take the proposal as it stands (its action and resources).
    Accept,
    Retry,
    Fail,
    /// Leave the job for later.
    Skip,
    /// Stop reviewing; keep the answers so far.
    Quit,
}

/// The answers `triage review` understands, for prompts and errors.
pub const ANSWERS: &str = "[a]ccept proposal / [r]etry / [f]ail / [s]kip / [q]uit";

impl FromStr for Answer {
    type Err = ReviewError;

    fn from_str(s: &str) -> Result<Answer, ReviewError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "a" | "accept" => Answer::Accept,
            "r" | "retry" => Answer::Retry,
            "f" | "fail" => Answer::Fail,
            "s" | "skip" | "" => Answer::Skip,
            "q" | "quit" => Answer::Quit,
            other => return Err(ReviewError::NotAnAnswer(other.to_string())),
        })
    }
}

/// Why an answer could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("`{0}` is not an answer; type a, r, f, s or q")]
    NotAnAnswer(String),
    #[error("nothing was proposed for job {0}; answer r or f")]
    NothingProposed(i64),
    #[error("job {0} does not need a review")]
    NotAwaitingReview(i64),
}

impl Plan {
    /// The indices of the entries a person must decide.
    pub fn awaiting_review(&self) -> Vec<usize> {
        (0..self.jobs.len()).filter(|&i| self.jobs[i].outcome == Outcome::NeedsReview).collect()
    }

    /// Record `reviewer`'s `answer` for entry `index`. Returns the action decided, or `None`
    /// for skip and quit (nothing changes).
    pub fn review(&mut self, index: usize, answer: Answer, reviewer: &str) -> Result<Option<Action>, ReviewError> {
        let Some(job) = self.jobs.get_mut(index).filter(|j| j.outcome == Outcome::NeedsReview) else {
            return Err(ReviewError::NotAwaitingReview(self.jobs.get(index).map_or(-1, |j| j.job_id)));
        };
        let action = match answer {
            Answer::Accept => match &job.proposed {
                Some(p) => p.action,
                None => return Err(ReviewError::NothingProposed(job.job_id)),
            },
            Answer::Retry => Action::Retry,
            Answer::Fail => Action::Fail,
            Answer::Skip | Answer::Quit => return Ok(None),
        };
        // The proposal's resources are kept only when the person chose its action.
        let kept = job.proposed.as_ref().filter(|p| p.action == action);
        let reason = format!(
            "{reviewer} decided {action} in triage review{}",
            kept.map(|p| format!(" (proposal by {}: {})", p.source, p.reason)).unwrap_or_default()
        );
        job.proposed = Some(Proposal::by_review(
            reviewer,
            action,
            reason,
            (kept.and_then(|p| p.memory.clone()), kept.and_then(|p| p.runtime.clone())),
            job.attempt_id,
        ));
        job.outcome = Outcome::WouldApply;
        job.notes.push(format!("reviewed by {reviewer}: {action}"));
        self.summarize();
        Ok(Some(action))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_and_junk_is_named() {
        assert_eq!("A".parse::<Answer>(), Ok(Answer::Accept));
        assert_eq!(" fail ".parse::<Answer>(), Ok(Answer::Fail));
        assert_eq!("".parse::<Answer>(), Ok(Answer::Skip));
        let e = "yes".parse::<Answer>().unwrap_err().to_string();
        assert!(e.contains("`yes`") && e.contains("a, r, f, s or q"), "{e}");
    }
}
