#!/bin/sh
# One TigerBeetle replica of the StatefulSet, run in the official image (Alpine, busybox sh):
#
#   tigerbeetle-replica.sh init    init container: make sure this replica has its data file
#   tigerbeetle-replica.sh start   main container: run the replica (exec, under tini)
#
# Environment (templates/tigerbeetle-statefulset.yaml sets all of it):
#   POD_NAME              <statefulset>-<ordinal>: the ordinal is the replica index
#   TB_CLUSTER_ID         cluster id (decimal u128); fixed for the life of the data
#   TB_REPLICA_COUNT      number of replicas; fixed for the life of the data
#   TB_REPLICA_ADDRESSES  host:port of every replica, in replica order: addresses[i] is replica i
#   TB_BIND_HOST          what this replica listens on (0.0.0.0; [::] on IPv6-only clusters)
#   TB_CACHE_GRID         grid cache, e.g. 256MiB (memory requests are sized from it)
#   TB_ALLOW_FORMAT       "true" only while the cluster is created (see values tigerbeetle.allowFormat)
#   TB_DATA_DIR (/data), TB_BIN (/tigerbeetle), TB_PROBE_TIMEOUT_S (15), TB_DNS_TIMEOUT_S (300)
#
# Why names are resolved here: TigerBeetle 0.17.9 accepts only IP addresses in --addresses. The
# names are per-replica ClusterIP Services, whose IPs never change while the release exists
# (unlike pod IPs), so resolving them once at start is safe. The replica's own entry is its bind
# address instead: a pod cannot listen on its Service's IP. Only position matters to TigerBeetle
# (addresses[i] reaches replica i), so the lists agree on every replica and client.
#
# Why `init` is careful: formatting is for a replica that has never run. A replica whose data
# file was lost (volume deleted, disk failed) must be recreated with `tigerbeetle recover`, which
# joins the running cluster and syncs; formatting it instead could lose committed transfers
# (docs.tigerbeetle.com, "Recovering"). So with no data file:
#   - the cluster answers a request  -> recover (it exists, and is healthy enough to sync us);
#   - else, TB_ALLOW_FORMAT=true     -> format (the cluster is being created: nobody answers yet);
#   - else                           -> fail and say why (the pod retries; nothing is written).
set -eu

TB_DATA_DIR="${TB_DATA_DIR:-/data}"
TB_BIN="${TB_BIN:-/tigerbeetle}"
TB_PROBE_TIMEOUT_S="${TB_PROBE_TIMEOUT_S:-15}"
TB_DNS_TIMEOUT_S="${TB_DNS_TIMEOUT_S:-300}"
TB_ALLOW_FORMAT="${TB_ALLOW_FORMAT:-false}"

log() { echo "tigerbeetle-replica: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

: "${POD_NAME:?}" "${TB_CLUSTER_ID:?}" "${TB_REPLICA_COUNT:?}" "${TB_REPLICA_ADDRESSES:?}"
: "${TB_BIND_HOST:?}" "${TB_CACHE_GRID:?}"

replica="${POD_NAME##*-}"
case "$replica" in '' | *[!0-9]*) die "no replica index at the end of POD_NAME=$POD_NAME" ;; esac
case "$TB_CLUSTER_ID" in '' | *[!0-9]*) die "TB_CLUSTER_ID=$TB_CLUSTER_ID is not a decimal number" ;; esac

count=0
for _ in $(echo "$TB_REPLICA_ADDRESSES" | tr ',' ' '); do count=$((count + 1)); done
[ "$count" -eq "$TB_REPLICA_COUNT" ] || die "TB_REPLICA_ADDRESSES has $count entries, TB_REPLICA_COUNT is $TB_REPLICA_COUNT"
[ "$replica" -lt "$TB_REPLICA_COUNT" ] || die "replica index $replica >= TB_REPLICA_COUNT $TB_REPLICA_COUNT"

file="$TB_DATA_DIR/${TB_CLUSTER_ID}_${replica}.tigerbeetle"

# host:port -> ip:port, waiting for DNS (the Services exist before the pods, but DNS can lag).
resolve() {
  host="${1%:*}"
  port="${1##*:}"
  case "$host" in \[*) echo "$1"; return ;; esac # an IPv6 literal already
  waited=0
  while :; do
    ip="$(getent hosts "$host" | awk 'NR == 1 { print $1 }')" || ip=""
    [ -n "$ip" ] && break
    [ "$waited" -lt "$TB_DNS_TIMEOUT_S" ] || die "cannot resolve $host after ${TB_DNS_TIMEOUT_S}s"
    log "waiting for DNS name $host"
    sleep 2
    waited=$((waited + 2))
  done
  case "$ip" in *:*) ip="[$ip]" ;; esac
  echo "$ip:$port"
}

# The --addresses list. $1 = own: this replica's entry is its bind address (for `start`);
# $1 = all: every entry resolved (for a client such as the probe, and for `recover`).
addresses() {
  list=""
  i=0
  for entry in $(echo "$TB_REPLICA_ADDRESSES" | tr ',' ' '); do
    if [ "$1" = own ] && [ "$i" -eq "$replica" ]; then
      address="$TB_BIND_HOST:${entry##*:}"
    else
      address="$(resolve "$entry")"
    fi
    list="$list${list:+,}$address"
    i=$((i + 1))
  done
  echo "$list"
}

# True when the cluster answers a request within TB_PROBE_TIMEOUT_S (a read: changes nothing).
# The repl exits 0 when it finds the account and 1 with "No accounts were found." when it does
# not: both are answers. With no quorum it waits, and timeout stops it.
cluster_answers() {
  reply="$(timeout "$TB_PROBE_TIMEOUT_S" "$TB_BIN" repl --cluster="$TB_CLUSTER_ID" --addresses="$1" \
    --command="lookup_accounts id=1" 2>&1)" && return 0
  case "$reply" in *"No accounts were found"*) return 0 ;; esac
  return 1
}

cmd_init() {
  if [ -e "$file" ]; then
    log "replica $replica: data file $file exists; starting it"
    return 0
  fi
  # A data file under another name means this volume belongs to a different cluster id or
  # replica (tigerbeetle.clusterId changed?): never put a second ledger next to it.
  for other in "$TB_DATA_DIR"/*.tigerbeetle; do
    [ -e "$other" ] || continue
    die "replica $replica: found $other but expected $file; refusing to format or recover (did tigerbeetle.clusterId change?)"
  done
  rm -f "$file.partial"
  all="$(addresses all)"
  if cluster_answers "$all"; then
    log "replica $replica: no data file, and the cluster answers: recovering (state sync from the other replicas)"
    "$TB_BIN" recover --cluster="$TB_CLUSTER_ID" --addresses="$all" --replica="$replica" \
      --replica-count="$TB_REPLICA_COUNT" "$file.partial"
  elif [ "$TB_ALLOW_FORMAT" = true ]; then
    log "replica $replica: no data file and no cluster yet: formatting (cluster $TB_CLUSTER_ID, $TB_REPLICA_COUNT replicas)"
    "$TB_BIN" format --cluster="$TB_CLUSTER_ID" --replica="$replica" \
      --replica-count="$TB_REPLICA_COUNT" "$file.partial"
  else
    die "replica $replica: no data file, and the cluster did not answer within ${TB_PROBE_TIMEOUT_S}s.
  Formatting is allowed only while the cluster is created (tigerbeetle.allowFormat): formatting
  a replica that has run before could lose committed transfers. If the other replicas are
  starting, this pod retries and recovers once they answer. If this is a brand-new cluster,
  install with tigerbeetle.allowFormat=true."
  fi
  # Renamed only when complete: an interrupted format/recover is redone, never started.
  mv "$file.partial" "$file"
}

cmd_start() {
  [ -e "$file" ] || die "replica $replica: no data file $file (the init container creates it)"
  own="$(addresses own)"
  log "replica $replica: starting with --addresses=$own"
  exec "$TB_BIN" start --addresses="$own" --cache-grid="$TB_CACHE_GRID" "$file"
}

case "${1:-}" in
  init) cmd_init ;;
  start) cmd_start ;;
  *) die "usage: $0 init|start" ;;
esac
