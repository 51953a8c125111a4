//! Reading back what an agent proposed: the propose-only log `triage-mcp` wrote, one JSON
//! object per line. The last classification of a job wins (the agent may reconsider after
//! validation feedback). Lines that do not parse are counted, never trusted.

use std::collections::BTreeMap;
use std::path::Path;

use crate::engine::Proposal;

/// Proposals by job id, and how many lines were unreadable.
pub fn read(path: &Path) -> (BTreeMap<i64, Proposal>, usize) {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let mut out = BTreeMap::new();
    let mut bad = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = serde_json::from_str::<serde_json::Value>(line).ok().and_then(|v| {
            let id = v.get("job_id")?.as_i64()?;
            let p: Proposal = serde_json::from_value(v.get("proposed")?.clone()).ok()?;
            Some((id, p))
        });
        match parsed {
            Some((id, p)) => {
                out.insert(id, p);
            }
            None => bad += 1,
        }
    }
    (out, bad)
}
