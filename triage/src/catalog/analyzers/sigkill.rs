//! A SIGKILL weighed with the memory evidence around it.
//!
//! A process killed by SIGKILL (a shell's `Killed`, `signal 9`, exit 137 or -9) says nothing
//! about why on its own: the kernel or cgroup OOM killer, a scheduler enforcing a limit, or a
//! person. Alone it is context (the `process-killed` and `exit-sigkill` entries). Together
//! with memory evidence anywhere in the tail (an OOM line, a memory limit, a memory-limited
//! container, the scheduler's OUT_OF_MEMORY) it is the memory kill: transient, retry with
//! more memory. Either half may come from the context (exit code 137/-9, the scheduler
//! state) as long as the other is in the text.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, outcome, re};
use crate::model::{EntryClass, SchedulerState, Strategy, SuggestedAction};

const MEMORY: &str = "sigkill/memory";

static OUTCOMES: &[Outcome] = &[Outcome {
    id: MEMORY,
    class: EntryClass::Transient,
    category: "oom",
    action: SuggestedAction::RetryMoreMemory,
    strategy: Strategy::RetryImmediate,
    priority: 28,
    hint: "The process was killed with SIGKILL and the tail shows memory pressure (an OOM or memory-limit \
           line, a memory-limited container, or the scheduler's OUT_OF_MEMORY): the memory kill. Retry with \
           more memory (1.5-2x the request, or the measured peak plus margin), or fewer parallel tasks.",
}];

/// Bits of [`TRIGGERS`] in [`Input::triggered`](super::Input): the kill's four, then the
/// memory evidence's two.
const KILL_TRIGGERS: u32 = 0b1111;
const MEMORY_TRIGGERS: u32 = 0b11 << 4;
/// The first kill trigger, `Killed` as a word: its line counts only where [`shell_killed`]
/// holds.
const KILLED_WORD: u32 = 1;

/// Each trigger is written so that the scan runs its regex only where one of its literals
/// starts a match, or not at all (sets of words): the memory evidence is two sets of words,
/// not one alternation whose matches may start before its literals (nor a bare `exceed`, which
/// every "exceeds clip value" warning would make a candidate), and the shell's `Killed` is
/// matched as a word, its neighbours checked by [`shell_killed`].
static TRIGGERS: &[&str] = &[
    // The kill.
    r"\bKilled(?:\s*$|\s+\S)",
    r"(?i)\bsignal 9\b|\bSIGKILL\b",
    r"(?i)\bexit ?code:? -9\b",
    r"(?i)\b(?:exit(?:ed with)? (?:code|status)|non-zero exit status|returned a non-zero code:?)\s*:?\s*\(?137\b",
    // The memory evidence.
    r"(?i)\b(?:out of memory|oom|memory limit|memory cgroup|Cannot allocate memory|MemoryError|low on memory|insufficient memory)\b",
    r"(?i)\bexceed(?:s|ed|ing)? (?:its |the )?memory\b",
];

/// Whether `line` has the shell's `Killed` (case as written): at the line's start or after a
/// space or a colon, and at its end or before a space (`bash: line 1: 1234 Killed  python
/// train.py`, `/bin/sh: Killed`), not inside a longer word or after other punctuation.
fn shell_killed(line: &str) -> bool {
    let bytes = line.as_bytes();
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
    memchr::memmem::find_iter(bytes, b"Killed").any(|at| {
        let before = at.checked_sub(1).and_then(|i| bytes.get(i)).is_none_or(|&b| space(b) || b == b':');
        let after = bytes.get(at + 6).is_none_or(|&b| space(b));
        before && after
    })
}

static KILL: Lazy = Lazy::new(|| {
    re(
        r"(?i)(?:(?:^|[\s:])Killed(?:\s*$|\s+(?u:\S))|\bsignal 9\b|\bSIGKILL\b|\bexit ?code:? -9\b|\b(?:exit(?:ed with)? (?:code|status)|non-zero exit status|returned a non-zero code:?)\s*:?\s*\(?137\b)",
    )
});
/// Lines that name a kill or memory but are not evidence of the job's host memory: a launcher
/// killing the surviving ranks, GPU memory (its own entries weigh it), shared memory
/// (`/dev/shm` is a size fixed by the container or the node, not the job's memory request; a
/// worker "killed by signal: Bus error" for lack of it is not a SIGKILL either), a guess
/// (gunicorn's "was sent SIGKILL! Perhaps out of memory?" is printed for any SIGKILL), and a
/// tool's note of its own configured limit ("Using 1 worker with 2048MB memory limit").
/// Docker's "Memory limited without swap" is no evidence either: it warns of the kernel's
/// swap accounting at every container start. Spark on Kubernetes writes "(SIGKILL, possible
/// container OOM)" after every executor exit 137, whatever killed it: a guess too (the pod's
/// own termination reason, OOMKilled, is the evidence when it is shown). Those tails are
/// labelled ambiguous in the corpus.
static NOT_EVIDENCE: Lazy = Lazy::new(|| {
    re(
        r"(?i)\bclosing signal\b|\b(?:CUDA|GPU|HIP|cudaMalloc|CUBLAS|cuDNN|device memory)\b|\bshared memory\b|/dev/shm\b|\bBus error\b|\bPerhaps out of memory\?|\bpossible container OOM\b|\bwith \d+ ?[KMG]i?B memory limit\b",
    )
});

/// Whether `line` has "killed" in any case (`KILL`'s first alternative ignores case; its
/// trigger does not).
fn says_killed(line: &str) -> bool {
    let bytes = line.as_bytes();
    memchr::memchr2_iter(b'k', b'K', bytes)
        .any(|at| bytes.get(at + 1..at + 6).is_some_and(|rest| rest.eq_ignore_ascii_case(b"illed")))
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The kernel's "Out of memory: Killed process N" is memory evidence, not a kill of
    // the job's own process as a shell or launcher reports it.
    let evidence = |i: &usize| !NOT_EVIDENCE.is_match(input.line(*i));
    // `KILL` is the kill triggers in one regex, with `Killed` in any case: a line one of
    // them woke matches it (unless only the kernel's report made it match), and only a line
    // that says "killed" in another case can match it without them.
    let is_kill = |(&i, &t): (&usize, &u32)| {
        let l = input.line(i);
        if l.contains("Killed process") {
            KILL.is_match(&l.replace("Killed process", ""))
        } else {
            let other_kill = t & KILL_TRIGGERS & !KILLED_WORD != 0;
            other_kill || (t & KILLED_WORD != 0 && shell_killed(l)) || (says_killed(l) && KILL.is_match(l))
        }
    };
    let kill_line =
        input.woken.iter().zip(input.triggered).rev().find(|&w| is_kill(w) && evidence(w.0)).map(|(&i, _)| i);
    let code = input.ctx.exit_code.filter(|c| matches!(c, 137 | -9));
    if kill_line.is_none() && code.is_none() {
        return None;
    }
    let oom_state = input.ctx.scheduler_state == Some(SchedulerState::OutOfMemory);
    // The memory triggers (the last two of `TRIGGERS`) are the memory evidence: the lines they woke.
    let memory_line = input.woken_by(MEMORY_TRIGGERS).rev().find(evidence);
    if memory_line.is_none() && !oom_state {
        return None;
    }
    let at = kill_line.or(memory_line)?;
    let confirmed_by = match (code, oom_state) {
        (Some(c), _) => Some(format!("exit code {c}")),
        (None, true) => Some("scheduler state OUT_OF_MEMORY".to_string()),
        (None, false) => None,
    };
    Some(Finding { outcome: outcome(OUTCOMES, MEMORY), line: at, confirmed_by })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&KILL, &NOT_EVIDENCE],
    analyze,
    examples: &[
        // Memory evidence worded as exceeding the memory: the kill's memory.
        Example {
            text: "bash: line 1: 4242 Killed                  python train.py\n\
                   WARNING: the step exceeded its memory request",
            exit_code: None,
            expect: Some(MEMORY),
        },
        // `Killed` inside a hyphenated word is not the shell's report of a kill.
        Example {
            text: "cgroup memory limit reached\nwatchdog: worker-3 auto-Killed by supervisor",
            exit_code: None,
            expect: None,
        },
        // Shared memory is not the job's memory request, and a bus error is not a SIGKILL.
        Example {
            text: "RuntimeError: DataLoader worker (pid 3216) is killed by signal: Bus error. It is possible \
                   that dataloader's workers are out of shared memory. Please try to raise your shared memory \
                   limit.",
            exit_code: None,
            expect: None,
        },
        // Boilerplate and guesses are not memory evidence.
        Example {
            text: "Command exit status:\n  137\nCommand error:\n  WARNING: Your kernel does not support swap \
                   limit capabilities or the cgroup is not mounted. Memory limited without swap.",
            exit_code: Some(137),
            expect: None,
        },
        Example {
            text: "[2024-02-15 02:53:24 +0000] [1] [ERROR] Worker (pid:26) was sent SIGKILL! Perhaps out of memory?",
            exit_code: None,
            expect: None,
        },
        // Spark's guess after every executor exit 137 is no evidence either.
        Example {
            text: "The executor with id 32 exited with exit code 137 (SIGKILL, possible container OOM).\n\
                   The API gave the following container statuses:\n    container state: terminated",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "The executor with id 7 exited with exit code 137 (SIGKILL, possible container OOM).\n\
                   slurmstepd: error: Detected 1 oom-kill event in StepId=42.batch.",
            exit_code: Some(137),
            expect: Some(MEMORY),
        },
        Example {
            text: "Using 1 worker with 2048MB memory limit\nst Killed\nnpm ERR! errno 137",
            exit_code: Some(137),
            expect: None,
        },
        Example {
            text: "Worker (pid:26) was sent SIGKILL! Perhaps out of memory?\n\
                   slurmstepd: error: Detected 1 oom-kill event in StepId=42.batch.",
            exit_code: Some(137),
            expect: Some(MEMORY),
        },
        Example {
            text: "/var/spool/slurmd/job42/slurm_script: line 9: 1234 Killed  python train.py\n\
                   slurmstepd: error: Detected 1 oom-kill event in StepId=42.batch.",
            exit_code: None,
            expect: Some(MEMORY),
        },
        Example {
            text: "MemoryError: Unable to allocate array\nmpirun noticed that process rank 0 exited on signal 9 (Killed).",
            exit_code: None,
            expect: Some(MEMORY),
        },
        Example { text: "worker: memory limit reached, RSS 31.9 GiB", exit_code: Some(-9), expect: Some(MEMORY) },
        Example {
            text: "Process `align (3)` terminated with an error exit status (137) -- out of memory",
            exit_code: None,
            expect: Some(MEMORY),
        },
        // A kill with no reason given is not this analyzer's call.
        Example {
            text: "mpirun noticed that process rank 0 with PID 21183 on node node01 exited on signal 9 (Killed).",
            exit_code: Some(137),
            expect: None,
        },
        Example {
            text: "failed (exitcode: -9) local_rank: 0 (pid: 1322) of binary: python",
            exit_code: None,
            expect: None,
        },
        // Memory words without a kill: a Python MemoryError is its own entry's.
        Example { text: "MemoryError", exit_code: Some(1), expect: None },
        Example { text: "Out of memory: Killed process 4242 (python)", exit_code: None, expect: None },
        // GPU memory and a launcher stopping the other ranks are not the job's host memory.
        Example {
            text: "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n\
                   WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4243 closing signal SIGKILL",
            exit_code: Some(1),
            expect: None,
        },
    ],
};
