//! `triage suggest` proposes Torc `failure_handlers` rules from history, on a real Torc server
//! with Torc's own runner: an exit code whose retries all worked gets a rule, one whose retry
//! failed again does not, and the proposed YAML, put in a new workflow spec, makes Torc retry
//! that exit code by itself, with no triage in the loop.

mod torc_support;

use std::process::Command;

use serde_json::Value;
use torc_support::{
    JobSpec, TorcServer, created_workflow, jobs_by_name, stderr, stdout, torc_bin, torc_run, triage, write_spec,
};

/// Fails once with `code` and a transient-looking line, then succeeds (a marker file per job).
fn flaky(name: &str, code: i32) -> JobSpec {
    JobSpec::new(
        name,
        &format!(
            r#"if [ -f "$TORC_OUTPUT_DIR/{name}.marker" ]; then echo recovered; else touch "$TORC_OUTPUT_DIR/{name}.marker"; echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit {code}; fi"#
        ),
    )
}

fn create(url: &str, spec: &std::path::Path) -> i64 {
    let o = Command::new(torc_bin("torc"))
        .arg("create")
        .arg(spec)
        .env("TORC_API_URL", url)
        .env_remove("TORC_PASSWORD")
        .output()
        .expect("torc create");
    assert!(o.status.success(), "torc create {}: {}", spec.display(), String::from_utf8_lossy(&o.stderr));
    created_workflow(&o)
}

#[test]
fn suggest_proposes_failure_handler_rules_that_torc_then_applies_by_itself() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let server = TorcServer::start(&tmp.path().join("torc.db"));
    let url = server.url();
    let out = tmp.path().join("torc_output");
    let jobs = vec![
        flaky("flaky_a", 75),
        flaky("flaky_b", 75),
        // The same transient-looking line under exit 76, every time: its retry fails again.
        JobSpec::new("stubborn", "echo 'ConnectionResetError: [Errno 104] Connection reset by peer' >&2; exit 76"),
    ];
    let spec = write_spec(tmp.path(), &jobs);
    let wf = create(&url, &spec);
    let wf_s = wf.to_string();

    // Torc's runner fails all three; the catalog retries them (no agent); the runner again.
    torc_run(&url, &wf_s, &out);
    let o =
        triage(tmp.path(), &url, &out, &["run", "--workflow", &wf_s, "--agent", "rules", "--json"], &[("CI", "true")]);
    assert!(o.status.code().is_some_and(|c| c == 0 || c == 2), "triage run: {}", stderr(&o));
    torc_run(&url, &wf_s, &out);
    let now = jobs_by_name(&url, wf);
    assert_eq!((now["flaky_a"].1.as_str(), now["flaky_a"].2), ("completed", 2), "{now:?}");
    assert_eq!((now["flaky_b"].1.as_str(), now["flaky_b"].2), ("completed", 2), "{now:?}");
    assert_eq!((now["stubborn"].1.as_str(), now["stubborn"].2), ("pending_failed", 2), "{now:?}");

    let o = triage(tmp.path(), &url, &out, &["suggest", "--workflow", &wf_s, "--json"], &[]);
    assert!(o.status.success(), "suggest: {}", stderr(&o));
    let s: Value = serde_json::from_slice(&o.stdout).expect("suggest JSON");
    let rules = s["failure_handler_rules"].as_array().cloned().unwrap_or_default();
    assert_eq!(rules.len(), 1, "one rule, for exit 75 only: {s:#}");
    assert_eq!(rules[0]["exit_code"], 75);
    assert_eq!(rules[0]["retries_that_worked"], 2);
    // Each job needed one retry; Torc retries while the attempt is below max_retries.
    assert_eq!(rules[0]["max_retries"], 2, "{s:#}");

    // The text a person reads carries the YAML block; put it in a new spec as Torc documents.
    let o = triage(tmp.path(), &url, &out, &["suggest", "--workflow", &wf_s], &[]);
    assert!(o.status.success(), "suggest: {}", stderr(&o));
    let text = stdout(&o);
    let at = text.find("failure_handlers:").unwrap_or_else(|| panic!("no failure_handlers block in:\n{text}"));
    let block: String = text[at..].lines().take_while(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n");
    assert!(block.contains("exit_codes: [75]") && !block.contains("[76]"), "{block}");
    let second = tmp.path().join("with_handler.yaml");
    let yaml = format!(
        "name: handled\nuse_pending_failed: true\ncompute_node_wait_for_new_jobs_seconds: 1\n{block}\njobs:\n  - name: flaky_c\n    command: {cmd_c}\n    failure_handler: triage_suggested\n  - name: other_code\n    command: \"echo nope >&2; exit 76\"\n    failure_handler: triage_suggested\n",
        cmd_c = serde_json::to_string(&flaky("flaky_c", 75).command).expect("json string"),
    );
    std::fs::write(&second, yaml).expect("write spec");
    let wf2 = create(&url, &second);
    let out2 = tmp.path().join("torc_output2");
    torc_run(&url, &wf2.to_string(), &out2);
    let after = jobs_by_name(&url, wf2);
    // Torc's handler retried exit 75 by itself; exit 76 matches no rule and waits for triage.
    assert_eq!((after["flaky_c"].1.as_str(), after["flaky_c"].2), ("completed", 2), "{after:?}");
    assert_eq!(after["other_code"].1, "pending_failed", "{after:?}");
}
