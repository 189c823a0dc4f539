# Sourced by tb-cluster.sh and local-stack.sh: stop one process they started.
#
#   stop_pid LABEL PID TIMEOUT_S
#
# SIGTERM (a controlled shutdown), then SIGKILL if it has not exited after TIMEOUT_S seconds.
stop_pid() {
  local label="$1" pid="$2" timeout_s="$3" waited=0
  kill -TERM "$pid"
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge $((timeout_s * 5)) ]; then
      echo "$label (pid $pid) ignored SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
    waited=$((waited + 1))
  done
  echo "$label stopped (pid $pid)"
}
