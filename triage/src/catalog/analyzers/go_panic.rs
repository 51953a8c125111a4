//! A Go runtime panic weighed by the goroutine it happened in.
//!
//! A Go panic prints `panic: runtime error: ...` and then the stack of the goroutine that
//! panicked, headed `goroutine N [running]:`. Goroutine 1 runs `main`: a nil dereference or
//! an index out of range there is sequential code failing the same way on the same input,
//! permanent. In any other goroutine the code runs concurrently, and the crash may be a data
//! race that a rerun may or may not hit; it was context (unknown) on that ground, but the
//! corpus labels such tails fail (five of six in the tuning share, three of three in the
//! batches scored before their entries were written: a nil configuration, client or result
//! dereferenced in a handler or worker, the same on every run). Permanent too, with its own
//! hint (a race is still possible, and `-race` finds it). Priority 12: above
//! `go-nil-dereference` (11) and the `segfault` context entry (10), which the
//! runtime's `[signal SIGSEGV: segmentation violation]` line also matches.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const MAIN: &str = "go-panic/main-goroutine";
const OTHER: &str = "go-panic/concurrent-goroutine";

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: MAIN,
        class: EntryClass::Permanent,
        category: "code_bug",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 12,
        hint: "A Go runtime panic in goroutine 1, the program's main path: sequential code that fails the \
               same way on the same input and configuration. Fix the code or the input it trips on.",
    },
    Outcome {
        id: OTHER,
        class: EntryClass::Permanent,
        category: "code_bug",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 12,
        hint: "A Go runtime panic in a background goroutine (a handler or worker): most often a nil \
               configuration, client or result dereferenced there, which fails the same way on every run. \
               Fix the code or its configuration; if the crash comes and goes, it is a data race (run with \
               -race to find it).",
    },
];

static TRIGGERS: &[&str] = &[r"^panic: runtime error: ", r"^\s*goroutine \d+ \[running\]:"];

static PANIC: Lazy = Lazy::new(|| re(r"^panic: runtime error: "));
static GOROUTINE: Lazy = Lazy::new(|| re(r"^\s*goroutine (\d+) \[running\]:"));

/// How far below the panic line its goroutine header may be.
const HEADER_WITHIN: usize = 8;

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &p = input.woken.iter().rev().find(|&&i| input.lines.get(i).is_some_and(|l| PANIC.is_match(l)))?;
    let g = input.woken.iter().find(|&&i| i > p && i <= p + HEADER_WITHIN)?;
    let n: u64 = GOROUTINE.captures(input.lines.get(*g)?)?.get(1)?.as_str().parse().ok()?;
    let id = if n == 1 { MAIN } else { OTHER };
    Some(Finding::text(OUTCOMES, id, p))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&PANIC, &GOROUTINE],
    analyze,
    examples: &[
        Example {
            text: "panic: runtime error: invalid memory address or nil pointer dereference\n\
                   [signal SIGSEGV: segmentation violation code=0x1 addr=0x98 pc=0xe1d30f]\n\
                   \n\
                   goroutine 1 [running]:\n\
                   main.main()\n\
                   \t/app/main.go:69 +0x1af",
            exit_code: Some(2),
            expect: Some(MAIN),
        },
        Example {
            text: "panic: runtime error: invalid memory address or nil pointer dereference\n\
                   [signal SIGSEGV: segmentation violation code=0x1 addr=0xa0 pc=0x4d0ca6]\n\
                   \n\
                   goroutine 154 [running]:\n\
                   os/exec.(*Cmd).Wait(0x0)",
            exit_code: Some(2),
            expect: Some(OTHER),
        },
        Example {
            text: "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 7 [running]:",
            exit_code: None,
            expect: Some(OTHER),
        },
        // No goroutine header: the entries decide.
        Example {
            text: "panic: runtime error: invalid memory address or nil pointer dereference",
            exit_code: None,
            expect: None,
        },
        // A panic of the program's own (not the runtime's): the entries decide.
        Example { text: "panic: config file missing\n\ngoroutine 1 [running]:", exit_code: None, expect: None },
    ],
};
