//! Tests of [`super::normalize_line`]: each rule on the lines it is for, and the words,
//! exception names and exit codes it must leave alone.

use super::{normalize_line, shape_key};

#[track_caller]
fn check(input: &str, expected: &str) {
    assert_eq!(normalize_line(input), expected, "input: {input:?}");
}

#[test]
fn timestamps() {
    check("2024-03-21T02:07:08.123Z ERROR boom", "<ts> ERROR boom");
    check("2024-03-21 02:07:08,123 - ERROR - boom", "<ts> - ERROR - boom");
    check("2024/03/21 02:07:08 boom", "<ts> boom");
    check("Mar 21 02:07:08 kernel: boom", "<ts> kernel: boom");
    check("Thu Mar 21 02:07:08 UTC 2024: boom", "<ts>: boom");
    check("[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:616] boom", "[<ts> ProcessGroupNCCL.cpp:<n>] boom");
    check("E0321 02:07:08.414640 12345 socket.cpp:556] boom", "<ts> <n> socket.cpp:<n>] boom");
    check("elapsed 02:07:08", "elapsed <ts>");
}

#[test]
fn quoted_text_but_not_apostrophes() {
    check("ModuleNotFoundError: No module named 'torchvision'", "ModuleNotFoundError: No module named <str>");
    check(r#"  File "/scratch/job_88/train.py", line 42, in main"#, "File <str>, line <n>, in main");
    check(
        "python: can't open file '/x/y.py': [Errno 2] No such file",
        "python: can't open file <str>: [Errno 2] No such file",
    );
    check("KeyError: `lr` ‘a’ “b”", "KeyError: <str> <str> <str>");
}

#[test]
fn addresses_urls_and_ids() {
    check("connect to 10.0.3.17:29500 failed", "connect to <ip> failed");
    check("connect to [fe80::1ff:fe23:4567:890a]:29500 failed", "connect to <ip>:<n> failed");
    check("GET https://hub.example.com/a/b?c=1 -> 503", "GET <url> -> <n>");
    check("run 123e4567-e89b-12d3-a456-426614174000 lost", "run <uuid> lost");
    check("at address 0x7f3a2c000000 (fault)", "at address <hex> (fault)");
    check("image sha256:9f86d081884c7d659a2feaa0c55ad015 missing", "image sha<n>:<hex> missing");
    check("c10::Error and std::runtime_error", "c<n>::Error and std::runtime_error");
}

#[test]
fn paths_keep_their_base_name() {
    check("bash: /scratch/u/job_123/run.sh: Permission denied", "bash: <path>/run.sh: Permission denied");
    check("/var/spool/slurmd/job4417/slurm_script: line 12: 4567 Killed", "<path>/slurm_script: line <n>: <n> Killed");
    check("reading ./data/shard-0007.parquet", "reading <path>/shard-<n>.parquet");
    check("wrote to /tmp/tmpa8x9k2l_/", "wrote to <path>/");
    check("I/O error and/or 3/100 done", "I/O error and/or <n>/<n> done");
}

#[test]
fn hosts() {
    check(
        "*** JOB 123 ON node023 CANCELLED AT 2024-03-21T02:07:08 ***",
        "*** JOB <id> ON <host> CANCELLED AT <ts> ***",
    );
    check(
        "*** JOB 99 ON orion-01-04 CANCELLED AT 2024-03-21T02:07:08 ***",
        "*** JOB <id> ON <host> CANCELLED AT <ts> ***",
    );
    check(
        "srun: error: nid001234: task 7: Exited with exit code 1",
        "srun: error: <host>: task <id>: Exited with exit code 1",
    );
    check("[gpu-a17:12345] *** Process received signal ***", "[<host>:<n>] *** Process received signal ***");
    check("failed to connect to [node117]:29500 (errno: 111)", "failed to connect to [<host>]:<n> (errno: 111)");
    check("ssh user@login02 refused", "ssh user@<host> refused");
    check("resolving node023.hpc.example.org: no such host", "resolving <host>: no such host");
    check("NodeList=node[001-004]", "NodeList=<host>");
    check("torch.distributed.elastic.ChildFailedError", "torch.distributed.elastic.ChildFailedError");
}

#[test]
fn sizes_and_numbers() {
    check(
        "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 10.81 MiB is free",
        "Tried to allocate <size>. GPU <n> has a total capacity of <size> of which <size> is free",
    );
    check("mem=8g used 512 bytes of 4kB", "mem=<size> used <size> of <size>");
    check("[rank4]: step 1200 loss 0.2345 lr 3e-4", "[rank<n>]: step <id> loss <n> lr <n>e-<n>");
    check("Killed process 4567 (python) total-vm:123456kB", "Killed process <n> (python) total-vm:<size>");
    check("Exited with exit code 137", "Exited with exit code 137");
    check("process exited: status 1, signal 9, errno=13 rc=2", "process exited: status 1, signal 9, errno=13 rc=2");
    check("make: *** [all] Error 2", "make: *** [all] Error 2");
    check("StepId=4417.batch and StepId=9921.0.", "StepId=<id> and StepId=<id>.");
    check("Detected 3 oom_kill events, 2 tasks, 1 task was", "Detected <n> oom_kill event, <n> task, <n> task was");
}

#[test]
fn terminal_noise() {
    check("\x1b[31mERROR\x1b[0m: build failed", "ERROR: build failed");
    check(" 10%|█         | 1/10\r 90%|█████████ | 9/10\r\n", "<n>%| | <n>/<n>");
    check("first\rsecond\r", "second");
    check("  spaced \t out  ", "spaced out");
    check("tmp.Xb3kQ9abc and tmpq1w2e3r4", "<tmp> and <tmp>");
    check("", "");
}

#[test]
fn words_and_exception_names_survive() {
    check("RuntimeError: NCCL communicator was aborted", "RuntimeError: NCCL communicator was aborted");
    check(
        "socket.gaierror: [Errno -2] Name or service not known",
        "socket.gaierror: [Errno -2] Name or service not known",
    );
}

#[test]
fn lines_of_one_shape_normalize_alike() {
    let corpus = [
        "[rank3] 2024-03-21 02:17:44,123 INFO trainer.py:123: epoch 12 step 61234 loss 0.2345",
        "node023:12345:23456 [3] NCCL INFO Channel 07/0 : 3 -> 4 via P2P/IPC/read",
        "at address 0x7f3a2c000000 in 1x1 conv, id a1b2c3, tmpab1 tmpab1234, 10.0.3.17:29500",
        "Thu Mar 21 02:07:08 UTC 2024 E0321 02:07:08.414640 StepId=4417.batch 12 events",
        "srun: error: nid001234: task 7: Exited with exit code 1",
        "make: *** [all] Error 2 (signal 9) rc=3 status 4",
        "mem=8g used 512 bytes of 4kB; GPU 3 has 79.15 GiB; 123e4567-e89b-12d3-a456-426614174000",
    ];
    let mut seed = 7u64;
    for line in corpus {
        for _ in 0..50 {
            let variant: String = line
                .chars()
                .map(|c| match c {
                    '1'..='9' => {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        char::from(b'1' + ((seed >> 33) % 9) as u8)
                    }
                    _ => c,
                })
                .collect();
            match (shape_key(line), shape_key(&variant)) {
                (Some(a), Some(b)) => {
                    assert_eq!(a, b);
                    assert_eq!(normalize_line(line), normalize_line(&variant), "{line:?} vs {variant:?}");
                }
                (None, None) => {}
                other => panic!("one of {line:?} / {variant:?} has a shape: {other:?}"),
            }
        }
    }
    assert_eq!(shape_key("Exited with exit code 1"), None);
}

/// `warm_up` names every rule of `normalize.rs` (a rule left out would compile inside a listing).
#[test]
fn warm_up_names_every_rule() {
    crate::logs::rule::assert_warm_up_lists_every_rule(include_str!("normalize.rs"));
}
