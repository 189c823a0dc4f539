#!/usr/bin/env bash
# Load test of a running service: generate the data, run jmeter/plan/central-ledger.jmx through
# Maven, print the figures. See jmeter/README.md.
#
#   HOST=127.0.0.1 PORT=3001 THREADS=8 bash jmeter/run.sh
#
# Env (all optional):
#   HOST, PORT          the service, started with JMETER_ENABLED=true (127.0.0.1, 3001)
#   CONFIG              generator config (jmeter/config/default.json)
#   SEED                data seed; default a fresh one per run, because the names and transfer
#                       ids come from it and a ledger that keeps its state refuses them twice
#   DATA_DIR            where the data goes (jmeter/data/latest)
#   THREADS, RAMP_UP    JMeter threads per thread group (4) and their ramp-up in s (1)
#   LOOPS               iterations per thread, -1 = until the data is used up (-1)
#   DURATION            upper bound of each thread group in s (3600)
#   MVN                 the Maven command (mvn); MVN_ARGS: more arguments for it
# Exit status: 0 only when the Maven build passed, no sample failed and every action type has
# the number of samples the data set says.
set -euo pipefail

JMETER_DIR="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$JMETER_DIR/.." && pwd)"
cd "$ROOT"

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-3001}"
CONFIG="${CONFIG:-$JMETER_DIR/config/default.json}"
SEED="${SEED:-$(date +%s)-$RANDOM}"
DATA_DIR="${DATA_DIR:-$JMETER_DIR/data/latest}"
THREADS="${THREADS:-4}"
RAMP_UP="${RAMP_UP:-1}"
LOOPS="${LOOPS:--1}"
DURATION="${DURATION:-3600}"
MVN="${MVN:-mvn}"
BUILD_DIR="$JMETER_DIR/target"
RESULTS="$BUILD_DIR/jmeter/results/central-ledger.csv"
REPORT="$BUILD_DIR/jmeter/reports/central-ledger/index.html"
LOG="$BUILD_DIR/maven.log"

for tool in java "$MVN"; do
  command -v "$tool" >/dev/null 2>&1 || { echo "jmeter/run.sh: $tool not found (needs a JDK >= 8 and Maven >= 3.5.2)" >&2; exit 2; }
done
case "$DATA_DIR" in /*) ;; *) DATA_DIR="$ROOT/$DATA_DIR" ;; esac

# The service must answer, with the /jmeter routes on: 3002 (unknown URI) means JMETER_ENABLED is off.
node -e '
  const base = `http://${process.argv[1]}:${process.argv[2]}`;
  (async () => {
    const health = await fetch(`${base}/health`).catch((e) => ({ status: `unreachable (${e.cause?.code ?? e.message})` }));
    if (health.status !== 200) throw new Error(`GET ${base}/health: ${health.status}`);
    const probe = await (await fetch(`${base}/jmeter/participants/fspJMpreflight`)).json();
    if (probe?.errorInformation?.errorCode === "3002") throw new Error(`${base} has no /jmeter routes: start it with JMETER_ENABLED=true`);
  })().catch((e) => { console.error(`jmeter/run.sh: ${e.message}`); process.exit(2); });
' "$HOST" "$PORT"

echo "== data: $CONFIG, seed $SEED (SEED=$SEED reproduces it) -> $DATA_DIR"
npx --no-install tsx "$JMETER_DIR/generator/cli.ts" --config "$CONFIG" --seed "$SEED" --out "$DATA_DIR"

echo "== JMeter through Maven against http://$HOST:$PORT, $THREADS threads (log: $LOG)"
# Maven's output goes to a file outside target/ (which `clean` empties first) and moves in at the
# end; meanwhile JMeter's periodic summary lines are shown as they come.
LOG_TMP="$(mktemp)"
set +e
# shellcheck disable=SC2086
"$MVN" -B -f "$JMETER_DIR/pom.xml" clean verify \
  -Djmeter.host="$HOST" -Djmeter.port="$PORT" -Djmeter.threads="$THREADS" -Djmeter.rampUp="$RAMP_UP" \
  -Djmeter.loops="$LOOPS" -Djmeter.duration="$DURATION" -Djmeter.dataDir="$DATA_DIR" ${MVN_ARGS:-} \
  > "$LOG_TMP" 2>&1 &
MVN_PID=$!
tail --pid="$MVN_PID" -n +1 -F "$LOG_TMP" 2>/dev/null | grep --line-buffered -E 'summary [+=]|BUILD (SUCCESS|FAILURE)|Failures: |ERROR\]'
wait "$MVN_PID"
MVN_STATUS=$?
set -e
mkdir -p "$BUILD_DIR"
mv "$LOG_TMP" "$LOG"

echo
if [ ! -s "$RESULTS" ]; then
  echo "jmeter/run.sh: no results at $RESULTS; Maven said:" >&2
  tail -n 30 "$LOG" >&2
  exit 1
fi
echo "== results: $RESULTS"
if [ -f "$REPORT" ]; then echo "== HTML dashboard: $REPORT"; fi
set +e
npx --no-install tsx "$JMETER_DIR/summary.ts" "$RESULTS" --manifest "$DATA_DIR/manifest.json"
SUMMARY_STATUS=$?
set -e
if [ "$MVN_STATUS" -ne 0 ]; then echo "jmeter/run.sh: the Maven build failed (exit $MVN_STATUS), see $LOG" >&2; exit 1; fi
if [ "$SUMMARY_STATUS" -ne 0 ]; then echo "jmeter/run.sh: errors, or samples missing: see above" >&2; exit 1; fi
echo "jmeter/run.sh: passed"
