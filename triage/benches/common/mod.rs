//! Realistic stderr for the benchmarks: training chatter, warnings, progress, NCCL and Slurm
//! lines, and the error tails jobs die with. Deterministic, so every run measures the same text.

#![allow(dead_code)] // each bench uses part of it

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

/// xorshift64*: small, deterministic.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One line of the chatter a long job prints before it fails.
pub fn chatter_line(rng: &mut Rng, i: u64) -> String {
    let rank = rng.below(8);
    match rng.below(10) {
        0..=4 => format!(
            "[rank{rank}] 2024-03-21 02:{:02}:{:02},{:03} INFO trainer.py:{}: epoch {} step {i} loss {:.4} lr 3.0e-4 grad_norm {:.3} tokens/s {}",
            rng.below(60),
            rng.below(60),
            rng.below(1000),
            100 + rng.below(400),
            i / 5000,
            rng.below(10_000) as f64 / 7919.0,
            rng.below(1000) as f64 / 97.0,
            20_000 + rng.below(9000)
        ),
        5 => format!(
            "{:>3}%|{:<10}| {}/{} [00:{:02}<00:{:02}, {}.{}it/s]",
            rng.below(100),
            "█".repeat(rng.below(10) as usize),
            rng.below(1000),
            1000,
            rng.below(60),
            rng.below(60),
            rng.below(50),
            rng.below(10)
        ),
        6 => format!(
            "/scratch/u/job_{}/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py:{}: UserWarning: This DataLoader will create {} worker processes in total.",
            rng.below(100_000),
            500 + rng.below(100),
            rng.below(64)
        ),
        7 => format!(
            "node{:03}:{}:{} [{}] NCCL INFO Channel {:02}/0 : {} -> {} via P2P/IPC/read",
            rng.below(200),
            10_000 + rng.below(50_000),
            10_000 + rng.below(50_000),
            rank,
            rng.below(32),
            rank,
            (rank + 1) % 8
        ),
        8 => format!(
            "[rank{rank}] checkpoint saved to /scratch/u/job_{}/ckpt/step_{i}.pt ({} MiB)",
            rng.below(100_000),
            rng.below(4000)
        ),
        _ => format!(
            "[rank{rank}] eval step {i}: accuracy {:.3} f1 {:.3}",
            rng.below(1000) as f64 / 1000.0,
            rng.below(1000) as f64 / 1000.0
        ),
    }
}

/// The lines a job dies with: one of a dozen causes, with per-job noise.
pub fn error_lines(rng: &mut Rng) -> Vec<String> {
    let (job, host, rank) = (4_000_000 + rng.below(100_000), format!("node{:03}", rng.below(300)), rng.below(8));
    let ts = format!("2024-03-{:02}T{:02}:{:02}:{:02}", 1 + rng.below(28), rng.below(24), rng.below(60), rng.below(60));
    let tmp = format!("/tmp/job_{job}/work");
    match rng.below(12) {
        0 => vec![format!("slurmstepd: error: *** JOB {job} ON {host} CANCELLED AT {ts} DUE TO TIME LIMIT ***")],
        1 => vec![format!(
            "slurmstepd: error: Detected {} oom_kill event in StepId={job}.batch. Some of the step tasks have been OOM Killed.",
            1 + rng.below(3)
        )],
        2 => vec![
            "Traceback (most recent call last):".into(),
            format!("  File \"{tmp}/train.py\", line 42, in <module>"),
            "    main()".into(),
            format!("  File \"{tmp}/train.py\", line 17, in main"),
            "    import torchvision".into(),
            "ModuleNotFoundError: No module named 'torchvision'".into(),
            format!("srun: error: {host}: task {rank}: Exited with exit code 1"),
        ],
        3 => vec![format!(
            "[rank{rank}]:[E321 02:07:{:02}.{} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran for {} milliseconds before timing out.",
            rng.below(60),
            rng.below(1_000_000_000),
            rng.below(100_000),
            600_000 + rng.below(100)
        )],
        4 => vec![format!(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {}.00 MiB. GPU {rank} has a total capacity of 79.15 GiB of which {}.81 MiB is free.",
            rng.below(4096),
            rng.below(100)
        )],
        5 => vec![
            format!(
                "[W socket.cpp:663] [c10d] The client socket has failed to connect to [{host}]:{} (errno: 111 - Connection refused).",
                20_000 + rng.below(40_000)
            ),
            "RuntimeError: Connection refused".into(),
        ],
        6 => vec![format!("FileNotFoundError: [Errno 2] No such file or directory: '/scratch/u/job_{job}/input.csv'")],
        7 => vec![
            format!("[{host}:{}] *** Process received signal ***", rng.below(100_000)),
            format!("[{host}:{}] Signal: Segmentation fault (11)", rng.below(100_000)),
            format!("[{host}:{}] Failing at address: 0x{:x}", rng.below(100_000), rng.next()),
        ],
        8 => vec![format!(
            "/var/spool/slurmd/job{job}/slurm_script: line 12: {} Killed                  python train.py",
            rng.below(100_000)
        )],
        9 => vec!["socket.gaierror: [Errno -2] Name or service not known".into()],
        10 => vec![format!("PermissionError: [Errno 13] Permission denied: '/scratch/u/job_{job}/out'")],
        _ => vec![format!("slurmstepd: error: *** JOB {job} ON {host} CANCELLED AT {ts} ***")],
    }
}

/// A 50-line stderr tail: chatter, then an error.
pub fn tail_50(rng: &mut Rng) -> String {
    let errors = error_lines(rng);
    let start = rng.below(1_000_000);
    let mut lines: Vec<String> = (0..50 - errors.len() as u64).map(|i| chatter_line(rng, start + i)).collect();
    lines.extend(errors);
    lines.join("\n") + "\n"
}

/// A text file of at least `size` bytes of realistic stderr, made once and kept in the system's
/// temporary directory (set `TRIAGE_BENCH_DIR` to keep it elsewhere).
pub fn big_stderr_file(size: u64) -> PathBuf {
    let dir =
        std::env::var_os("TRIAGE_BENCH_DIR").map_or_else(|| std::env::temp_dir().join("triage-bench"), PathBuf::from);
    let path = dir.join(format!("stderr-{size}.log"));
    if fs::metadata(&path).is_ok_and(|m| m.len() >= size) {
        return path;
    }
    fs::create_dir_all(&dir).expect("create the bench directory");
    let partial = dir.join(format!("stderr-{size}.log.partial"));
    let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&partial).expect("create the bench file"));
    let (mut rng, mut written, mut i) = (Rng(0xB16_F11E), 0u64, 0u64);
    while written < size {
        let line = chatter_line(&mut rng, i) + "\n";
        out.write_all(line.as_bytes()).expect("write the bench file");
        written += line.len() as u64;
        i += 1;
    }
    for line in error_lines(&mut rng) {
        out.write_all(line.as_bytes()).and_then(|_| out.write_all(b"\n")).expect("write the bench file");
    }
    out.flush().expect("write the bench file");
    drop(out);
    fs::rename(&partial, &path).expect("rename the bench file");
    path
}
