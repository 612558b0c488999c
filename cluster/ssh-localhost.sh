#!/usr/bin/env bash
# A throwaway sshd on 127.0.0.1, for trying SSH cluster specs (distributed.SSHCluster) on one machine.
#
#   usage: ssh-localhost.sh up|down
#     up    start an sshd of its own (its own config, host key and a client key made for it, all in
#           $DKERNEL_SSHD_DIR) listening on 127.0.0.1 on a free port, accepting that key only, and
#           write $DKERNEL_SSHD_DIR/ssh-localhost.yaml: a dkernel cluster spec of a scheduler and
#           two workers on 127.0.0.1 through it. Use it as  --cluster $DKERNEL_SSHD_DIR/ssh-localhost.yaml
#     down  stop that sshd and the sessions it started, and remove $DKERNEL_SSHD_DIR
#
# The remote commands run `$PYTHON` (default: the python3 on PATH), with this shell's PYTHONPATH.
# The system's sshd and its configuration are not touched. Default folder: /tmp/dkernel-sshd.
set -euo pipefail

dir=${DKERNEL_SSHD_DIR:-/tmp/dkernel-sshd}
marker="$dir/.dkernel-ssh-localhost"
python=${PYTHON:-$(command -v python3)}

running() { [ -f "$dir/sshd.pid" ] && kill -0 "$(cat "$dir/sshd.pid")" 2>/dev/null; }

descendants() {  # the process ids below $1, deepest first
    local child
    for child in $(ps -o pid= --ppid "$1"); do
        descendants "$child"
        echo "$child"
    done
}

up() {
    if [ -f "$marker" ] && running; then
        echo "ssh-localhost: already up; spec $dir/ssh-localhost.yaml"
        return
    fi
    if [ -e "$dir" ] && [ ! -f "$marker" ]; then
        echo "ssh-localhost: $dir exists and was not made by this script; set DKERNEL_SSHD_DIR" >&2
        exit 2
    fi
    local sshd port user
    sshd=$(command -v sshd || echo /usr/sbin/sshd)
    [ -x "$sshd" ] || { echo "ssh-localhost: no sshd binary (install openssh-server)" >&2; exit 2; }
    mkdir -p "$dir"
    touch "$marker"
    chmod 700 "$dir"
    if [ ! -d /run/sshd ]; then  # sshd's privilege separation folder
        mkdir -p /run/sshd && touch "$dir/.made-run-sshd"
    fi
    ssh-keygen -q -t ed25519 -N "" -f "$dir/host_ed25519" -C dkernel-sshd-host
    ssh-keygen -q -t ed25519 -N "" -f "$dir/id_ed25519" -C dkernel-sshd-client
    cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    user=$(id -un)
    cat >"$dir/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
AllowUsers $user
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
X11Forwarding no
AllowTcpForwarding no
EOF
    "$sshd" -f "$dir/sshd_config" -E "$dir/sshd.log"
    echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$dir/host_ed25519.pub")" >"$dir/known_hosts"
    cat >"$dir/ssh-localhost.yaml" <<EOF
# A scheduler and two one-thread workers on 127.0.0.1, started over the throwaway sshd of
# cluster/ssh-localhost.sh; every server listens on 127.0.0.1 (the hosts are loopback).
kind: ssh
hosts: [127.0.0.1, 127.0.0.1, 127.0.0.1]
connect_options:
  port: $port
  username: $user
  client_keys: [$dir/id_ed25519]
  known_hosts: $dir/known_hosts
worker_options:
  nthreads: 1
remote_python: env PYTHONPATH=${PYTHONPATH:-} $python
EOF
    for _ in $(seq 50); do running && break; sleep 0.1; done
    running || { echo "ssh-localhost: sshd did not start; see $dir/sshd.log" >&2; down; exit 1; }
    echo "ssh-localhost: sshd on 127.0.0.1:$port; spec $dir/ssh-localhost.yaml"
}

down() {
    if [ ! -f "$marker" ]; then
        echo "ssh-localhost: nothing to stop ($dir was not made by this script)"
        return
    fi
    if running; then
        local pid
        pid=$(cat "$dir/sshd.pid")
        for child in $(descendants "$pid"); do kill "$child" 2>/dev/null || true; done
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    if [ -f "$dir/.made-run-sshd" ]; then rmdir /run/sshd 2>/dev/null || true; fi
    rm -rf -- "$dir"
    echo "ssh-localhost: down"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
esac
