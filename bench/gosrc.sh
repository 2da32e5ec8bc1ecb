#!/usr/bin/env bash
# Copies the Go distribution's src/ into DIR and commits it there as one
# commit of a fresh repository: the large real tree the benchmarks share.
#
#   bench/gosrc.sh DIR
set -euo pipefail
tree=$1
cp -a "$(go env GOROOT)/src" "$tree"
cd "$tree"
git -c init.defaultBranch=main init -q
git add -A
git -c user.name=bench -c user.email=bench@example.com commit -q -m tree
