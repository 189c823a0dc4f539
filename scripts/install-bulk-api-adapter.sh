#!/usr/bin/env bash
# Installs bulk-api-adapter v17.2.6 (Mojaloop's FSPIOP /bulkTransfers front) out of the tree, for
# test/bulk-kafka.test.ts (test/support/bulk-api-adapter.ts starts it).
#
#   scripts/install-bulk-api-adapter.sh [OUT_DIR]   (default /work/build/bulk-api-adapter, else
#                                                    ~/.cache/bulk-api-adapter)
#
# From its git tag, with three patch versions this npm registry lacks bumped to ones it has
# (central-services-health 15.2.3, central-services-stream 11.9.3, object-store-lib 12.2.4), its
# devDependencies and lock file dropped; `npm install --omit=dev` builds node-rdkafka (~5 min).
set -euo pipefail

TAG=v17.2.6
REPO=https://github.com/mojaloop/bulk-api-adapter.git
# Where github.com is out of reach, a git mirror of the repository (as this workplace's `fetch`
# leaves one) serves the same tag.
MIRROR="${BULK_API_ADAPTER_MIRROR:-/work/.mirror/mojaloop+bulk-api-adapter/repo}"
if [ -n "${1:-}" ]; then
  OUT="$1"
elif [ -d /work/build ]; then
  OUT=/work/build/bulk-api-adapter
else
  OUT="$HOME/.cache/bulk-api-adapter"
fi
if [ -d "$OUT/node_modules/node-rdkafka" ]; then
  echo "bulk-api-adapter: $OUT already installed"
  exit 0
fi

rm -rf "$OUT"
if ! git clone --quiet --depth 1 --branch "$TAG" "$REPO" "$OUT"; then
  [ -d "$MIRROR" ] || exit 1
  echo "bulk-api-adapter: $REPO unreachable, cloning $TAG from the mirror $MIRROR"
  rm -rf "$OUT"
  git clone --quiet --depth 1 --branch "$TAG" "file://$MIRROR" "$OUT"
fi
rm -rf "$OUT/.git" "$OUT/package-lock.json"
node - "$OUT/package.json" <<'EOF'
const fs = require('node:fs');
const file = process.argv[2];
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
const bumps = {
  '@mojaloop/central-services-health': '15.2.3',
  '@mojaloop/central-services-stream': '11.9.3',
  '@mojaloop/object-store-lib': '12.2.4',
};
for (const [name, version] of Object.entries(bumps)) pkg.dependencies[name] = version;
delete pkg.devDependencies;
fs.writeFileSync(file, JSON.stringify(pkg, null, 2));
EOF
(cd "$OUT" && npm install --omit=dev --no-audit --no-fund)
(cd "$OUT" && node -e "require('node-rdkafka')")
echo "bulk-api-adapter: installed in $OUT"
