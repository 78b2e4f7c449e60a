#!/bin/sh
# Builds every function package in this folder into OUTDIR/<name>.wasm, with a
# copy of its manifest.json as OUTDIR/<name>.manifest.json. The binaries are build outputs:
# never commit them.
#
#   runtime/fn/packages/build.sh OUTDIR
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

for dir in "$here"/*/; do
	name=$(basename "$dir")
	[ -f "$dir/manifest.json" ] || continue
	# A native package (python) is embedded by Go from its folder: nothing to build.
	grep -q '"engine": *"native"' "$dir/manifest.json" && continue
	# -s -w drop symbol and DWARF tables: a smaller module compiles faster in
	# wazero; panics still print function names from the Go pclntab.
	(cd "$dir" && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$out/$name.wasm" .)
	cp "$dir/manifest.json" "$out/$name.manifest.json"
	echo "built $name.wasm"
done
