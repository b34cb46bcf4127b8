#!/usr/bin/env bash
# A real Slurm on this machine, for ddpbench's Slurm launcher tests (and for trying it by hand).
#
#   scripts/slurm-local.sh install          apt-get install slurm-wlm munge (root, Debian/Ubuntu)
#   scripts/slurm-local.sh start [NODES]    munged + slurmctld + NODES slurmd (default 1; n1, n2, ...)
#   scripts/slurm-local.sh stop             stop them all
#
# Everything lives in $DDPBENCH_SLURM_DIR (default /tmp/ddpbench-slurm): its own slurm.conf, state,
# spool and logs; nothing under /etc/slurm is touched. Clients find it through SLURM_CONF, which
# `start` prints as an export line. Every node runs on this machine (Debian's build has
# MULTIPLE_SLURMD: `slurmd -N n2`), each on a port of its own and NodeAddr=127.0.0.1, so node
# names need not resolve. Ports are ones the OS reports free now, not fixed numbers.
set -euo pipefail

DIR=${DDPBENCH_SLURM_DIR:-/tmp/ddpbench-slurm}
CONF=$DIR/slurm.conf

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

install() {
    [ "$(id -u)" = 0 ] || { echo "install needs root" >&2; exit 1; }
    command -v slurmctld >/dev/null && command -v munged >/dev/null && return
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
}

start_munge() {
    mkdir -p /run/munge /var/log/munge /var/lib/munge /etc/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge
    chmod 0755 /run/munge
    if [ ! -s /etc/munge/munge.key ]; then
        /usr/sbin/mungekey --create --force 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    fi
    pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
}

write_conf() {
    local nodes=$1 cpus
    cpus=$(nproc)
    mkdir -p "$DIR/state"
    cat > "$CONF" <<EOF
ClusterName=ddpbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool-%n
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd-%n.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd-%n.log
EOF
    for i in $(seq 1 "$nodes"); do
        echo "NodeName=n$i NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$cpus State=UNKNOWN" >> "$CONF"
    done
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >> "$CONF"
}

start() {
    local nodes=${1:-1}
    stop >/dev/null 2>&1 || true
    start_munge
    write_conf "$nodes"
    export SLURM_CONF=$CONF
    slurmctld -f "$CONF"
    for i in $(seq 1 "$nodes"); do
        mkdir -p "$DIR/spool-n$i"
        slurmd -f "$CONF" -N "n$i"
    done
    # up when every node is idle
    for _ in $(seq 1 100); do
        if [ "$(sinfo -h -o '%t' -N 2>/dev/null | grep -c idle)" = "$nodes" ]; then
            echo "export SLURM_CONF=$CONF"
            return 0
        fi
        sleep 0.1
    done
    echo "slurm did not come up; see $DIR/*.log" >&2
    sinfo -N >&2 || true
    return 1
}

stop() {
    local pid
    for f in "$DIR"/slurmd-*.pid "$DIR"/slurmctld.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
    rm -rf "$DIR/state" "$DIR"/spool-*
}

case "${1:-}" in
    install) install ;;
    start) start "${2:-1}" ;;
    stop) stop ;;
    *) echo "usage: $0 install | start [NODES] | stop" >&2; exit 2 ;;
esac
