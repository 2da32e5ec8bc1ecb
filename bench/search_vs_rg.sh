#!/usr/bin/env bash
# Compares search_code and list_files (run in-process through the Workspace,
# as the bot runs them) with ripgrep and git ls-files on a large real tree:
# a copy of the Go distribution's src/ committed into a fresh repository.
#
#   bench/search_vs_rg.sh            # from the module root
#   RUNS=20 bench/search_vs_rg.sh    # more runs per command
#
# Needs go, git, rg and hyperfine; installs the last two with apt-get when
# run as root, otherwise asks for them. Prints match counts from both sides
# so a reader can see the same work was done.
set -euo pipefail

RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
cd "$(dirname "$0")/.."

need() {
	command -v "$1" >/dev/null && return
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		apt-get install -y "$2" >/dev/null
	else
		echo "$1 is required: apt-get install $2" >&2
		exit 1
	fi
}
need rg ripgrep
need hyperfine hyperfine
need git git

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/searchbench" ./bench/cmd/searchbench
tree="$work/src"
cp -a "$(go env GOROOT)/src" "$tree"
(
	cd "$tree"
	git -c init.defaultBranch=main init -q
	git add -A
	git -c user.name=bench -c user.email=bench@example.com commit -q -m tree
)
echo "tree: $(go env GOROOT)/src ($(go version | cut -d' ' -f3)), $(git -C "$tree" ls-files | wc -l) files," \
	"$(du -sh --exclude=.git "$tree" | cut -f1); $(nproc) cores; $(rg --version | sed -n 1p); $(hyperfine --version)"

# rg searches what search_code searches: .gitignore honoured (rg does so by
# default), hidden files included (git lists them), .git itself left out,
# the Workspace's default deny-list (tools.DefaultDeny: keys, certificates,
# .env) left out, files over 2 MB skipped. Both count matching lines.
deny=(-g '!.env' -g '!.env.*' -g '!*.pem' -g '!*.key' -g '!*.p12' -g '!*.pfx' -g '!id_rsa*' -g '!id_dsa*'
	-g '!id_ecdsa*' -g '!id_ed25519*' -g '!.netrc' -g '!.npmrc' -g '!.pypirc' -g '!.pgpass' -g '!.git-credentials'
	-g '!credentials*.json')
rg=(rg --hidden -g '!.git' "${deny[@]}" --max-filesize 2M)
sb="$work/searchbench -dir $tree"

compare() { # name, rg args..., -- search_code JSON
	local name=$1
	shift
	local rgargs=()
	while [ "$1" != -- ]; do
		rgargs+=("$1")
		shift
	done
	local json=$2
	echo
	echo "## $name: rg ${rgargs[*]}  vs  search_code $json"
	echo "rg matching lines:          $("${rg[@]}" -c "${rgargs[@]}" "$tree" | awk -F: '{s += $NF} END {print s + 0}')"
	echo "search_code header:         $($sb -args "$json" 2>/dev/null | head -1)"
	echo -n "search_code in-process, file list cached (the bot's steady state): "
	$sb -cache -n "$RUNS" -args "$json" 2>&1 >/dev/null
	hyperfine -N -w "$WARMUP" -r "$RUNS" --export-markdown "$work/$name.md" \
		-n rg "$(printf '%q ' "${rg[@]}" -c "${rgargs[@]}" "$tree")" \
		-n search_code "$sb -args $(printf '%q' "$json")" >/dev/null
	tail -n +3 "$work/$name.md"
}

compare literal -F ErrUnexpectedEOF -- '{"pattern": "ErrUnexpectedEOF", "literal": true}'
compare inner-literal '\w+Error\(' -- '{"pattern": "\\w+Error\\("}'
compare no-literal '[A-Z][a-z]+[0-9]{2,}' -- '{"pattern": "[A-Z][a-z]+[0-9]{2,}"}'
compare ignore-case -i -F parseerror -- '{"pattern": "parseerror", "literal": true, "ignore_case": true}'

echo
echo "## listing: git ls-files  vs  Workspace.Files and list_files recursive"
echo "git ls-files:               $(git -C "$tree" ls-files | wc -l) files (before the deny-list)"
echo "rg --files:                 $(rg --files --hidden -g '!.git' "${deny[@]}" "$tree" | wc -l) files (deny-list applied)"
echo "Workspace.Files:            $($sb -mode files 2>/dev/null)"
echo "list_files recursive:       $($sb -mode list -args '{"recursive": true}' 2>/dev/null)"
echo -n "Workspace.Files in-process, uncached: "
$sb -mode files -n "$RUNS" 2>&1 >/dev/null
hyperfine -N -w "$WARMUP" -r "$RUNS" --export-markdown "$work/list.md" \
	-n "git ls-files" "git -C $tree ls-files" \
	-n "rg --files" "$(printf '%q ' rg --files --hidden -g '!.git' "${deny[@]}" "$tree")" \
	-n Workspace.Files "$sb -mode files" \
	-n "list_files recursive" "$sb -mode list -args $(printf '%q' '{"recursive": true}')" >/dev/null
tail -n +3 "$work/list.md"
