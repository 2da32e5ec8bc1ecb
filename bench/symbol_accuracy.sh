#!/usr/bin/env bash
# How often find_symbol puts a definition first, and among its first five
# hits (bench/cmd/symacc): 500 definitions sampled (seeded) from a copy of
# the Go distribution's src/ with go/parser, and 500 from a non-Go tree
# sampled from universal-ctags' own tags (PYTREE, by default Python's
# standard library as Debian installs it).
#
#   bench/symbol_accuracy.sh                 # from the module root
#   N=1000 SEED=2 MISSES=1 bench/symbol_accuracy.sh
#
# Needs go, git and universal-ctags.
set -euo pipefail
N=${N:-500}
SEED=${SEED:-1}
PYTREE=${PYTREE:-/usr/lib/python3.11}
misses=()
[ -n "${MISSES:-}" ] && misses=(-misses)
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/symacc" ./bench/cmd/symacc
tree="$work/src"
bench/gosrc.sh "$tree"
echo "trees: $(go env GOROOT)/src ($(go version | cut -d' ' -f3)), $(git -C "$tree" ls-files | wc -l) files;" \
	"$PYTREE, $(find "$PYTREE" -name '*.py' | wc -l) .py files; $(ctags --version | sed -n 1p | cut -d, -f1);" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/symacc" -dir "$tree" -n "$N" -seed "$SEED" "${misses[@]}"
"$work/symacc" -dir "$PYTREE" -lang ctags -n "$N" -seed "$SEED" "${misses[@]}"
