//! A Kubernetes CrashLoopBackOff weighed by the container's last termination.
//!
//! `CrashLoopBackOff` only says the container keeps exiting and Kubernetes keeps restarting
//! it (context, the `container-runtime` entry). `kubectl describe` shows how it last ended:
//!
//! - `Reason: Completed` / `Exit Code: 0`: the container's command finishes at once, and a
//!   Deployment restarts it forever. The pod spec needs a long-running command (or a Job):
//!   permanent.
//! - A non-zero exit code after at least [`MIN_RESTARTS`] restarts: the command failed the
//!   same way every time it was started. Permanent.
//! - An OOM kill (exit 137, `OOMKilled`) is left to the memory entries.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const COMPLETES: &str = "crashloop/command-exits-at-once";
const FAILS: &str = "crashloop/fails-every-start";

/// Restarts that make a repeated failure.
const MIN_RESTARTS: u64 = 3;
/// How far below `Last State: Terminated` its reason and exit code may be.
const BLOCK: usize = 6;

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: COMPLETES,
        class: EntryClass::Permanent,
        category: "bad_config",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 5,
        hint: "The container's command finished successfully (exit 0) and Kubernetes restarts it in a loop: \
               the image or pod spec has no long-running command. Give it one, or run it as a Job; \
               restarting changes nothing.",
    },
    Outcome {
        id: FAILS,
        class: EntryClass::Permanent,
        category: "crashloop",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 5,
        hint: "The container exited with an error on every one of several restarts: its command fails at \
               start (configuration, a missing file or secret, a dependency it cannot reach). Read the \
               container's logs (kubectl logs --previous); restarting again ends the same way.",
    },
];

static TRIGGERS: &[&str] =
    &[r"\bCrashLoopBackOff\b", r"^\s*Last State:\s+Terminated\b", r"^\s*(?:Exit Code|Restart Count):\s+\d+\s*$"];

static CRASHLOOP: Lazy = Lazy::new(|| re(r"\bCrashLoopBackOff\b"));
static LAST: Lazy = Lazy::new(|| re(r"^\s*Last State:\s+Terminated\b"));
static REASON: Lazy = Lazy::new(|| re(r"^\s*Reason:\s+(\w+)\s*$"));
static EXIT: Lazy = Lazy::new(|| re(r"^\s*Exit Code:\s+(\d+)\s*$"));
static RESTARTS: Lazy = Lazy::new(|| re(r"^\s*Restart Count:\s+(\d+)\s*$"));

fn number(re: &super::Regex, line: &str) -> Option<u64> {
    re.captures(line)?.get(1)?.as_str().parse().ok()
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let lines = input.lines;
    let &c = input.woken.iter().find(|&&i| CRASHLOOP.is_match(lines[i]))?;
    let &last = input.woken.iter().find(|&&i| LAST.is_match(lines[i]))?;
    let block = &lines[last + 1..lines.len().min(last + 1 + BLOCK)];
    let reason = block.iter().find_map(|l| REASON.captures(l).and_then(|m| m.get(1)).map(|m| m.as_str()));
    let code = block.iter().find_map(|l| number(&EXIT, l))?;
    let restarts = input.woken.iter().find_map(|&i| number(&RESTARTS, lines[i])).unwrap_or(0);
    let id = match (reason, code) {
        (Some("OOMKilled"), _) | (_, 137) => return None,
        (Some("Completed"), _) | (_, 0) => COMPLETES,
        _ if restarts >= MIN_RESTARTS => FAILS,
        _ => return None,
    };
    Some(Finding::text(OUTCOMES, id, c))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&CRASHLOOP, &LAST, &REASON, &EXIT, &RESTARTS],
    analyze,
    examples: &[
        Example {
            text: "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n\
                   \x20     Reason:       Completed\n      Exit Code:    0\n      Started:      Wed, 14 Jul 2021 19:52:22 +0000\n\
                   \x20   Ready:          False\n    Restart Count:  6",
            exit_code: None,
            expect: Some(COMPLETES),
        },
        Example {
            text: "    State:          Waiting\n      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n\
                   \x20     Reason:       Error\n      Exit Code:    1\n    Restart Count:  5",
            exit_code: None,
            expect: Some(FAILS),
        },
        Example {
            text: "      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       OOMKilled\n\
                   \x20     Exit Code:    137\n    Restart Count:  4",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "      Reason:       CrashLoopBackOff\n    Last State:     Terminated\n      Reason:       Error\n\
                   \x20     Exit Code:    1\n    Restart Count:  1",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "Warning FailedSync Error syncing pod, skipping: failed to \"StartContainer\" with CrashLoopBackOff",
            exit_code: None,
            expect: None,
        },
    ],
};
