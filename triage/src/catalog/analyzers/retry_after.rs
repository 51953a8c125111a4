//! A throttling reply weighed by how long it asks the caller to wait.
//!
//! APIs that throttle say when to come back: Azure OpenAI's `Please retry after 86400
//! seconds`, OpenAI's `Please try again in 7m12s` (Go-style durations, down to `859ms`),
//! Gemini's `Please retry in 41.569s`, a gateway's `Try again in 43200 seconds`, Django REST
//! framework's `Request was throttled. Expected available in 86400 seconds.`; Telegram's in
//! seconds without a unit (the Bot API's `Too Many Requests: retry after 35` and
//! `"retry_after": 35`, MTProto's `FLOOD_WAIT_81227` and `A wait of 81227 seconds is
//! required`); a program's own words after a throttling reply on the same line (`Rate limit
//! hit ... needs to rest for 83276 seconds`, `429 ... please wait 11 seconds`: only on a line
//! that names the rate limit, since "wait for 3 hours" alone says nothing). A wait of
//! seconds or minutes is a per-minute window: a retry with backoff passes, and the throttling
//! entries already say so. A wait of **two hours or more** is a daily or monthly quota of the
//! account's tier that is used up: a job retried within its backoff (seconds to minutes)
//! fails the same way until the quota resets. Permanent (quota); the hint names the fixes.
//! Shorter waits give no finding.

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const HOURS: &str = "retry-after/hours";

static OUTCOMES: &[Outcome] = &[Outcome {
    id: HOURS,
    class: EntryClass::Permanent,
    category: "quota",
    action: SuggestedAction::Fail,
    strategy: Strategy::Abort,
    priority: 20,
    hint: "The API throttled the job with a wait of hours: a daily or monthly token or request quota of \
           the account's tier is used up (e.g. Azure OpenAI's 'retry after 86400 seconds'), not a \
           per-minute window. A rerun now fails the same way; raise the quota or tier, or schedule the \
           job after the reset.",
}];

/// The units of time the replies use, longest names first (so `ms` is not read as `m`).
macro_rules! units {
    () => {
        "milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d"
    };
}

/// One amount of time: a number and its unit.
const AMOUNT: &str = concat!(r"(?i)(\d+(?:\.\d+)?) ?(", units!(), ")");
/// A wait: one or more amounts (`7m12s`, `86400 seconds`).
const WAIT_RE: &str = concat!(
    r"(?i)\b(?:retry after|try again (?:in|after)|retry in|expected available in)\s+((?:\d+(?:\.\d+)? ?(?:",
    units!(),
    r") ?)+)\b"
);

/// A wait in seconds with no unit written (Telegram's forms).
const SECONDS_RE: &str = r#"(?i)\bFLOOD_WAIT_(\d+)\b|\bA wait of (\d+) seconds is required\b|"retry_after"\s*:\s*(\d+(?:\.\d+)?)|\bToo Many Requests: retry after (\d+)\b"#;

/// A wait in a program's own words, after the throttling reply it names on the same line.
const THROTTLED_WAIT_RE: &str = concat!(
    r"(?i)(?:\brate[ _-]?limit|\bquota\b|\bthrottl|\b429\b|\btoo many requests\b|\bflood)[ -~]{0,200}?",
    r"\b(?:wait|rest|sleep|pause)(?:ing)?(?: for)?\s+((?:\d+(?:\.\d+)? ?(?:",
    units!(),
    r") ?)+)\b"
);

static TRIGGERS: &[&str] = &[WAIT_RE, SECONDS_RE, THROTTLED_WAIT_RE];

static WAIT: Lazy = Lazy::new(|| re(WAIT_RE));
static SECONDS: Lazy = Lazy::new(|| re(SECONDS_RE));
static THROTTLED_WAIT: Lazy = Lazy::new(|| re(THROTTLED_WAIT_RE));
static PART: Lazy = Lazy::new(|| re(AMOUNT));

/// A wait this long is a quota's reset, not a throttling window (seconds).
const QUOTA_WAIT: f64 = 2.0 * 3600.0;

/// The wait a line asks for, in seconds (`7m12s` is 432).
fn wait(line: &str) -> Option<f64> {
    let Some(c) = WAIT.captures(line).or_else(|| THROTTLED_WAIT.captures(line)) else {
        let c = SECONDS.captures(line)?;
        return (1..=4).find_map(|g| c.get(g))?.as_str().parse().ok();
    };
    let spec = c.get(1)?.as_str();
    let mut seconds = 0.0;
    for part in PART.captures_iter(spec) {
        let n: f64 = part.get(1)?.as_str().parse().ok()?;
        let unit = part.get(2)?.as_str().to_ascii_lowercase();
        let scale = match unit.as_str() {
            "ms" | "millisecond" | "milliseconds" => 0.001,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
            _ => 86400.0,
        };
        seconds += n * scale;
    }
    Some(seconds)
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &i = input.woken.last()?;
    (wait(input.line(i))? >= QUOTA_WAIT).then(|| Finding::text(OUTCOMES, HOURS, i))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&WAIT, &SECONDS, &THROTTLED_WAIT, &PART],
    analyze,
    examples: &[
        Example {
            text: "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2023-05-15 have \
                   exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after 86400 seconds.",
            exit_code: Some(1),
            expect: Some(HOURS),
        },
        Example { text: "Rate limit is exceeded. Try again in 43200 seconds.", exit_code: None, expect: Some(HOURS) },
        Example {
            text: "openai.RateLimitError: Error code: 429 - Rate limit reached for gpt-4 on requests per day (RPD): \
                   Limit 10000, Used 10000, Requested 1. Please try again in 8h38m24s.",
            exit_code: Some(1),
            expect: Some(HOURS),
        },
        Example { text: "Quota exceeded for the day. Please retry in 3 hours.", exit_code: None, expect: Some(HOURS) },
        // Django REST framework's throttle, thirteen days away.
        Example {
            text: "Exception: Request was throttled. Expected available in 1154515 seconds.",
            exit_code: None,
            expect: Some(HOURS),
        },
        Example {
            text: "telethon.errors.rpcerrorlist.FloodWaitError: A wait of 81227 seconds is required (caused by ImportChatInviteRequest)",
            exit_code: Some(1),
            expect: Some(HOURS),
        },
        Example { text: r#"            "message": "FLOOD_WAIT_81227","#, exit_code: None, expect: Some(HOURS) },
        Example {
            text: r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 14400","parameters":{"retry_after":14400}}"#,
            exit_code: None,
            expect: Some(HOURS),
        },
        Example {
            text: "[__main__][ERROR ]Rate limit hit, please try after:83276 The program now needs to rest for 83276 seconds",
            exit_code: None,
            expect: Some(HOURS),
        },
        Example {
            text: "Daily quota exhausted; sleeping for 6 hours before the next request",
            exit_code: None,
            expect: Some(HOURS),
        },
        // Per-minute windows: the throttling entries decide.
        Example {
            text: "Error: rate limit exceeded--- check your retry rate!429--- Rate limit exceeded. Please wait 11 seconds.",
            exit_code: None,
            expect: None,
        },
        // A long wait on a line that names no throttling is not one.
        Example { text: "Waiting for 3 hours for the lock on /scratch/run.lock", exit_code: None, expect: None },
        Example { text: "Please retry after 6 seconds.", exit_code: None, expect: None },
        Example { text: "Request was throttled. Expected available in 42 seconds.", exit_code: None, expect: None },
        Example { text: "Rate limit is exceeded. Try again in 59 seconds.", exit_code: None, expect: None },
        Example { text: "Please retry after 1200 seconds.", exit_code: None, expect: None },
        Example {
            text: "Rate limit reached for gpt-4 on tokens per min (TPM): Limit 10000, Used 8554, Requested 3082. Please try again in 9.816s.",
            exit_code: None,
            expect: None,
        },
        Example { text: "Please try again in 1h30m0s.", exit_code: None, expect: None },
        Example { text: "Please try again in 859ms.", exit_code: None, expect: None },
        Example {
            text: r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 35","parameters":{"retry_after":35}}"#,
            exit_code: None,
            expect: None,
        },
        Example {
            text: "telethon.errors.rpcerrorlist.FloodWaitError: A wait of 27 seconds is required",
            exit_code: None,
            expect: None,
        },
        // The last wait decides: a daily quota's earlier reply, then a short window.
        Example {
            text: "Please retry after 86400 seconds.\nWARN  GET https://registry.npmjs.org/x error. Will retry in 10 seconds.",
            exit_code: None,
            expect: None,
        },
    ],
};
