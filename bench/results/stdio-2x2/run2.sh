#!/bin/sh
set -eu
cd /tmp/ab
for g in on off; do for s in old new; do : > gc$g-$s.txt; done; done
for i in $(seq 10); do
  for g in on off; do
    for s in old new; do
      [ $s = old ] && dir=/tmp/ab/old/bench || dir=/work/main/bench
      if [ $g = off ]; then export GOGC=off; else unset GOGC; fi
      (cd $dir && /tmp/ab/$s.test -test.run '^$' -test.bench 'BenchmarkCall/Stdio/raw$' -test.benchtime 2000x -test.count 1 -test.benchmem) | grep Benchmark | sed "s/BenchmarkCall/BenchmarkCall-$g/" >> gc$g-$s.txt
    done
  done
done
unset GOGC
