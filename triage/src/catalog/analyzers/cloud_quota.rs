//! A cloud quota refusal weighed by its numbers.
//!
//! Clouds refuse a launch that would exceed a quota, and several say by how much:
//!
//! - AWS (SageMaker and other services): `The account-level service limit '…' is 4 Instances,
//!   with current utilization of 0 Instances and a request delta of 11 Instances`.
//! - Azure: `… exceeding approved … quota. … Current Limit: 4, Current Usage: 4, Additional
//!   Required: 2, (Minimum) New Limit Required: 6`.
//! - Google Cloud: `Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.` (or `Quota limit '…' has
//!   been exceeded. Limit: 0 in region …`), or
//!   `Quota violated: … requested: 85899345920 allowed: 42949672960`.
//! - Kubernetes (a namespace's ResourceQuota): `pods "x" is forbidden: exceeded quota: q,
//!   requested: requests.cpu=8, used: requests.cpu=60, limited: requests.cpu=64`, one
//!   `resource=quantity` per resource (`800m`, `1Gi`, `2G`, `3`), compared resource by resource.
//!
//! What a rerun does follows from the numbers:
//!
//! - The request alone is more than the whole limit (a limit of 0 included): no rerun fits
//!   until someone raises the quota or shrinks the request. Permanent.
//! - The request fits the limit and other work holds the rest (usage + request > limit, with
//!   usage > 0): the quota frees up as that work finishes. Transient where the usage is jobs
//!   (AWS counts a service's training or processing jobs, Kubernetes a namespace's pods).
//!   Azure's regional and family vCPU quotas count every VM and scale set of the subscription:
//!   long-lived VMs hold them as well as batch pools that scale down, and the text does not say
//!   which, so that case is context (unknown, with the numbers in the hint's terms).
//! - Google's `Limit: N` alone with N > 0 does not say what was asked or what is in use: no
//!   finding (the text decides through the entries, or stays unknown).

use super::{Analyzer, Example, Finding, Input, Lazy, Outcome, re};
use crate::model::{EntryClass, Strategy, SuggestedAction};

const TOO_LARGE: &str = "cloud-quota/request-exceeds-limit";
const HELD: &str = "cloud-quota/held-by-other-work";
const HELD_VMS: &str = "cloud-quota/held-by-other-vms";

static OUTCOMES: &[Outcome] = &[
    Outcome {
        id: TOO_LARGE,
        class: EntryClass::Permanent,
        category: "quota",
        action: SuggestedAction::Fail,
        strategy: Strategy::Abort,
        priority: 20,
        hint: "The cloud refused the launch because the request alone is larger than the quota's whole \
               limit (or the limit is zero): no rerun fits until the quota is raised (a support or quota \
               request) or the job asks for fewer instances, cores or GPUs.",
    },
    Outcome {
        id: HELD,
        class: EntryClass::Transient,
        category: "quota",
        action: SuggestedAction::Retry,
        strategy: Strategy::RetryExponential,
        priority: 20,
        hint: "The request fits the quota, but other running work holds the rest of it at the moment: the \
               quota frees up as that work finishes. Retry later with backoff, or run fewer jobs at once.",
    },
    Outcome {
        id: HELD_VMS,
        class: EntryClass::Context,
        category: "quota",
        action: SuggestedAction::Escalate,
        strategy: Strategy::ManualIntervention,
        priority: 20,
        hint: "The request fits the subscription's vCPU quota, but the subscription's other VMs and scale sets \
               hold the rest of it. If they are batch pools or jobs that end, a later retry fits; if they are \
               long-lived VMs, it never does. Check what holds the quota (az vm list-usage) before retrying, \
               and ask for a quota increase or a smaller VM size if it stays.",
    },
];

static TRIGGERS: &[&str] = &[
    r"(?i)\bservice limit '[ -&(-~]*' is [\d.]+ \w+, with current utilization of [\d.]+ \w+ and a request delta of [\d.]+",
    r"(?i)\bCurrent Limit: \d+, Current Usage: \d+, Additional Required: \d+",
    r"(?i)\bQuota (?:limit )?'[\w.-]+' (?:has been )?exceeded\.\s+Limit: [\d.]+",
    r"(?i)\bquota\b[ -~]{0,160}\brequested: ?[\d.]+,? allowed: ?[\d.]+",
    r"(?i)\bis forbidden: exceeded quota: [\w.-]+, requested: [\w./=,-]+, used: [\w./=,-]+, limited: ",
];

/// AWS: limit, utilization, request.
static AWS: Lazy = Lazy::new(|| {
    re(
        r"(?i)\bservice limit '[ -&(-~]*' is ([\d.]+) \w+, with current utilization of ([\d.]+) \w+ and a request delta of ([\d.]+)",
    )
});
/// Azure: limit, usage, request.
static AZURE: Lazy = Lazy::new(|| re(r"(?i)\bCurrent Limit: (\d+), Current Usage: (\d+), Additional Required: (\d+)"));
/// Google: the limit alone.
static GOOGLE_LIMIT: Lazy =
    Lazy::new(|| re(r"(?i)\bQuota (?:limit )?'[\w.-]+' (?:has been )?exceeded\.\s+Limit: ([\d.]+)"));
/// Google: request, limit.
static GOOGLE_REQUESTED: Lazy =
    Lazy::new(|| re(r"(?i)\bquota\b[ -~]{0,160}\brequested: ?([\d.]+),? allowed: ?([\d.]+)"));

/// Kubernetes: requested, used, limited (`resource=quantity` lists).
static KUBERNETES: Lazy = Lazy::new(|| {
    re(
        r"(?i)\bis forbidden: exceeded quota: [\w.-]+, requested: ([\w./=,-]+), used: ([\w./=,-]+), limited: ([\w./=,-]+)",
    )
});

/// A Kubernetes quantity (`800m`, `1.5Gi`, `2G`, `3`) as a number. Not [`super::bytes`]:
/// here `m` is milli and `G` decimal, as Kubernetes writes them, where `bytes` reads `m` as
/// MiB and `G` as GiB, the way the JVM and schedulers do.
fn quantity(q: &str) -> Option<f64> {
    let split = q.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(q.len());
    let (n, unit) = q.split_at(split);
    let scale = match unit {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "Pi" => 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n.parse::<f64>().ok()? * scale)
}

/// `resource=quantity,…` as pairs (`None` if any item does not parse).
fn resources(list: &str) -> Option<Vec<(&str, f64)>> {
    list.split(',')
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, q) = item.split_once('=')?;
            Some((name, quantity(q)?))
        })
        .collect()
}

/// Kubernetes: any resource whose request alone is over its limit decides permanent; else any
/// resource that other pods fill decides transient.
fn judge_kubernetes(line: &str) -> Option<&'static str> {
    let c = KUBERNETES.captures(line)?;
    let [requested, used, limited] = [1, 2, 3].map(|i| c.get(i).and_then(|m| resources(m.as_str())));
    let (requested, used, limited) = (requested?, used?, limited?);
    let find = |list: &[(&str, f64)], name: &str| list.iter().find(|(n, _)| *n == name).map(|&(_, v)| v);
    let verdicts: Vec<&'static str> = requested
        .iter()
        .filter_map(|&(name, request)| weigh(find(&limited, name)?, find(&used, name), request))
        .collect();
    verdicts.iter().find(|&&v| v == TOO_LARGE).or_else(|| verdicts.first()).copied()
}

/// The numbers captured by `re` in `line`, in group order.
fn numbers<const N: usize>(re: &super::Regex, line: &str) -> Option<[f64; N]> {
    let c = re.captures(line)?;
    let mut out = [0.0; N];
    for (i, n) in out.iter_mut().enumerate() {
        *n = c.get(i + 1)?.as_str().parse().ok()?;
    }
    Some(out)
}

/// The outcome for a request against a limit with `usage` in use (`None`: usage unknown).
fn weigh(limit: f64, usage: Option<f64>, request: f64) -> Option<&'static str> {
    if request > limit {
        return Some(TOO_LARGE);
    }
    match usage {
        Some(used) if used > 0.0 && used + request > limit => Some(HELD),
        _ => None,
    }
}

/// The outcome one line supports, if any.
fn judge(line: &str) -> Option<&'static str> {
    if let Some([limit, used, request]) = numbers::<3>(&AWS, line) {
        return weigh(limit, Some(used), request);
    }
    if let Some([limit, used, request]) = numbers::<3>(&AZURE, line) {
        return weigh(limit, Some(used), request).map(|id| if id == HELD { HELD_VMS } else { id });
    }
    if KUBERNETES.is_match(line) {
        return judge_kubernetes(line);
    }
    if let Some([request, limit]) = numbers::<2>(&GOOGLE_REQUESTED, line) {
        return weigh(limit, None, request);
    }
    // Every launch asks for at least one unit: a limit of zero refuses them all.
    numbers::<1>(&GOOGLE_LIMIT, line).filter(|[limit]| *limit == 0.0).map(|_| TOO_LARGE)
}

fn analyze(input: &Input<'_>) -> Option<Finding> {
    // The last refusal with numbers that decide.
    input.woken.iter().rev().find_map(|&i| {
        let id = judge(input.lines.get(i)?)?;
        Some(Finding::text(OUTCOMES, id, i))
    })
}

pub(super) static ANALYZER: Analyzer = Analyzer {
    triggers: TRIGGERS,
    outcomes: OUTCOMES,
    regexes: &[&AWS, &AZURE, &GOOGLE_LIMIT, &GOOGLE_REQUESTED, &KUBERNETES],
    analyze,
    examples: &[
        Example {
            text: "ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the \
                   CreateTrainingJob operation: The account-level service limit 'ml.g5.xlarge for training job \
                   usage' is 0 Instances, with current utilization of 0 Instances and a request delta of 1 \
                   Instances. Please use AWS Service Quotas to request an increase for this quota.",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "botocore.errorfactory.ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when \
                   calling the CreateProcessingJob operation: The account-level service limit 'Number of \
                   instances across all processing jobs' is 4 Instances, with current utilization of 0 \
                   Instances and a request delta of 8 Instances.",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "An error occurred (ResourceLimitExceeded) when calling the CreateTrainingJob operation: The \
                   account-level service limit 'ml.p3.8xlarge for training job usage' is 2 Instances, with \
                   current utilization of 2 Instances and a request delta of 1 Instances.",
            exit_code: None,
            expect: Some(HELD),
        },
        Example {
            text: "(QuotaExceeded) Operation could not be completed as it results in exceeding approved Standard \
                   NCASv3_T4 Family Cores quota. Additional details - Deployment Model: Resource Manager, \
                   Location: southcentralus, Current Limit: 0, Current Usage: 0, Additional Required: 4, \
                   (Minimum) New Limit Required: 4.",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "Operation could not be completed as it results in exceeding approved Total Regional Cores \
                   quota. Additional details - Deployment Model: Resource Manager, Location: eastus2, Current \
                   Limit: 4, Current Usage: 4, Additional Required: 2, (Minimum) New Limit Required: 6.",
            exit_code: None,
            expect: Some(HELD_VMS),
        },
        Example {
            text: "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n - Quota \
                   'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "spec.template.spec.containers[0].resources.limits.memory: Quota violated: \
                   MemAllocPerProjectRegion requested: 85899345920 allowed: 42949672960",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "Error creating Instance: googleapi: Error 429: Quota limit 'StandardInstancesPerProjectPerRegion' \
                   has been exceeded. Limit: 0 in region us-central1.",
            exit_code: Some(1),
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "Error from server (Forbidden): pods \"pod-4\" is forbidden: exceeded quota: compute-quota, \
                   requested: pods=1, used: pods=3, limited: pods=3",
            exit_code: Some(1),
            expect: Some(HELD),
        },
        Example {
            text: "Error from server (Forbidden): error when creating \"Pod2.yml\": pods \"quota-mem-cpu-demo-2\" is \
                   forbidden: exceeded quota: mem-cpu-demo, requested: limits.cpu=800m,limits.memory=1Gi,\
                   requests.cpu=400m,requests.memory=700Mi, used: limits.cpu=1800m,limits.memory=1056Mi,\
                   requests.cpu=900m,requests.memory=728Mi, limited: limits.cpu=2,limits.memory=2Gi,\
                   requests.cpu=1,requests.memory=1Gi",
            exit_code: Some(1),
            expect: Some(HELD),
        },
        Example {
            text: "Warning  FailedCreate  replicaset-controller  Error creating: pods \"restricteddeploy-869775475b-264wg\" \
                   is forbidden: exceeded quota: mylimits, requested: memory=2G, used: memory=0, limited: memory=1G",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        Example {
            text: "message: jobs.batch \"ptah-crd-reconcile\" is forbidden: exceeded quota: e2e-install-quota, \
                   requested: count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0\"",
            exit_code: None,
            expect: Some(TOO_LARGE),
        },
        // The request fits and nothing else is in use: the numbers do not explain the refusal.
        Example {
            text: "pods \"x\" is forbidden: exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=0, \
                   limited: requests.cpu=4",
            exit_code: None,
            expect: None,
        },
        // A non-zero Google limit alone: what was asked and what is in use are not shown.
        Example {
            text: " - Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1.",
            exit_code: None,
            expect: None,
        },
        // Nothing else in use and the request fits: the numbers do not explain the refusal.
        Example {
            text: "Current Limit: 10, Current Usage: 0, Additional Required: 4, (Minimum) New Limit Required: 4.",
            exit_code: None,
            expect: None,
        },
        Example {
            text: "Quota violated: CpuAllocPerProjectRegion requested: 4000 allowed: 8000",
            exit_code: None,
            expect: None,
        },
    ],
};
