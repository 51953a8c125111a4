//! Tests of [`super`]: realistic tails that differ only in noise collide, different failures do
//! not, and a fixed input keeps a fixed signature (so a change of the algorithm is noticed).

use super::*;

/// Pairs of tails from jobs that died the same way, differing only in noise.
const SAME: &[(&str, &str, &str)] = &[
    (
        "NCCL watchdog, different ranks, times, sequence numbers, rank counts",
        "[rank3]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.\n\
         [rank1]:[E321 02:07:08.414641002 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for 600029 milliseconds before timing out.\n\
         [rank3]:[E321 02:07:09.001 ProcessGroupNCCL.cpp:1413] [PG 0 Rank 3] Process group watchdog thread terminated with exception: NCCL timeout\n",
        "[rank6]:[E409 17:41:22.000112 ProcessGroupNCCL.cpp:616] [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600002 milliseconds before timing out.\n\
         [rank6]:[E409 17:41:23.5 ProcessGroupNCCL.cpp:1413] [PG 0 Rank 6] Process group watchdog thread terminated with exception: NCCL timeout\n",
    ),
    (
        "Slurm time limit, different job ids, hosts, times",
        "epoch 3 step 1200 loss 0.41\nslurmstepd: error: *** JOB 4417123 ON node023 CANCELLED AT 2024-03-21T02:07:08 DUE TO TIME LIMIT ***\n",
        "epoch 7 step 88 loss 0.39\nslurmstepd: error: *** JOB 4419999 ON orion-01-04 CANCELLED AT 2024-04-02T23:59:01 DUE TO TIME LIMIT ***\n",
    ),
    (
        "cgroup OOM kill, different step ids",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=4417.batch. Some of the step tasks have been OOM Killed.\n",
        "loading data\nslurmstepd: error: Detected 3 oom_kill events in StepId=9921.0. Some of the step tasks have been OOM Killed.\n",
    ),
    (
        "Python traceback under per-job temporary directories",
        "Traceback (most recent call last):\n  File \"/tmp/job_8812/work/train.py\", line 42, in <module>\n    main()\n  File \"/tmp/job_8812/work/train.py\", line 17, in main\n    data = load('/scratch/u/job_8812/in.csv')\nFileNotFoundError: [Errno 2] No such file or directory: '/scratch/u/job_8812/in.csv'\n",
        "Traceback (most recent call last):\n  File \"/tmp/tmpk2j3h4/work/train.py\", line 42, in <module>\n    main()\n  File \"/tmp/tmpk2j3h4/work/train.py\", line 17, in main\n    data = load('/scratch/u/job_9/in.csv')\nFileNotFoundError: [Errno 2] No such file or directory: '/scratch/u/job_9/in.csv'\n",
    ),
    (
        "connection refused to the rendezvous, different hosts and ports (ports fold)",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node023]:29500 (errno: 111 - Connection refused).\nRuntimeError: Connection refused\n",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [gpu-b07]:41877 (errno: 111 - Connection refused).\nRuntimeError: Connection refused\n",
    ),
    (
        "CUDA out of memory, different sizes and GPUs",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 10.81 MiB is free. Process 12345 has 79.13 GiB memory in use.\n",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Process 777 has 78.11 GiB memory in use.\n",
    ),
    (
        "segfault, different addresses and PIDs, progress before it",
        " 45%|████▌     | 450/1000 [00:12<00:15, 36.2it/s]\n[node023:40123] *** Process received signal ***\n[node023:40123] Signal: Segmentation fault (11)\n[node023:40123] Failing at address: 0x7f3a2c000000\n",
        " 12%|█▏        | 120/1000 [00:03<00:21, 40.1it/s]\n[node117:977] *** Process received signal ***\n[node117:977] Signal: Segmentation fault (11)\n[node117:977] Failing at address: 0x10\n",
    ),
    (
        "shell OOM kill of the job script, different spool paths and PIDs, colours",
        "\x1b[32mINFO\x1b[0m 2024-03-21 02:07:08 starting\n/var/spool/slurmd/job4417/slurm_script: line 12: 4567 Killed                  python train.py\n",
        "\x1b[32mINFO\x1b[0m 2024-05-01 10:00:00 starting\n/var/spool/slurmd/job99/slurm_script: line 12: 31337 Killed                  python train.py\n",
    ),
    (
        "srun trailer with task ids and hosts after the same exception",
        "ModuleNotFoundError: No module named 'torchvision'\nsrun: error: node023: task 0: Exited with exit code 1\nsrun: Terminating StepId=4417.0\n",
        "ModuleNotFoundError: No module named 'torchvision'\nsrun: error: node117: task 5: Exited with exit code 1\nsrun: Terminating StepId=9.0\n",
    ),
];

/// Pairs of tails from genuinely different failures.
const DIFFERENT: &[(&str, &str, &str)] = &[
    (
        "SyntaxError vs ModuleNotFoundError, both under srun",
        "  File \"/w/train.py\", line 3\n    def f(:\nSyntaxError: invalid syntax\nsrun: error: node023: task 0: Exited with exit code 1\n",
        "  File \"/w/train.py\", line 3, in <module>\nModuleNotFoundError: No module named 'torch'\nsrun: error: node023: task 0: Exited with exit code 1\n",
    ),
    (
        "connection refused vs DNS failure, same host",
        "ConnectionRefusedError: [Errno 111] Connection refused (node023.hpc.example.org)\n",
        "socket.gaierror: [Errno -2] Name or service not known (node023.hpc.example.org)\n",
    ),
    (
        "time limit vs cancelled by a person",
        "slurmstepd: error: *** JOB 4417 ON node023 CANCELLED AT 2024-03-21T02:07:08 DUE TO TIME LIMIT ***\n",
        "slurmstepd: error: *** JOB 4417 ON node023 CANCELLED AT 2024-03-21T02:07:08 ***\n",
    ),
    (
        "GPU out of memory vs host OOM kill",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB.\n",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=4417.batch. Some of the step tasks have been OOM Killed.\n",
    ),
    (
        "NCCL timeout vs NCCL system error",
        "[rank3]:[E321 02:07:08.4 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout\n",
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error\n",
    ),
    (
        "file not found vs permission denied, same path",
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/in.csv'\n",
        "PermissionError: [Errno 13] Permission denied: '/data/in.csv'\n",
    ),
    (
        "segmentation fault vs bus error",
        "[node023:40123] Signal: Segmentation fault (11)\n",
        "[node023:40123] Signal: Bus error (7)\n",
    ),
    (
        "same exception raised in different functions",
        "Traceback (most recent call last):\n  File \"/w/a.py\", line 9, in load_config\nKeyError: 'lr'\n",
        "Traceback (most recent call last):\n  File \"/w/a.py\", line 30, in build_model\nKeyError: 'lr'\n",
    ),
    (
        "srun exit code 1 vs 2 with no other error",
        "srun: error: node023: task 0: Exited with exit code 1\n",
        "srun: error: node023: task 0: Exited with exit code 2\n",
    ),
];

#[test]
fn noise_only_differences_collide() {
    for (what, a, b) in SAME {
        let (fa, fb) = (fingerprint(a, None), fingerprint(b, None));
        assert_eq!(fa.signature, fb.signature, "{what}:\n{:#?}\n{:#?}", fa.key_lines, fb.key_lines);
        assert_eq!(fa.summary, fb.summary, "{what}");
    }
}

#[test]
fn different_failures_do_not_collide() {
    for (what, a, b) in DIFFERENT {
        let (fa, fb) = (fingerprint(a, None), fingerprint(b, None));
        assert_ne!(fa.signature, fb.signature, "{what}:\n{:#?}\n{:#?}", fa.key_lines, fb.key_lines);
    }
}

#[test]
fn summaries_name_the_cause() {
    let summary = |i: usize| signature_summary(SAME[i].1);
    assert_eq!(summary(1), "slurmstepd: error: *** JOB <id> ON <host> CANCELLED AT <ts> DUE TO TIME LIMIT ***");
    assert_eq!(summary(8), "ModuleNotFoundError: No module named <str>");
    assert_eq!(summary(3), "FileNotFoundError: [Errno 2] No such file or directory: <str>");
    assert_eq!(signature_summary(""), "no stderr");
    assert_eq!(signature_summary("\n  \n"), "no stderr");
    let long = format!("RuntimeError: {}", "x".repeat(1000));
    assert_eq!(signature_summary(&long).chars().count(), SUMMARY_CHARS + 1);
}

#[test]
fn exit_code_counts_only_without_an_error_line() {
    assert_ne!(signature_with("", Some(1)), signature_with("", Some(137)));
    assert_eq!(signature_with("", Some(137)), signature_with("\n\n", Some(137)));
    assert_ne!(signature_with("", Some(137)), signature_with("", None));
    assert_eq!(signature(""), signature_with("", None));
    let chatter = "step 1 loss 0.5\nstep 2 loss 0.4\n";
    assert_ne!(signature_with(chatter, Some(137)), signature_with(chatter, Some(143)));
    let error = "RuntimeError: boom\n";
    assert_eq!(signature_with(error, Some(1)), signature_with(error, Some(137)));
}

#[test]
fn region_dedupes_and_looks_at_the_end() {
    let many_ranks: String = (0..64).map(|r| format!("[rank{r}]: RuntimeError: NCCL error\n")).collect();
    assert_eq!(signature(&many_ranks), signature("[rank0]: RuntimeError: NCCL error\n"));
    // What happened long before the end does not matter.
    let chatter: String = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
        .iter()
        .map(|w| format!("loading {w}\n"))
        .collect();
    let early = format!("ValueError: early\n{chatter}");
    let later = format!("TypeError: different\n{chatter}");
    assert_eq!(signature(&format!("{early}RuntimeError: end\n")), signature(&format!("{later}RuntimeError: end\n")));
}

#[test]
fn metric_names_are_not_errors() {
    // A job logging `val_error` is not failing with an error: such lines are chatter, and
    // whether one is near the end does not change the signature.
    let end = "RuntimeError: NCCL communicator was aborted\n";
    let with_metrics = format!("step 10 val_error 0.31 train_error_rate 0.2\n{end}");
    assert_eq!(signature(&with_metrics), signature(end));
    assert_eq!(fingerprint(&with_metrics, None).key_lines, vec!["RuntimeError: NCCL communicator was aborted"]);
}

#[test]
fn signatures_are_stable() {
    // Pinned: if this changes, the algorithm changed; bump VERSION_TAG and say so in the
    // changelog, as stored groupings and agent plans refer to signatures.
    let tail = SAME[3].1;
    assert_eq!(signature(tail).as_str(), "sig-fe3b8d4dc083d1a8");
    assert_eq!(signature_with("", Some(137)).as_str(), "sig-f5a51a123bbf82a6");
}

#[test]
fn signature_text_form() {
    let sig = signature("RuntimeError: boom");
    let text = sig.to_string();
    assert!(text.starts_with("sig-") && text.len() == 20);
    assert_eq!(text.parse::<Signature>().unwrap(), sig);
    for bad in
        ["", "sig-", "sig-1A2B3C4D5E6F7A8B", "sig-1a2b3c4d5e6f7a8", "xyz-1a2b3c4d5e6f7a8b", "sig-1a2b3c4d5e6f7a8g"]
    {
        let err = bad.parse::<Signature>().unwrap_err();
        assert!(err.to_string().contains("expected `sig-` and 16 lowercase hex digits"), "{err}");
    }
    let json = serde_json::to_string(&sig).unwrap();
    assert_eq!(json, format!("\"{text}\""));
    assert_eq!(serde_json::from_str::<Signature>(&json).unwrap(), sig);
    assert!(serde_json::from_str::<Signature>("\"sig-nope\"").is_err());
    let schema = serde_json::to_value(schemars::schema_for!(Signature)).unwrap();
    assert_eq!(schema["pattern"], "^sig-[0-9a-f]{16}$");
    let fp = serde_json::to_value(fingerprint("RuntimeError: boom", None)).unwrap();
    assert_eq!(fp["summary"], "RuntimeError: boom");
}

#[test]
fn fnv1a_matches_reference_vectors() {
    // Published FNV-1a 64 test vectors.
    let hash = |s: &str| {
        let mut h = Fnv1a::new();
        h.write(s);
        h.0
    };
    assert_eq!(hash(""), 0xcbf29ce484222325);
    assert_eq!(hash("a"), 0xaf63dc4c8601ec8c);
    assert_eq!(hash("foobar"), 0x85944171f73967e8);
}

/// `warm_up` names every rule of `signature.rs` (a rule left out would compile inside a listing).
#[test]
fn warm_up_names_every_rule() {
    crate::logs::rule::assert_warm_up_lists_every_rule(include_str!("signature.rs"));
}
