//! A Java heap exhaustion weighed by where the heap's size comes from.
//!
//! `OutOfMemoryError: Java heap space` (or `GC overhead limit exceeded`) says the heap was
//! too small for the work. Whether a retry with more memory helps depends on what sets the
//! heap:
//!
//! - A `-Xmx` (or `-XX:MaxHeapSize`, Spark's `--driver-memory`/`--executor-memory`) visible in
//!   the tail fixes the heap: more memory for the job changes nothing, the flag must change.
//!   Permanent (configuration), all the more under a tiny heap.
//! - No such flag in the tail: permanent too. A heap that runs out is sized by the job's own
//!   settings almost always: a wrapper script, `JAVA_TOOL_OPTIONS`, `MAVEN_OPTS`, a tool's or
//!   Spark's default executor memory. Only where the JVM sized the heap from the container's
//!   memory would more memory alone help, and the tail cannot show that; the labelled corpus
//!   calls every bare heap error `fail` (re-running unchanged fails the same way). The hint
//!   names both fixes.
//!
//! The JVM limits that no heap size cures (`Requested array size exceeds VM limit`) and a
//! heap the JVM cannot even reserve stay with the `java-heap` entry (permanent).

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, bytes, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const FIXED: &str = "java-heap/fixed-heap-too-small";
const SIZED: &str = "java-heap/size-not-shown";

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: FIXED,
        class: EntryClass::Permanent,
        category: "jvm_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 20,
        hint: "The Java heap ran out under a heap size fixed on the command line (-Xmx or the Spark \
               memory options shown): a retry with the same flag fails the same way, whatever memory \
               the job gets. Raise the heap setting (and the job's memory with it) or reduce the work.",
    },
    Outcome {
        id: SIZED,
        class: EntryClass::Permanent,
        category: "jvm_oom",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 20,
        hint: "The Java heap ran out and no heap size is visible in the tail: the heap is sized by the \
               job's settings (a -Xmx in a wrapper, JAVA_TOOL_OPTIONS, MAVEN_OPTS, Spark's executor or \
               driver memory, a tool's default), so re-running unchanged fails the same way. Raise that \
               setting (and the job's memory with it), or reduce the work; if nothing sets -Xmx, the JVM \
               took a fraction of the job's memory, and more memory for the job raises it.",
    },
];

/// The JVM's own report, and the short forms tools print for it: Hadoop's task diagnostics
/// (`Error: Java heap space`), Maven (`[ERROR] Java heap space -> [Help 1]`), a line alone.
static TRIGGERS: &[&str] = &[
    r"\bOutOfMemoryError: (?:Java heap space|GC overhead limit exceeded)",
    r"(?:\bError: |\[ERROR\] |^\s*)Java heap space\b",
];

static HEAP_FLAG: Lazy = Lazy::new(|| {
    re(
        r"(?:-Xmx|-XX:MaxHeapSize=|--(?:driver|executor)-memory[= ]|spark\.(?:driver|executor)\.memory[= ])(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)[bB]?\b",
    )
});

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &i = input.woken.last()?;
    let fixed = input.lines.iter().any(|l| {
        HEAP_FLAG.captures_iter(l).any(|c| {
            let unit = c.get(2).map_or("", |u| u.as_str());
            c.get(1).and_then(|n| bytes(n.as_str(), unit)).is_some()
        })
    });
    Some(Finding::text(OUTCOMES, if fixed { FIXED } else { SIZED }, i))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&HEAP_FLAG],
    analyze,
    examples: &[
        Example {
            text: "+ java -Xmx256m -jar picard.jar MarkDuplicates I=in.bam O=out.bam\n\
                   Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n\
                   \tat java.util.Arrays.copyOf(Arrays.java:3332)",
            exit_code: Some(1),
            expect: Some(FIXED),
        },
        Example {
            text: "Picked up _JAVA_OPTIONS: -Xmx2g\njava.lang.OutOfMemoryError: GC overhead limit exceeded",
            exit_code: Some(1),
            expect: Some(FIXED),
        },
        Example {
            text: "spark-submit --driver-memory 1g --class Main app.jar\n\
                   java.lang.OutOfMemoryError: Java heap space",
            exit_code: None,
            expect: Some(FIXED),
        },
        Example {
            text: "21/02/03 07:55:00 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 5)\n\
                   java.lang.OutOfMemoryError: GC overhead limit exceeded\n\
                   \tat java.util.Arrays.copyOfRange(Arrays.java:3664)",
            exit_code: None,
            expect: Some(SIZED),
        },
        Example {
            text: "Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space",
            exit_code: Some(1),
            expect: Some(SIZED),
        },
        // Limits no heap size cures are the java-heap entry's, not this analyzer's.
        Example {
            text: "java -Xmx64g -jar x.jar\nException in thread \"main\" java.lang.OutOfMemoryError: Requested array size exceeds VM limit",
            exit_code: Some(1),
            expect: None,
        },
        Example { text: "Error: -Xmx512m is set", exit_code: None, expect: None },
        // Hadoop's task diagnostics say it in short.
        Example {
            text: "15/01/28 19:56:57 INFO mapreduce.Job: Task Id : attempt_1422488445419_0003_m_000001_0, Status : FAILED\n\
                   Error: Java heap space",
            exit_code: None,
            expect: Some(SIZED),
        },
        Example { text: "Tuning the Java heap space of the workers", exit_code: None, expect: None },
    ],
};
