#!/usr/bin/env bash
# Compares search_code and list_files (run in-process through the Workspace,
# as the bot runs them) with ripgrep and git ls-files on a large real tree:
# a copy of the Go distribution's src/ committed into a fresh repository.
#
#   bench/search_vs_rg.sh                              # from the module root
#   RUNS=20 bench/search_vs_rg.sh                      # more rounds per pattern
#   BASELINE=/tmp/searchbench-old bench/search_vs_rg.sh  # also time an older build
#
# The machine this runs on is usually shared, and its load drifts over
# seconds, so timing one command ten times and then the other ten times
# compares two different machines. Each round here runs every contender once,
# back to back, in an order that alternates between rounds; the report gives
# each one's median and the median of the per-round ratios to rg.
#
# search_code runs three times per round: scanning (searchbench), as it
# does until the index of a commit is ready, and through the code index as
# `bot tool search_code JSON --repo TREE` runs it, a fresh process that
# loads the index saved in its BOT_DATA_DIR (built and saved once before the
# rounds), and as `bot tool search_code JSON --in NAME` runs it over the
# same tree served as a url repository (a clone the service keeps), run
# here (--local) and handed to a bot serve running on that data directory.
# In-process figures through the index come from searchbench -data,
# which opens the repository as the service does, over its own data
# directory.
#
# Needs go, git and rg; installs rg with apt-get when run as root, otherwise
# asks for it. Prints match counts from both sides so a reader can see the
# same work was done. BASELINE is a searchbench binary built from another
# commit (git show <rev>:bench/cmd/searchbench is not enough: build it in a
# checkout of that commit with go build -o /tmp/searchbench-old ./bench/cmd/searchbench).
set -euo pipefail

RUNS=${RUNS:-15}
WARMUP=${WARMUP:-2}
BASELINE=${BASELINE:-}
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
need git git

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/searchbench" ./bench/cmd/searchbench
go build -o "$work/bot" ./cmd/bot
tree="$work/src"
bench/gosrc.sh "$tree"
echo "tree: $(go env GOROOT)/src ($(go version | cut -d' ' -f3)), $(git -C "$tree" ls-files | wc -l) files," \
	"$(du -sh --exclude=.git "$tree" | cut -f1); $(nproc) cores; $(rg --version | sed -n 1p); $(git --version);" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg)"

# rg searches what search_code searches: .gitignore honoured (rg does so by
# default), hidden files included (git lists them), .git itself left out,
# the Workspace's default deny-list (tools.DefaultDeny, printed by
# searchbench so the two cannot drift; case-insensitive, as the Workspace
# matches it) left out, files over 2 MB skipped. Both count matching lines.
deny=()
while IFS= read -r glob; do
	deny+=(--iglob "$glob")
done < <("$work/searchbench" -mode rg-globs)
rg=(rg --hidden -g '!.git' "${deny[@]}" --max-filesize 2M)
sb="$work/searchbench -dir $tree"
sbx="$sb -data $work/data"
bot="env BOT_DATA_DIR=$work/botdata $work/bot tool search_code"
start=$EPOCHREALTIME
$bot '{"pattern": "x"}' --repo "$tree" >/dev/null
echo "bot tool: index built and saved in $(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}') s: $(du -sh "$work/botdata/index" | cut -f1)"
# The same tree as a url repository of BOT_CONFIG, as the service serves
# one: a bare clone to fetch from, cloned into its own data directory by the
# first call, which also builds and saves the index; later calls use that
# clone as fetched (less than BOT_REPO_SYNC ago) and the checkout the call
# before left.
git clone -q --bare "$tree" "$work/remote.git"
printf 'repos:\n  - name: tree\n    url: file://%s\n    channels: ["*"]\n' "$work/remote.git" >"$work/askrepo.yaml"
botin="env BOT_CONFIG=$work/askrepo.yaml BOT_DATA_DIR=$work/botdata-url BOT_REPO_SYNC=24h $work/bot tool --local search_code"
$botin '{"pattern": "x"}' --in tree >/dev/null
# And with bot serve running on that data directory, which bot tool hands
# its call to: the service, connected to a fake Slack (bench/cmd/fakeslack),
# holds the checkout, its listing and the index loaded.
go build -o "$work/fakeslack" ./bench/cmd/fakeslack
"$work/fakeslack" >"$work/slack.env" &
fakeslack=$! served=
trap 'kill $fakeslack $served 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
until [ -s "$work/slack.env" ]; do sleep 0.05; done
env $(cat "$work/slack.env") OPENAI_API_KEY= BOT_CONFIG="$work/askrepo.yaml" BOT_DATA_DIR="$work/botdata-url" BOT_REPO_SYNC=24h \
	BOT_HTTP_ADDR=127.0.0.1:0 BOT_LOG_LEVEL=debug "$work/bot" serve >"$work/serve.log" 2>&1 &
served=$!
until grep -qs '"msg":"code index ready"' "$work/serve.log" && grep -qs '"msg":"taking bot tool calls"' "$work/serve.log"; do
	kill -0 $served 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
	sleep 0.1
done
botsvc="env BOT_CONFIG=$work/askrepo.yaml BOT_DATA_DIR=$work/botdata-url BOT_REPO_SYNC=24h $work/bot tool search_code"
handed() { grep -c '"msg":"ran a bot tool call"' "$work/serve.log"; }
$sbx -args '{"pattern": "x"}' >/dev/null 2>&1

# rounds NAME=COMMAND... times each command once per round, RUNS rounds
# after WARMUP unrecorded ones, alternating the order, and prints each one's
# median in ms and its median ratio to the first.
rounds() {
	local names=() cmds=() i r n=$#
	for arg in "$@"; do
		names+=("${arg%%=*}")
		cmds+=("${arg#*=}")
	done
	local times=()
	for ((r = -WARMUP; r < RUNS; r++)); do
		local order=() row=()
		for ((i = 0; i < n; i++)); do order+=($i); done
		((r % 2)) && order=($(printf '%s\n' "${order[@]}" | tac))
		for i in "${order[@]}"; do
			local t0=$EPOCHREALTIME
			eval "${cmds[$i]}" >/dev/null 2>&1
			local t1=$EPOCHREALTIME
			row[$i]=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}')
		done
		((r >= 0)) && times+=("${row[*]}")
	done
	local IFS='|'
	local joined="${names[*]}"
	unset IFS
	printf '%s\n' "${times[@]}" | awk -v names="$joined" '
		function median(a, k,   i, j, t) {
			for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
		}
		{ for (i = 1; i <= NF; i++) { t[i, NR] = $i; q[i, NR] = $i / $1 } }
		END {
			split(names, nm, "|")
			printf "| %-22s | %9s | %9s | %9s | %16s |\n", "", "median ms", "min ms", "max ms", "ratio (median)"
			printf "|%s|%s|%s|%s|%s|\n", "---", "---", "---", "---", "---"
			for (i = 1; i <= NF; i++) {
				for (r = 1; r <= NR; r++) { a[r] = t[i, r]; b[r] = q[i, r] }
				mn = a[1]; mx = a[1]; for (r = 2; r <= NR; r++) { if (a[r] < mn) mn = a[r]; if (a[r] > mx) mx = a[r] }
				printf "| %-22s | %9.0f | %9.0f | %9.0f | %15.2fx |\n", nm[i], median(a, NR), mn, mx, median(b, NR)
			}
		}'
}

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
	echo "bot tool search_code:       $($bot "$json" --repo "$tree" 2>/dev/null | head -1)"
	echo "bot tool search_code --in:  $($botin "$json" --in tree 2>/dev/null | head -1)"
	local before=$(handed)
	echo "bot tool, bot serve runs:   $($botsvc "$json" --in tree 2>/dev/null | head -1) (the service ran $(($(handed) - before)) call)"
	echo -n "search_code through the index in-process, file list cached: "
	$sbx -cache -n "$RUNS" -args "$json" 2>&1 >/dev/null
	local contenders=("rg=$(printf '%q ' "${rg[@]}" -c "${rgargs[@]}" "$tree")"
		"search_code=$sb -args $(printf '%q' "$json")"
		"bot tool, index=$bot $(printf '%q' "$json") --repo $tree"
		"bot tool --in, index=$botin $(printf '%q' "$json") --in tree"
		"bot tool, serve runs=$botsvc $(printf '%q' "$json") --in tree")
	[ -n "$BASELINE" ] && contenders+=("search_code (baseline)=$BASELINE -dir $tree -args $(printf '%q' "$json")")
	rounds "${contenders[@]}"
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
listing=("git ls-files=git -C $tree ls-files"
	"git ls-files, others=git -C $tree ls-files --cached --others --exclude-standard"
	"rg --files=$(printf '%q ' rg --files --hidden -g '!.git' "${deny[@]}" "$tree")"
	"Workspace.Files=$sb -mode files"
	"list_files recursive=$sb -mode list -args $(printf '%q' '{"recursive": true}')")
[ -n "$BASELINE" ] && listing+=("Workspace.Files (baseline)=$BASELINE -dir $tree -mode files")
rounds "${listing[@]}"
