#!/usr/bin/env bash
# The engine-free equivalent of docker-compose.yml: the three-replica TigerBeetle cluster
# (scripts/tb-cluster.sh) and the service, started with the environment compose gives the
# service, then waited for until GET /health answers 200.
#
#   scripts/local-stack.sh start|stop|status
#
# The service's environment, lowest precedence first:
#   1. deploy/service.env: how the service behaves. docker-compose.yml reads the same file.
#   2. Where its dependencies are here. Compose sets the same names, to container addresses:
#        HOST=127.0.0.1          compose: 0.0.0.0 (a container must listen on its interface;
#                                here the service stays on the loopback)
#        TB_CLUSTER_ID           what tb-cluster.sh prints (its TB_CLUSTER_ID, default 0);
#                                compose: the same "0"
#        TB_ADDRESSES            what tb-cluster.sh prints: 127.0.0.1:3301,3302,3303 (TB_PORTS);
#                                compose: fixed container IPs <TB_SUBNET_PREFIX>.11-13:3000
#        MYSQL_ENABLED=false     compose: true, with its mysql container. No MySQL runs here
#                                unless you start one (then: MYSQL_ENABLED=true MYSQL_PASSWORD=..);
#                                without it the metadata is journalled in DATA_DIR
#        KAFKA_ENABLED=false     compose: true, with its kafka container; same reasoning
#        MYSQL_HOST=127.0.0.1, MYSQL_PORT=3306, MYSQL_USER=central_ledger,
#        MYSQL_DATABASE=central_ledger, KAFKA_BROKERS=127.0.0.1:9092
#                                used only when enabled; compose: mysql:3306, kafka:9092
#   3. Your environment: a variable you set wins (e.g. MYSQL_ENABLED=true, LOG_LEVEL=debug),
#      except TB_ADDRESSES, which always names the cluster this script runs. TB_CLUSTER_ID
#      reaches tb-cluster.sh too, so the cluster and the service agree.
#
# Env of this script: LOCAL_STACK_DIR (./.data/local-stack: pid file, service log),
# LOCAL_STACK_RUNNER (dist: `npm run build`, then node dist/src/main.js as in the image;
# tsx: node --import tsx src/main.ts, no build), HEALTH_TIMEOUT_S (60); and tb-cluster.sh's
# TIGERBEETLE_BIN, TB_DATA_DIR, TB_PORTS, TB_CACHE_GRID.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=stop-pid.sh
source scripts/stop-pid.sh

STACK_DIR="${LOCAL_STACK_DIR:-./.data/local-stack}"
RUNNER="${LOCAL_STACK_RUNNER:-dist}"
HEALTH_TIMEOUT_S="${HEALTH_TIMEOUT_S:-60}"
STOP_TIMEOUT_S=10
PID_FILE="$STACK_DIR/service.pid"
LOG_FILE="$STACK_DIR/service.log"

die() { echo "local-stack: $*" >&2; exit 1; }

case "$RUNNER" in
  dist) SERVICE_CMD=(node dist/src/main.js) ;;
  tsx) SERVICE_CMD=(node --import tsx src/main.ts) ;;
  *) die "LOCAL_STACK_RUNNER must be dist or tsx, not $RUNNER" ;;
esac

# Exports $1=$2 unless the caller's environment already sets $1.
default() {
  if [ -z "${!1+set}" ]; then export "$1=$2"; fi
}

# Layer 1: deploy/service.env (KEY=VALUE lines, # comments; the env_file format compose reads).
load_service_env() {
  local line key
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in '' | '#'*) continue ;; esac
    key="${line%%=*}"
    [[ "$key" =~ ^[A-Z][A-Z0-9_]*$ ]] || die "deploy/service.env: not KEY=VALUE: $line"
    default "$key" "${line#*=}"
  done < deploy/service.env
}

# Prints the service's pid if its pid file names a live service process of this checkout.
running_pid() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid="$(cat "$PID_FILE")"
  ps -p "$pid" -o args= 2>/dev/null | grep -qE -- 'dist/src/main\.js|src/main\.ts' || return 1
  echo "$pid"
}

# The same check as the image's HEALTHCHECK: node's fetch, 200 = healthy.
healthy() {
  node -e "fetch('http://127.0.0.1:$PORT/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cmd_start() {
  local cluster_out pid deadline
  mkdir -p "$STACK_DIR"
  load_service_env
  # The cluster first; its last lines are TB_CLUSTER_ID=... and TB_ADDRESSES=...
  cluster_out="$(bash scripts/tb-cluster.sh start)" || die "the TigerBeetle cluster did not start"
  echo "$cluster_out"
  export TB_CLUSTER_ID="$(sed -n 's/^TB_CLUSTER_ID=//p' <<< "$cluster_out")"
  export TB_ADDRESSES="$(sed -n 's/^TB_ADDRESSES=//p' <<< "$cluster_out")"
  [ -n "$TB_ADDRESSES" ] || die "tb-cluster.sh printed no TB_ADDRESSES"
  # Layer 2: where the dependencies are on this machine.
  default HOST 127.0.0.1
  default MYSQL_ENABLED false
  default MYSQL_HOST 127.0.0.1
  default MYSQL_PORT 3306
  default MYSQL_USER central_ledger
  default MYSQL_DATABASE central_ledger
  default KAFKA_ENABLED false
  default KAFKA_BROKERS 127.0.0.1:9092
  default PORT 3001

  if pid="$(running_pid)"; then
    echo "service already running (pid $pid)"
  else
    port_open "$PORT" && die "port $PORT for the service is already in use"
    if [ "$RUNNER" = dist ]; then
      npm run build > "$STACK_DIR/build.log" 2>&1 || { tail -n 20 "$STACK_DIR/build.log" >&2; die "npm run build failed (log: $STACK_DIR/build.log)"; }
    fi
    # nohup: the service must outlive this script and the terminal that ran it.
    nohup "${SERVICE_CMD[@]}" >> "$LOG_FILE" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
  fi

  deadline=$((SECONDS + HEALTH_TIMEOUT_S))
  until healthy; do
    if ! running_pid > /dev/null || [ "$SECONDS" -ge "$deadline" ]; then
      echo "service did not become healthy on http://127.0.0.1:$PORT/health; log tail:" >&2
      tail -n 20 "$LOG_FILE" >&2
      echo "(run '$0 stop' to stop the cluster and whatever did start)" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "service healthy: http://127.0.0.1:$PORT/health (pid $(cat "$PID_FILE"), log $LOG_FILE)"
}

cmd_stop() {
  local pid
  if pid="$(running_pid)"; then
    stop_pid service "$pid" "$STOP_TIMEOUT_S"
  else
    echo "service not running"
  fi
  rm -f "$PID_FILE"
  # The service first, so that it never logs a lost cluster.
  bash scripts/tb-cluster.sh stop
}

cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "service running (pid $pid)"
  else
    echo "service stopped"
  fi
  bash scripts/tb-cluster.sh status
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
