#!/usr/bin/env bash
# The memory of the service holding the code index of a large repository: a
# copy of the Go distribution's src/ committed into a fresh repository,
# opened as the service opens a path repository (bench/cmd/indexrss).
#
#   bench/index_rss.sh            # from the module root
#
# Three processes, one after the other: without an index (the baseline),
# with one built from scratch into a fresh data directory, and with the one
# the second saved, loaded as a restarted service loads it, which then sees
# a commit of 10 changed Go files and updates its index. Each prints its
# resident set size after a garbage collection, its peak, and the Go heap in
# use. Needs go and git.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/indexrss" ./bench/cmd/indexrss
tree="$work/src"
bench/gosrc.sh "$tree"
echo "tree: $(git -C "$tree" ls-files | wc -l) files, $(du -sh --exclude=.git "$tree" | cut -f1)"
echo "no index:  $("$work/indexrss" -repo "$tree" -data "$work/data" -index=false 2>/dev/null)"
echo "built:     $("$work/indexrss" -repo "$tree" -data "$work/data" 2>/dev/null)"
echo "loaded, then a 10-file commit:"
"$work/indexrss" -repo "$tree" -data "$work/data" -commit 10 2>/dev/null | sed 's/^/           /'
echo "on disk:   $(du -sh "$work/data/index" | cut -f1)"
