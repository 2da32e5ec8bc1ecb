#!/usr/bin/env bash
# The code index of a tree of more than 1 GB: COPIES copies of the Go
# distribution's src/ under one root, committed as one repository, indexed
# and queried by bench/cmd/indexq (build time and CPU, peak and held RSS,
# size on disk, and p50/p99 of find_symbol and search_code through the
# tools).
#
#   bench/big_tree.sh              # from the module root; COPIES=8, N=200
#
# Needs go, git and about 1.3 GB free under TMPDIR (git stores each blob
# once, so the repository's objects are the size of one copy).
set -euo pipefail
COPIES=${COPIES:-8}
N=${N:-200}
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/indexq" ./bench/cmd/indexq
tree="$work/tree"
mkdir "$tree"
for ((i = 1; i <= COPIES; i++)); do
	cp -a "$(go env GOROOT)/src" "$tree/src$i"
done
git -C "$tree" -c init.defaultBranch=main init -q
git -C "$tree" add -A
git -C "$tree" -c user.name=bench -c user.email=bench@example.com commit -q -m tree
echo "tree: $COPIES copies of $(go env GOROOT)/src ($(go version | cut -d' ' -f3)), $(git -C "$tree" ls-files | wc -l) files," \
	"$(du -sh --exclude=.git "$tree" | cut -f1); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/indexq" -repo "$tree" -n "$N"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
