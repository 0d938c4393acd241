#!/bin/sh
# A/B of the benchmark suite against another commit, side by side: both
# test binaries are built first (the other commit's from a temporary git
# worktree), then run alternately, ROUNDS rounds of -count 1, so that a
# drift of the machine's speed falls on both alike. benchstat compares the
# two outputs.
#
#   ./ab.sh 6db563a                        # the groups below, 6 rounds
#   BENCH='^BenchmarkTools$' ./ab.sh 6db563a
#   ROUNDS=10 OUT=results/ab-x ./ab.sh REV  # REV.txt and head.txt under OUT
set -eu
cd "$(dirname "$0")"
old=$1
ROUNDS=${ROUNDS:-6}
OUT=${OUT:-ab}
BENCH=${BENCH:-'^Benchmark(Ratio|Call|Batch|Tools|List)$'}
TIME=${TIME:-}
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'git -C .. worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C .. worktree add --detach "$tmp/old" "$old" >/dev/null
(cd "$tmp/old/bench" && go test -c -o "$tmp/old.test" .)
go test -c -o "$tmp/new.test" .
# The benchmarks' fixtures read the module's files (testdata, node_modules):
# each binary runs in its own tree.
ln -s "$(cd .. && pwd)/node_modules" "$tmp/old/node_modules" 2>/dev/null || true
: >"$OUT/$old.txt"
: >"$OUT/head.txt"
for i in $(seq "$ROUNDS"); do
	for side in old new; do
		if [ $side = old ]; then dir="$tmp/old/bench" f="$OUT/$old.txt"; else dir=. f="$OUT/head.txt"; fi
		echo "# round $i, $side, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$f"
		(cd "$dir" && "$tmp/$side.test" -test.run '^$' -test.bench "$BENCH" ${TIME:+-test.benchtime "$TIME"} -test.count 1 -test.benchmem -test.timeout 60m) >>"$f"
	done
done
if command -v benchstat >/dev/null; then
	benchstat "$OUT/$old.txt" "$OUT/head.txt" | tee "$OUT/benchstat.txt"
fi
