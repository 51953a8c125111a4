#!/usr/bin/env bash
# A real single-node Slurm 22.05 cluster with accounting (slurmdbd + MariaDB),
# everything on loopback and everything (configs, state, logs, sockets, pid
# files, the database) under one ROOT folder that can be deleted afterwards.
#
#   cluster.sh start  ROOT   install the Debian packages if missing, start munge,
#                            mariadb, slurmdbd, slurmctld, slurmd; wait until
#                            `scontrol ping` is UP, the node is idle and
#                            `sacctmgr show cluster` lists the cluster; print
#                            `export ...` lines on stdout (for eval)
#   cluster.sh stop   ROOT   cancel running jobs, stop every daemon started here
#   cluster.sh status ROOT   show what runs (exit 0 when all five daemons run)
#   cluster.sh env    ROOT   print the `export ...` lines again
#   cluster.sh min-job-age ROOT N
#                            set MinJobAge on the running cluster (scontrol
#                            reconfigure) and remember it for later starts
#   cluster.sh install       only install the packages
#
#   eval "$(tests/slurm/cluster.sh start /tmp/slurm-root)"
#   sbatch --parsable --wrap 'exit 1'
#
# Must run as root (the daemons run as root; jobs and client commands work as
# any user: ROOT gets o+x and slurm.conf is world-readable).
# Idempotent: `start` on a running cluster only checks it; `start` after a
# killed run reuses live daemons (found by pid file, or by the environment
# marker TRIAGE_SLURM_DAEMON_OF=ROOT that every daemon started here carries) and
# restarts missing ones; a half-initialised database is rebuilt.
# One cluster per machine at a time (Slurm's cgroup tree and the node name
# "localhost" are machine-wide).
#
# Settings: environment first, else what ROOT/settings.env remembers from the
# previous start, else the default. Changing one on a running cluster rewrites
# the configs and runs `scontrol reconfigure` (ports: stop first).
#   TRIAGE_SLURM_PORT_BASE    6817: slurmctld=B, slurmd=B+1, slurmdbd=B+2, mariadb=B+3
#   TRIAGE_SLURM_MIN_JOB_AGE  30: seconds a finished job stays in slurmctld
#                             (min 2, 0 = never). The purge pass runs every
#                             max(10, MinJobAge) s (60 s when MinJobAge >= 60),
#                             so a job is forgotten MinJobAge..MinJobAge+pass s
#                             after it ended; `min-job-age ROOT 2` makes the
#                             controller forget finished jobs within ~10 s.
#   TRIAGE_SLURM_PREEMPT_MODE CANCEL: a preempted job ends PREEMPTED (kept by
#                             the controller, can be requeued); REQUEUE: Slurm
#                             requeues it itself (sacct -D keeps a PREEMPTED row)
#   TRIAGE_SLURM_CPUS 2, TRIAGE_SLURM_MEMORY 4000 (MB, the node's RealMemory).
#                             More than the machine has oversubscribes it
#                             (SlurmdParameters=config_overrides is added):
#                             many tiny or sleeping tasks at once, e.g.
#                             CPUS=128 MEMORY=64000 for a 10,000-task array
#   TRIAGE_SLURM_MAX_ARRAY_SIZE 1001 (Slurm's default): highest task index + 1
#   TRIAGE_SLURM_MAX_JOB_COUNT  10000 (Slurm's default): job records the
#                             controller holds, each array task counting one;
#                             a 10,000-task array needs more
#                             (CPUS, MEMORY and MAX_JOB_COUNT restart slurmctld
#                             and slurmd when changed on a running cluster:
#                             reconfigure does not apply them; jobs survive)
#   TRIAGE_SLURM_CLUSTER      triage
#   TRIAGE_SLURM_TIMEOUT      90: seconds to wait for each readiness condition
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
PROG=${0##*/}

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------- packages
packages_missing() {
    local p missing=()
    for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    printf '%s\n' "${missing[@]}"
}

install_packages() {
    local missing
    missing=$(packages_missing)
    [ -z "$missing" ] && return 0
    [ "$(id -u)" = 0 ] || die "packages missing ($missing) and not root"
    log "installing: ${missing//$'\n'/ }"
    # Keep the packages' maintainer scripts from starting system-wide daemons
    # (munge, mariadb) that would sit on the default sockets and ports.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod 755 "$policy"; made_policy=1
    fi
    local rc=0
    export DEBIAN_FRONTEND=noninteractive
    # shellcheck disable=SC2086
    if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing >/dev/null || rc=$?
    fi
    [ "$made_policy" = 1 ] && rm -f "$policy"
    [ "$rc" = 0 ] || die "apt-get install failed ($rc)"
    missing=$(packages_missing)
    [ -z "$missing" ] || die "still missing after install: $missing"
}

# ---------------------------------------------------------------- layout
SETTINGS=(PORT_BASE MIN_JOB_AGE PREEMPT_MODE CPUS MEMORY CLUSTER MAX_ARRAY_SIZE MAX_JOB_COUNT)
declare -A DEFAULTS=([PORT_BASE]=6817 [MIN_JOB_AGE]=30 [PREEMPT_MODE]=CANCEL
                     [CPUS]=2 [MEMORY]=4000 [CLUSTER]=triage
                     [MAX_ARRAY_SIZE]=1001 [MAX_JOB_COUNT]=10000)
# Settings only a restart of slurmctld and slurmd applies.
RESTART_SETTINGS=(CPUS MEMORY MAX_JOB_COUNT)

set_paths() {
    ROOT=$1
    ETC=$ROOT/etc
    RUN=$ROOT/run
    LOGS=$ROOT/log
    STATE=$ROOT/state
    MUNGE_DIR=$ROOT/munge
    MUNGE_SOCK=$RUN/munge/munge.sock
    DB_DIR=$ROOT/mysql
    DB_SOCK=$RUN/mysql.sock
    SLURM_CONF_FILE=$ETC/slurm.conf
    SETTINGS_FILE=$ROOT/settings.env
    local k var v
    for k in "${SETTINGS[@]}"; do
        var=TRIAGE_SLURM_$k
        v=${!var:-}
        if [ -z "$v" ] && [ -f "$SETTINGS_FILE" ]; then
            v=$(sed -n "s/^$var=//p" "$SETTINGS_FILE" | tail -n1)
        fi
        printf -v "$k" '%s' "${v:-${DEFAULTS[$k]}}"
    done
    case "$PREEMPT_MODE" in
        CANCEL|REQUEUE|OFF) ;;
        *) die "TRIAGE_SLURM_PREEMPT_MODE must be CANCEL, REQUEUE or OFF" ;;
    esac
    for v in "$PORT_BASE" "$MIN_JOB_AGE" "$CPUS" "$MEMORY" "$MAX_ARRAY_SIZE" "$MAX_JOB_COUNT"; do
        [[ "$v" =~ ^[0-9]+$ ]] || die "not a number: $v"
    done
    CTLD_PORT=$PORT_BASE
    SLURMD_PORT=$((PORT_BASE + 1))
    DBD_PORT=$((PORT_BASE + 2))
    DB_PORT=$((PORT_BASE + 3))
    TIMEOUT=${TRIAGE_SLURM_TIMEOUT:-90}
    # Only the daemons started here carry this (never exported to callers,
    # whose processes must not look like ours).
    MARKER="TRIAGE_SLURM_DAEMON_OF=$ROOT"
}

save_settings() {
    local k
    for k in "${SETTINGS[@]}"; do printf 'TRIAGE_SLURM_%s=%s\n' "$k" "${!k}"; done \
        | write_if_changed "$SETTINGS_FILE" 644 || true
}

resolve_root() {  # path [create]
    [ -n "${1:-}" ] || usage
    if [ "${2:-}" = create ]; then mkdir -p "$1"; fi
    [ -d "$1" ] || { echo "$1"; return 0; }
    (cd "$1" && pwd -P)
}

# ---------------------------------------------------------------- processes
# A pid is "ours" when it is alive and its environment carries the marker.
is_ours() {
    local pid=$1
    [ -n "$pid" ] && grep -qzxF "$MARKER" "/proc/$pid/environ" 2>/dev/null
}

# Pids of all processes carrying our marker (one grep over /proc).
marked_pids() {
    grep -lzxF "$MARKER" /proc/[0-9]*/environ 2>/dev/null \
        | sed -n 's|^/proc/\([0-9]*\)/environ$|\1|p' | grep -vx "$$" || true
}

job_pids() {
    local f pid
    for f in $(grep -lzxF "SLURM_CONF=$SLURM_CONF_FILE" /proc/[0-9]*/environ 2>/dev/null); do
        pid=${f#/proc/}; pid=${pid%/environ}
        [ "$pid" = $$ ] && continue
        grep -qE 'slurm[^/]*/uid_[0-9]+/job_[0-9]+' "/proc/$pid/cgroup" 2>/dev/null && echo "$pid"
    done
    return 0
}

# pid of our daemon NAME (comm name): pid file first, else scan /proc.
daemon_pid() {
    local name=$1 pidfile=$RUN/$1.pid pid p
    if [ -s "$pidfile" ]; then
        pid=$(head -n1 "$pidfile" | tr -dc 0-9)
        if is_ours "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ]; then
            echo "$pid"; return 0
        fi
    fi
    for p in $(marked_pids); do
        if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$name" ]; then
            echo "$p"; return 0
        fi
    done
    return 1
}

# Alive and not a zombie (PID 1 here may be slow to reap orphans).
alive() {
    local st
    st=$(sed -n 's/^[0-9]* (.*) \([A-Z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}

stop_daemons() {  # name... : SIGTERM them together, wait up to 30 s, then SIGKILL
    local name pid pids=() i
    for name in "$@"; do
        if pid=$(daemon_pid "$name"); then
            kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
        fi
    done
    for ((i = 0; i < 300; i++)); do
        local left=()
        for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
        pids=("${left[@]}")
        [ ${#pids[@]} = 0 ] && break
        sleep 0.1
    done
    for pid in "${pids[@]}"; do
        log "pid $pid did not stop in 30s, killing"
        kill -KILL "$pid" 2>/dev/null || true
    done
    for name in "$@"; do rm -f "$RUN/$name.pid"; done
}

wait_for() {  # description, command...
    local what=$1; shift
    local deadline=$((SECONDS + TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "timed out after ${TIMEOUT}s waiting for $what"
            return 1
        fi
        sleep 0.5
    done
}

run_marked() {  # start a command with the marker and SLURM_CONF in its env
    # fd 9 (the lock) must not leak into the daemons, or it stays held.
    env "$MARKER" SLURM_CONF="$SLURM_CONF_FILE" "$@" 9>&-
}

# ---------------------------------------------------------------- configs
write_if_changed() {  # file mode; content on stdin. returns 0 if changed
    local f=$1 mode=$2 tmp
    tmp=$(mktemp "$f.XXXXXX")
    cat > "$tmp"
    chmod "$mode" "$tmp"
    if [ -f "$f" ] && cmp -s "$tmp" "$f"; then
        rm -f "$tmp"; return 1
    fi
    mv -f "$tmp" "$f"
    return 0
}

# `SlurmdParameters=config_overrides` when the node is declared bigger than the
# machine (slurmd would otherwise mark it INVAL), else nothing.
node_overrides() {
    local cores mem_mb
    cores=$(nproc 2>/dev/null || echo 1)
    mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo 2>/dev/null || echo 0)
    if [ "$CPUS" -gt "$cores" ] || [ "$MEMORY" -gt "$mem_mb" ]; then
        echo "SlurmdParameters=config_overrides"
    fi
}

write_configs() {  # sets CONF_CHANGED=1 when slurm.conf/cgroup.conf changed
    CONF_CHANGED=0
    DBD_CONF_CHANGED=0
    local overrides
    overrides=$(node_overrides)
    write_if_changed "$SLURM_CONF_FILE" 644 <<EOF && CONF_CHANGED=1 || true
# Generated by tests/slurm/cluster.sh; edits are overwritten on start.
ClusterName=$CLUSTER
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK,cred_expire=10
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldDebug=info
MailProg=/bin/true
SlurmdDebug=info
PlugStackConfig=$ETC/plugstack.conf
MpiDefault=none
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=5
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=100
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
ReturnToService=2
KillWait=5
MinJobAge=$MIN_JOB_AGE
MaxArraySize=$MAX_ARRAY_SIZE
MaxJobCount=$MAX_JOB_COUNT
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$MUNGE_SOCK
AccountingStoreFlags=job_script,job_comment
JobCompType=jobcomp/none
PreemptType=preempt/partition_prio
PreemptMode=$PREEMPT_MODE
${overrides}
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEMORY State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=urgent Nodes=localhost MaxTime=INFINITE State=UP PriorityTier=10
EOF
    write_if_changed "$ETC/cgroup.conf" 644 <<EOF && CONF_CHANGED=1 || true
CgroupMountpoint=/sys/fs/cgroup
IgnoreSystemd=yes
ConstrainCores=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=yes
EOF
    [ -f "$ETC/plugstack.conf" ] || : > "$ETC/plugstack.conf"
    chmod 644 "$ETC/plugstack.conf"
    write_if_changed "$ETC/slurmdbd.conf" 600 <<EOF && DBD_CONF_CHANGED=1 || true
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$LOGS/slurmdbd.log
PidFile=$RUN/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
}

env_lines() {
    printf 'export SLURM_CONF=%q\n' "$SLURM_CONF_FILE"
    printf 'export TRIAGE_SLURM_ROOT=%q\n' "$ROOT"
}

# ---------------------------------------------------------------- daemons
start_munge() {
    if daemon_pid munged >/dev/null; then return 0; fi
    if [ ! -s "$MUNGE_DIR/munge.key" ]; then
        rm -f "$MUNGE_DIR/munge.key"
        mungekey --create --keyfile="$MUNGE_DIR/munge.key" >/dev/null 2>&1 \
            || dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
    fi
    chmod 600 "$MUNGE_DIR/munge.key"
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock" "$RUN/munged.pid"
    run_marked munged --force --socket="$MUNGE_SOCK" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$LOGS/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed" --num-threads=2 \
        || die "munged failed to start, see $LOGS/munged.log"
    wait_for "munge socket" test -S "$MUNGE_SOCK" || die "munged: no socket"
    chmod 777 "$MUNGE_SOCK"
}

# shellcheck disable=SC2120 # called with arguments through wait_for
db_sql() { mariadb --no-defaults -S "$DB_SOCK" -u root "$@"; }

start_mariadb() {
    if ! daemon_pid mariadbd >/dev/null; then
        if [ ! -f "$DB_DIR/.triage-initialized" ]; then
            rm -rf "$DB_DIR"; mkdir -p "$DB_DIR"
            log "initialising MariaDB in $DB_DIR"
            mariadb-install-db --no-defaults --datadir="$DB_DIR" --user=root \
                --auth-root-authentication-method=socket --skip-test-db \
                > "$LOGS/mariadb-install.log" 2>&1 \
                || die "mariadb-install-db failed, see $LOGS/mariadb-install.log"
        fi
        rm -f "$DB_SOCK" "$RUN/mariadbd.pid"
        run_marked setsid -f mariadbd --no-defaults --user=root --datadir="$DB_DIR" \
            --socket="$DB_SOCK" --port="$DB_PORT" --bind-address=127.0.0.1 \
            --pid-file="$RUN/mariadbd.pid" --log-error="$LOGS/mariadb.log" \
            --skip-name-resolve --innodb-buffer-pool-size=128M \
            --innodb-lock-wait-timeout=900 --innodb-log-file-size=64M \
            --innodb-flush-log-at-trx-commit=2 --max-connections=50 \
            < /dev/null > /dev/null 2>&1
        wait_for "mariadb socket" db_sql -e 'SELECT 1' \
            || die "mariadbd did not come up, see $LOGS/mariadb.log"
    fi
    if [ ! -f "$DB_DIR/.triage-initialized" ]; then
        db_sql <<'SQL' || die "creating the slurm database user failed"
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY 'slurm';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL
        touch "$DB_DIR/.triage-initialized"
    fi
}

start_slurmdbd() {
    local pid
    if pid=$(daemon_pid slurmdbd); then
        [ "$DBD_CONF_CHANGED" = 1 ] || return 0
        log "slurmdbd.conf changed: restarting slurmdbd"
        stop_daemons slurmdbd
    fi
    rm -f "$RUN/slurmdbd.pid"
    run_marked slurmdbd || die "slurmdbd failed to start, see $LOGS/slurmdbd.log"
    wait_for "slurmdbd" sacctmgr -n -P show cluster \
        || die "slurmdbd not answering, see $LOGS/slurmdbd.log"
}

start_slurmctld() {
    if daemon_pid slurmctld >/dev/null; then
        if [ "$CONF_CHANGED" = 1 ]; then
            log "slurm.conf changed: scontrol reconfigure"
            scontrol reconfigure >/dev/null 2>&1 || log "scontrol reconfigure failed"
        fi
        return 0
    fi
    rm -f "$RUN/slurmctld.pid"
    # -i: ignore unreadable state files left by a killed run.
    run_marked slurmctld -i -f "$SLURM_CONF_FILE" \
        || die "slurmctld failed to start, see $LOGS/slurmctld.log"
    wait_for "scontrol ping UP" sh -c 'scontrol ping | grep -q UP' \
        || die "slurmctld not UP, see $LOGS/slurmctld.log"
}

start_slurmd() {
    if daemon_pid slurmd >/dev/null; then return 0; fi
    rm -f "$RUN/slurmd.pid"
    run_marked slurmd -f "$SLURM_CONF_FILE" -N localhost \
        || die "slurmd failed to start, see $LOGS/slurmd.log"
}

node_state() { sinfo -h -n localhost -o %T 2>/dev/null | head -n1; }

node_ready() {
    case "$(node_state)" in
        idle|mixed|allocated|completing) return 0 ;;
        *) return 1 ;;
    esac
}

cluster_listed() {
    sacctmgr -n -P show cluster format=cluster 2>/dev/null | grep -qx "$CLUSTER"
}

wait_ready() {
    # A node left DOWN/DRAIN by an earlier run (or a test) is resumed.
    local deadline=$((SECONDS + TIMEOUT)) st
    while ! node_ready; do
        st=$(node_state)
        case "$st" in
            down|drained|draining|drain*|down\*|fail*)
                scontrol update nodename=localhost state=resume >/dev/null 2>&1 || true ;;
        esac
        if [ "$SECONDS" -ge "$deadline" ]; then
            die "node not ready (state '$st') after ${TIMEOUT}s, see $LOGS/slurmd.log"
        fi
        sleep 0.5
    done
    wait_for "cluster $CLUSTER in sacctmgr" cluster_listed \
        || die "cluster not registered in slurmdbd, see $LOGS/slurmctld.log"
}

cmd_start() {
    [ "$(id -u)" = 0 ] || die "start must run as root"
    install_packages
    ROOT=$(resolve_root "${1:-}" create)
    set_paths "$ROOT"
    [ ${#MUNGE_SOCK} -lt 100 ] || die "ROOT path too long for unix sockets: $ROOT"
    mkdir -p "$ETC" "$RUN/munge" "$LOGS" "$STATE/ctld" "$STATE/slurmd" "$MUNGE_DIR"
    # Non-root users need to reach slurm.conf and the munge socket.
    chmod o+x "$ROOT"
    local d=$ROOT
    while d=$(dirname "$d") && [ "$d" != / ]; do
        if [ -z "$(find "$d" -maxdepth 0 -perm -o+x 2>/dev/null)" ]; then
            log "warning: $d is not o+x: only root can use this cluster"; break
        fi
    done
    chmod 755 "$ETC" "$RUN" "$RUN/munge"
    # slurmstepd execs the batch script from SlurmdSpoolDir as the job's user.
    chmod 755 "$STATE" "$STATE/slurmd"
    chmod 700 "$MUNGE_DIR" "$STATE/ctld"
    exec 9> "$ROOT/.lock"
    flock -w 300 9 || die "another cluster.sh holds $ROOT/.lock"
    export SLURM_CONF=$SLURM_CONF_FILE
    if [ -f "$SETTINGS_FILE" ] && daemon_pid slurmctld >/dev/null \
        && ! grep -qx "TRIAGE_SLURM_PORT_BASE=$PORT_BASE" "$SETTINGS_FILE"; then
        die "port base changed while the cluster runs: run '$PROG stop $ROOT' first"
    fi
    local k old need_restart=0
    if [ -f "$SETTINGS_FILE" ] && daemon_pid slurmctld >/dev/null; then
        for k in "${RESTART_SETTINGS[@]}"; do
            old=$(sed -n "s/^TRIAGE_SLURM_$k=//p" "$SETTINGS_FILE" | tail -n1)
            [ "${old:-${DEFAULTS[$k]}}" = "${!k}" ] || need_restart=1
        done
    fi
    save_settings
    write_configs
    start_munge
    start_mariadb
    start_slurmdbd
    if [ "$need_restart" = 1 ]; then
        log "node size or MaxJobCount changed: restarting slurmctld and slurmd"
        stop_daemons slurmd slurmctld
    fi
    start_slurmctld
    start_slurmd
    wait_ready
    env_lines | tee "$ROOT/env.sh"
}

cmd_stop() {
    ROOT=$(resolve_root "${1:-}")
    set_paths "$ROOT"
    [ -d "$ETC" ] || { log "nothing to stop under $ROOT"; return 0; }
    exec 9> "$ROOT/.lock"
    flock -w 300 9 || die "another cluster.sh holds $ROOT/.lock"
    export SLURM_CONF=$SLURM_CONF_FILE
    local pid ids i
    # Running jobs would leave their processes behind slurmd: cancel them.
    if daemon_pid slurmctld >/dev/null && daemon_pid slurmd >/dev/null; then
        ids=$(squeue -h -t R,S -o %A 2>/dev/null || true)
        if [ -n "$ids" ]; then
            # Drain first so that no pending job starts meanwhile (start resumes it).
            scontrol update nodename=localhost state=drain reason=cluster.sh-stop \
                >/dev/null 2>&1 || true
            # shellcheck disable=SC2086
            scancel $ids >/dev/null 2>&1 || true
            for ((i = 0; i < 30; i++)); do
                [ -z "$(squeue -h -t R,S,CG -o %A 2>/dev/null)" ] && break
                sleep 0.5
            done
        fi
    fi
    stop_daemons slurmd slurmctld
    stop_daemons slurmdbd
    stop_daemons mariadbd munged
    # Anything else still carrying our marker (slurmstepd), and job processes
    # left behind (in a Slurm job cgroup, with our SLURM_CONF in their env).
    for pid in $(marked_pids) $(job_pids); do
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -f "$MUNGE_SOCK" "$DB_SOCK"
}

cmd_min_job_age() {
    [ "$(id -u)" = 0 ] || die "min-job-age must run as root"
    ROOT=$(resolve_root "${1:-}")
    [[ "${2:-}" =~ ^[0-9]+$ ]] || usage
    [ -f "$ROOT/settings.env" ] || die "no cluster under $ROOT (run start first)"
    export TRIAGE_SLURM_MIN_JOB_AGE=$2
    set_paths "$ROOT"
    exec 9> "$ROOT/.lock"
    flock -w 300 9 || die "another cluster.sh holds $ROOT/.lock"
    export SLURM_CONF=$SLURM_CONF_FILE
    save_settings
    write_configs
    if daemon_pid slurmctld >/dev/null; then
        scontrol reconfigure >/dev/null || die "scontrol reconfigure failed"
    fi
}

cmd_status() {
    ROOT=$(resolve_root "${1:-}")
    set_paths "$ROOT"
    export SLURM_CONF=$SLURM_CONF_FILE
    local name pid rc=0
    for name in munged mariadbd slurmdbd slurmctld slurmd; do
        if pid=$(daemon_pid "$name"); then
            printf '%-10s running pid %s\n' "$name" "$pid"
        else
            printf '%-10s stopped\n' "$name"; rc=3
        fi
    done
    if [ "$rc" = 0 ]; then
        scontrol ping 2>&1 | sed 's/^/  /'
        printf '  node localhost: %s\n' "$(node_state)"
        printf '  clusters: %s\n' "$(sacctmgr -n -P show cluster format=cluster 2>/dev/null | tr '\n' ' ')"
    fi
    return "$rc"
}

case "${1:-}" in
    start) shift; cmd_start "$@" ;;
    stop) shift; cmd_stop "$@" ;;
    status) shift; cmd_status "$@" ;;
    min-job-age) shift; cmd_min_job_age "$@" ;;
    env) shift; ROOT=$(resolve_root "${1:-}"); set_paths "$ROOT"; env_lines ;;
    install) install_packages ;;
    *) usage ;;
esac
