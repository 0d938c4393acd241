#!/bin/sh
# Runs the benchmark suite as BENCHMARKS.md reports it, from the bench
# module's root: go test -bench in groups, each with a -benchtime fit to
# what one iteration costs, every group -count $COUNT (default 6), all
# output in $OUT (default bench.txt); then benchstat's summary in
# $OUT.benchstat and the table of ratios against their targets.
#
#   ./run.sh                 # the full suite, about 40 minutes on 2 cores
#   COUNT=1 ./run.sh         # a quick look
#   BENCH=Ratio ./run.sh     # only the groups whose pattern matches
set -eu
cd "$(dirname "$0")"
COUNT=${COUNT:-6}
OUT=${OUT:-bench.txt}
BENCH=${BENCH:-.}

{
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# $(go version)"
	echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
	echo "# library: $(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown), $(git -C .. status --porcelain -- ':!bench' 2>/dev/null | wc -l) paths changed in the working tree"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT"

group() { # pattern benchtime
	case "$1" in *$BENCH*) ;; *) [ "$BENCH" = . ] || return 0 ;; esac
	go test -run '^$' -bench "$1" -benchtime "$2" -count "$COUNT" -timeout 60m . | tee -a "$OUT"
}

group '^BenchmarkRatio$' 3000x
group '^BenchmarkParts$' 3000x
group '^BenchmarkCall$' 2000x
group '^BenchmarkMCPGo$' 2000x
group '^BenchmarkGateway$' 3000x
group '^BenchmarkStdio$' 100x
group '^BenchmarkBatch$' 20x
group '^BenchmarkTools$' 40x
group '^BenchmarkList$' 10x
group '^BenchmarkMemory$' 1x
group '^BenchmarkSearch$' 20000x
group '^BenchmarkBudget$' 20x
group '^BenchmarkSearchIndex$' 20x
group '^BenchmarkOTel$' 3000x
group '^BenchmarkOTelCall$' 2000x

echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT"
if command -v benchstat >/dev/null 2>&1; then
	benchstat "$OUT" >"$OUT.benchstat"
elif [ -x "$(go env GOPATH)/bin/benchstat" ]; then
	"$(go env GOPATH)/bin/benchstat" "$OUT" >"$OUT.benchstat"
else
	echo "benchstat not found: go install golang.org/x/perf/cmd/benchstat@latest" >&2
fi
go run ./cmd/ratios "$OUT"
