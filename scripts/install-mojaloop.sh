#!/usr/bin/env bash
# Installs a Mojaloop component out of the tree, from its git tag, for what runs it beside the
# service (each skips loudly without it):
#   bulk-api-adapter v17.2.6 (FSPIOP /bulkTransfers): test/bulk-kafka.test.ts
#   ml-api-adapter v16.10.1 (FSPIOP /transfers): test/mojaloop-install.test.ts's live variant,
#     scripts/golden-path/run.ts
#   quoting-service v17.14.5 (over central-ledger's MySQL tables): test/quoting-service.test.ts
#   ml-testing-toolkit v18.19.1 and ml-testing-toolkit-client-lib v1.12.3 (the Testing Toolkit
#     and its client): scripts/golden-path/run.ts
#
#   scripts/install-mojaloop.sh NAME [OUT_DIR]   (default under /work/build, else ~/.cache)
#
# What the npm registry here lacks is mended in package.json: patch versions bumped (or lowered)
# to ones it has, the client's placeholder `fs` dependency dropped, an undici override (undici 8
# needs Node >= 22); devDependencies and the lock file dropped; then `npm install --omit=dev`
# (the Kafka clients among them build node-rdkafka from source, ~2-5 min).
set -euo pipefail

COMPONENTS='bulk-api-adapter|ml-api-adapter|quoting-service'
COMPONENTS+='|ml-testing-toolkit|ml-testing-toolkit-client-lib'
NAME="${1:?usage: $0 $COMPONENTS [OUT_DIR]}"
UNDICI='"overrides": {"undici": "^7.18.2"}'
# Where it goes under /work/build (or ~/.cache), and what answers once it is installed: the
# Kafka clients' native node-rdkafka unless a component says otherwise.
DIR="$NAME"
INSTALLED="require('node-rdkafka')"
case "$NAME" in
  bulk-api-adapter)
    TAG=v17.2.6
    CHANGES='{"dependencies": {"@mojaloop/central-services-health": "15.2.3",
      "@mojaloop/central-services-stream": "11.9.3", "@mojaloop/object-store-lib": "12.2.4"}}'
    ;;
  ml-api-adapter)
    TAG=v16.10.1
    CHANGES='{"dependencies": {"@mojaloop/central-services-health": "15.2.3",
      "@mojaloop/central-services-metrics": "12.8.7", "@mojaloop/central-services-stream": "11.9.3",
      "@mojaloop/event-sdk": "14.8.5", "@mojaloop/sdk-standard-components": "19.19.1"},
      '"$UNDICI"'}'
    ;;
  quoting-service)
    TAG=v17.14.5
    CHANGES='{"dependencies": {"@mojaloop/central-services-health": "15.2.3",
      "@mojaloop/central-services-shared": "18.35.3",
      "@mojaloop/central-services-stream": "11.9.3"}}'
    ;;
  ml-testing-toolkit)
    TAG=v18.19.1
    DIR=ttk/ml-testing-toolkit
    CHANGES='{"dependencies": {"@mojaloop/ml-testing-toolkit-shared-lib": "14.3.0",
      "@mojaloop/sdk-standard-components": "19.18.8"}, '"$UNDICI"'}'
    INSTALLED="require.resolve('@hapi/hapi')"
    ;;
  ml-testing-toolkit-client-lib)
    TAG=v1.12.3
    DIR=ttk/cli
    CHANGES='{"dependencies": {}, "drop": ["fs"], '"$UNDICI"'}'
    INSTALLED="require.resolve('commander')"
    ;;
  *)
    echo "$0: unknown component $NAME (one of $COMPONENTS)" >&2
    exit 2
    ;;
esac
REPO="https://github.com/mojaloop/$NAME.git"
# Where github.com is out of reach, a git mirror of the repository (as this workplace's `fetch`
# leaves one) serves the same tag: NAME_MIRROR (upper case, _ for -) names another.
MIRROR_VARIABLE="$(echo "${NAME}_MIRROR" | tr 'a-z-' 'A-Z_')"
MIRROR="${!MIRROR_VARIABLE:-/work/.mirror/mojaloop+$NAME/repo}"
if [ -n "${2:-}" ]; then
  OUT="$2"
elif [ -d /work/build ]; then
  OUT="/work/build/$DIR"
else
  OUT="$HOME/.cache/$DIR"
fi
if [ -d "$OUT/node_modules" ] && (cd "$OUT" && node -e "$INSTALLED" 2>/dev/null); then
  echo "$NAME: $OUT already installed"
  exit 0
fi

rm -rf "$OUT"
mkdir -p "$(dirname "$OUT")"
if ! git clone --quiet --depth 1 --branch "$TAG" "$REPO" "$OUT"; then
  [ -d "$MIRROR" ] || exit 1
  echo "$NAME: $REPO unreachable, cloning $TAG from the mirror $MIRROR"
  rm -rf "$OUT"
  git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$TAG" "file://$MIRROR" "$OUT"
fi
rm -rf "$OUT/.git" "$OUT/package-lock.json"
node - "$OUT/package.json" "$CHANGES" <<'JS'
const fs = require('node:fs');
const [file, changes] = process.argv.slice(2);
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
const { dependencies, drop = [], overrides } = JSON.parse(changes);
for (const [name, version] of Object.entries(dependencies)) {
  if (!(name in pkg.dependencies)) throw new Error(`${name} is not a dependency of ${pkg.name}`);
  pkg.dependencies[name] = version;
}
for (const name of drop) delete pkg.dependencies[name];
if (overrides !== undefined) pkg.overrides = { ...pkg.overrides, ...overrides };
delete pkg.devDependencies;
fs.writeFileSync(file, JSON.stringify(pkg, null, 2));
JS
(cd "$OUT" && npm install --omit=dev --no-audit --no-fund)
(cd "$OUT" && node -e "$INSTALLED")
echo "$NAME: installed in $OUT"
