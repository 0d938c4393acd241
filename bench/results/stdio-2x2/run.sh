#!/bin/sh
# 2x2: client binary x stdio child binary, interleaved rounds.
set -eu
cd /tmp/ab
for f in cold-cold cold-cnew cnew-cold cnew-cnew; do : > $f.txt; done
for i in 1 2 3 4 5 6; do
  for client in old new; do
    for child in old new; do
      f=c$client-c$child.txt
      [ $client = old ] && dir=/tmp/ab/old/bench || dir=/work/main/bench
      echo "# round $i load $(cut -d' ' -f1-3 /proc/loadavg)" >> $f
      (cd $dir && CONDUIT_BENCH_STDIO_EXE=/tmp/ab/$child.test /tmp/ab/$client.test -test.run '^$' -test.bench 'BenchmarkCall/Stdio/(raw|hub)$' -test.benchtime 2000x -test.count 1 -test.benchmem) >> $f
    done
  done
done
