#!/usr/bin/env bash
# Local three-replica TigerBeetle cluster for development.
#
#   scripts/tb-cluster.sh start|stop|status
#
# Env: TIGERBEETLE_BIN (else `tigerbeetle` on PATH), TB_DATA_DIR (./.data/tigerbeetle),
#      TB_CLUSTER_ID (0), TB_PORTS ("3301,3302,3303"; 3001 is the service's admin port),
#      TB_CACHE_GRID (256MiB; the 1GiB default costs ~0.8 GB RSS more per replica).
set -euo pipefail
# shellcheck source=stop-pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop-pid.sh"

DATA_DIR="${TB_DATA_DIR:-./.data/tigerbeetle}"
CLUSTER_ID="${TB_CLUSTER_ID:-0}"
PORTS="${TB_PORTS:-3301,3302,3303}"
CACHE_GRID="${TB_CACHE_GRID:-256MiB}"
START_TIMEOUT_S=30
STOP_TIMEOUT_S=10

IFS=',' read -r -a PORT_LIST <<< "$PORTS"
if [ "${#PORT_LIST[@]}" -ne 3 ]; then
  echo "TB_PORTS must list exactly 3 ports, got: $PORTS" >&2
  exit 1
fi
# Every replica and client must see the same addresses in the same order:
# addresses[i] is replica i.
ADDRESSES=""
for port in "${PORT_LIST[@]}"; do ADDRESSES+="${ADDRESSES:+,}127.0.0.1:$port"; done

data_file() { echo "$DATA_DIR/${CLUSTER_ID}_$1.tigerbeetle"; }
pid_file() { echo "$DATA_DIR/replica_$1.pid"; }
log_file() { echo "$DATA_DIR/replica_$1.log"; }

# Prints the pid of replica $1 if its pid file names a live replica. Checking the
# command line too means a stale pid file whose pid was reused is never signalled.
running_pid() {
  local f pid
  f="$(pid_file "$1")"
  [ -f "$f" ] || return 1
  pid="$(cat "$f")"
  ps -p "$pid" -o args= 2>/dev/null | grep -qF -- "$(data_file "$1")" || return 1
  echo "$pid"
}

find_binary() {
  if [ -n "${TIGERBEETLE_BIN:-}" ]; then
    [ -x "$TIGERBEETLE_BIN" ] || { echo "TIGERBEETLE_BIN=$TIGERBEETLE_BIN is not executable" >&2; exit 1; }
    echo "$TIGERBEETLE_BIN"
  elif command -v tigerbeetle >/dev/null 2>&1; then
    command -v tigerbeetle
  else
    echo "tigerbeetle binary not found: set TIGERBEETLE_BIN or put tigerbeetle on PATH" >&2
    exit 1
  fi
}

# True when something accepts TCP connections on 127.0.0.1:$1 (bash /dev/tcp, no nc needed).
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cmd_start() {
  local bin i pid port deadline to_start=()
  bin="$(find_binary)"
  mkdir -p "$DATA_DIR"
  for i in 0 1 2; do
    if pid="$(running_pid "$i")"; then
      echo "replica $i already running (pid $pid)"
    elif port_open "${PORT_LIST[$i]}"; then
      # The readiness check only sees "something listens", so refuse a port that
      # another process holds (checked for all replicas before starting any).
      echo "port ${PORT_LIST[$i]} for replica $i is already in use" >&2
      exit 1
    else
      to_start+=("$i")
    fi
  done

  for i in "${to_start[@]}"; do
    # Formatting an existing file would destroy the ledger, so only format fresh ones.
    if [ ! -e "$(data_file "$i")" ]; then
      "$bin" format --cluster="$CLUSTER_ID" --replica="$i" --replica-count=3 "$(data_file "$i")" \
        >> "$(log_file "$i")" 2>&1 || { tail -n 5 "$(log_file "$i")" >&2; exit 1; }
    fi
    # nohup: the replicas must outlive this script and the terminal that ran it.
    nohup "$bin" start --addresses="$ADDRESSES" --cache-grid="$CACHE_GRID" "$(data_file "$i")" \
      >> "$(log_file "$i")" 2>&1 < /dev/null &
    echo $! > "$(pid_file "$i")"
  done

  # A replica listens only after it has opened its data file; wait for all three.
  deadline=$((SECONDS + START_TIMEOUT_S))
  for i in 0 1 2; do
    port="${PORT_LIST[$i]}"
    until port_open "$port" && running_pid "$i" >/dev/null; do
      if ! running_pid "$i" >/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
        echo "replica $i did not come up on 127.0.0.1:$port; log tail:" >&2
        tail -n 20 "$(log_file "$i")" >&2
        echo "(run '$0 stop' to stop the replicas that did start)" >&2
        exit 1
      fi
      sleep 0.2
    done
  done
  echo "TB_CLUSTER_ID=$CLUSTER_ID"
  echo "TB_ADDRESSES=$ADDRESSES"
}

cmd_stop() {
  local i pid
  for i in 0 1 2; do
    if pid="$(running_pid "$i")"; then
      stop_pid "replica $i" "$pid" "$STOP_TIMEOUT_S"
    else
      echo "replica $i not running"
    fi
    rm -f "$(pid_file "$i")"
  done
}

cmd_status() {
  local i pid
  for i in 0 1 2; do
    if pid="$(running_pid "$i")"; then
      echo "replica $i running (pid $pid, 127.0.0.1:${PORT_LIST[$i]})"
    else
      echo "replica $i stopped"
    fi
  done
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
