#!/usr/bin/env bash
# Builds FerretDB v1.24.0 (a MongoDB-compatible server in Go, here on SQLite) from its Go module, for
# the bulk tests' object store (test/support/ferretdb.ts). Debian packages no MongoDB server.
#
#   scripts/build-ferretdb.sh [OUT_DIR]     (default /work/build/ferretdb, else ~/.cache/ferretdb)
#
# Two workarounds (docs/bulk.md): `go install …@v1.24.0` fails (the proxy refuses the module's
# version list, read for the deprecation check), so a scratch module requires it and builds it; and
# the module's zip lacks the generated build/version/version.txt the binary panics without, so the
# module is copied out of the module cache, the file written, and the build redone against the copy.
set -euo pipefail

VERSION=v1.24.0
MODULE=github.com/FerretDB/FerretDB
if [ -n "${1:-}" ]; then
  OUT="$1"
elif [ -d /work/build ]; then
  OUT=/work/build/ferretdb
else
  OUT="$HOME/.cache/ferretdb"
fi
BIN="$OUT/bin/ferretdb"
if [ -x "$BIN" ]; then
  echo "ferretdb: $BIN already built"
  exit 0
fi
command -v go >/dev/null || { echo "ferretdb: no Go toolchain on PATH" >&2; exit 1; }

SCRATCH="$OUT/module"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH" "$OUT/bin"
cd "$SCRATCH"
go mod init local/ferretdb-build >/dev/null 2>&1
go mod edit -require="$MODULE@$VERSION"
cat >tools.go <<'EOF'
//go:build tools

package tools

import _ "github.com/FerretDB/FerretDB/cmd/ferretdb"
EOF
go mod tidy
go mod download "$MODULE@$VERSION"

# The copy with the version file the release build would have generated.
SOURCE="$(go list -m -f '{{.Dir}}' "$MODULE")"
rm -rf "$OUT/source"
cp -r "$SOURCE" "$OUT/source"
chmod -R u+w "$OUT/source"
echo "$VERSION" >"$OUT/source/build/version/version.txt"
go mod edit -replace="$MODULE=$OUT/source"
go mod tidy
go build -o "$BIN" "$MODULE/cmd/ferretdb"
"$BIN" --version | head -3
echo "ferretdb: built $BIN"
