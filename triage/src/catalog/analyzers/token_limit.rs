//! A model API's rate limit weighed by the request against the limit.
//!
//! OpenAI, Azure OpenAI and Groq say, when they throttle, which window's limit a request hit
//! and by how much: `Rate limit reached for gpt-4o … on tokens per min (TPM): Limit 30000, Used
//! 14567, Requested 24754.` What a rerun does follows from the numbers:
//!
//! - The request alone is more than the whole limit (`Limit 7000, Used 0, Requested ~12903`):
//!   no window ever has room for it, however long the job waits. Permanent: shorten the prompt
//!   or the output budget, split the input, or move to a tier with a higher limit. The reply
//!   still says "Please try again in 50s", and the throttling entries alone would retry it.
//! - The request fits the limit and the window's usage fills the rest: the window passes and a
//!   retry with backoff fits. No finding: the throttling entries decide (transient).

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const TOO_LARGE: &str = "token-limit/request-exceeds-limit";

static OUTCOMES: &[Outcome] = &[Outcome {
    id: TOO_LARGE,
    class: EntryClass::Permanent,
    category: "bad_input",
    action: SuggestedAction::Fail,
    strategy: Strategy::Abort,
    priority: 20,
    hint: "The model API refused one request that alone is larger than the rate limit's whole window \
           (Requested is more than Limit): no wait makes room for it, though the reply says to try again. \
           Shorten the prompt or the output budget, split the input into smaller requests, or move to a \
           tier with a higher limit.",
}];

const NUMBERS_RE: &str = r"(?i)\bLimit:? ([\d,]+), Used:? ([\d,]+), Requested:? ~?([\d,]+)\b";

static TRIGGERS: &[&str] = &[NUMBERS_RE];

static NUMBERS: Lazy = Lazy::new(|| re(NUMBERS_RE));

/// (limit, requested) as a line states them.
fn limit_and_request(line: &str) -> Option<(u64, u64)> {
    let c = NUMBERS.captures(line)?;
    let number = |i: usize| c.get(i)?.as_str().replace(',', "").parse::<u64>().ok();
    Some((number(1)?, number(3)?))
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    let &i = input.woken.last()?;
    let (limit, requested) = limit_and_request(input.line(i))?;
    (requested > limit).then(|| Finding::text(OUTCOMES, TOO_LARGE, i))
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&NUMBERS],
    analyze,
    examples: &[
        Example {
            text: "Error: Error code: 429 - {'error': {'message': 'Rate limit reached for model `llama3-70b-8192` in \
                   organization `org_x` on tokens per minute (TPM): Limit 7000, Used 0, Requested ~12903. Please try \
                   again in 50.597142857s. Visit https://console.groq.com/docs/rate-limits for more information.'}}",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "openai.RateLimitError: Error code: 429 - Request too large for gpt-4o in organization org-x on tokens \
                   per min (TPM): Limit 30,000, Used 1,024, Requested 45,112.",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        // Fits the limit; the window's usage fills the rest: the throttling entries decide.
        Example {
            text: "429: Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, \
                   Used 14567, Requested 24754. Please try again in 18.642s.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "Rate limit reached for model `llama3-70b-8192` on tokens per day (TPD): Limit 500000, Used 500370, \
                   Requested 252. Please try again in 1m47.5854s.",
            exit_code: None,
            expect: None,
        },
        Example { text: "Rate limit reached. Limit exceeded, please wait.", exit_code: None, expect: None },
    ],
};
