#!/usr/bin/env bash
# A throwaway single-node SLURM cluster on this machine, for trying cluster/slurm.yaml.
#
#   usage: slurm-single-node.sh up|down|env
#     up    install slurm-wlm and munge if absent (apt-get, as root), write a slurm.conf for this host (its
#           CPUs and memory, from `slurmd -C`) and a munge key into $DKERNEL_SLURM_DIR, start munged,
#           slurmctld and slurmd directly (no systemd), and wait until `sinfo` shows the node idle
#     down  cancel the cluster's jobs, stop the three daemons it started and remove $DKERNEL_SLURM_DIR
#     env   print the variable that points the SLURM commands at this cluster:
#           eval "$(cluster/slurm-single-node.sh env)"
#
# Nothing outside $DKERNEL_SLURM_DIR (default /tmp/dkernel-slurm) is written, except the packages that
# `up` installs when SLURM is absent (left installed by `down`). The daemons run as root and talk
# through the munge socket in that folder; the system's /etc/slurm and /etc/munge are not used.
set -euo pipefail

dir=${DKERNEL_SLURM_DIR:-/tmp/dkernel-slurm}
marker="$dir/.dkernel-slurm-single-node"
conf="$dir/slurm.conf"

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

running() {  # running NAME: the daemon NAME whose pid file is in $dir is alive
    [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null
}

install_if_absent() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
        return
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "slurm-single-node: slurmctld, slurmd and munged are needed; install slurm-wlm and munge" >&2
        exit 2
    fi
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
}

write_config() {
    local node host
    node=$(slurmd -C | head -n 1)   # NodeName=HOST CPUs=... RealMemory=...
    host=$(hostname -s)
    cat >"$conf" <<EOF
ClusterName=dkernel
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
    if [ -f "$marker" ] && running slurmctld && running slurmd; then
        echo "slurm-single-node: already up ($conf)"
        return
    fi
    if [ -e "$dir" ] && [ ! -f "$marker" ]; then
        echo "slurm-single-node: $dir exists and was not made by this script; set DKERNEL_SLURM_DIR" >&2
        exit 2
    fi
    install_if_absent
    mkdir -p "$dir/ctld" "$dir/spool"
    touch "$marker"
    chmod 700 "$dir"
    write_config
    export SLURM_CONF=$conf
    mungekey --create --keyfile="$dir/munge.key" --force >/dev/null 2>&1 || \
        dd if=/dev/urandom of="$dir/munge.key" bs=1k count=1 status=none
    chmod 600 "$dir/munge.key"
    munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" --pid-file="$dir/munged.pid" \
        --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>/dev/null
    slurmctld -f "$conf"
    slurmd -f "$conf"
    local deadline=$((SECONDS + 60)) state=""
    while [ $SECONDS -lt $deadline ]; do
        state=$(sinfo --noheader --format=%t 2>/dev/null | head -n 1 || true)
        [ "$state" = idle ] && break
        sleep 1
    done
    if [ "$state" != idle ]; then
        echo "slurm-single-node: the node did not become idle (state: ${state:-none}); logs in $dir" >&2
        down
        exit 1
    fi
    sinfo
    echo "slurm-single-node: up; run: export SLURM_CONF=$conf"
}

down() {
    if [ ! -f "$marker" ]; then
        echo "slurm-single-node: nothing to stop ($dir was not made by this script)"
        return
    fi
    export SLURM_CONF=$conf
    if running slurmctld; then
        scancel --full --quiet --partition=debug 2>/dev/null || true
        local deadline=$((SECONDS + 30))
        while [ $SECONDS -lt $deadline ] && [ -n "$(squeue --noheader 2>/dev/null)" ]; do sleep 1; done
    fi
    for daemon in slurmd slurmctld munged; do
        if running "$daemon"; then
            local pid
            pid=$(cat "$dir/$daemon.pid")
            kill "$pid"
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    rm -rf -- "$dir"
    echo "slurm-single-node: down"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    env) echo "export SLURM_CONF=$conf" ;;
    *) sed -n '2,14p' "$0"; exit 2 ;;
esac
