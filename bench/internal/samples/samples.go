// Package samples records per-iteration durations in a benchmark and
// reports their percentiles as custom metrics, since a Go benchmark's ns/op
// is a mean.
package samples

import (
	"slices"
	"testing"
	"time"
)

// Durations is a recorder of per-iteration durations.
type Durations struct{ d []time.Duration }

// Add records one duration.
func (s *Durations) Add(d time.Duration) { s.d = append(s.d, d) }

// Time runs f and records how long it took.
func (s *Durations) Time(f func()) {
	t := time.Now()
	f()
	s.d = append(s.d, time.Since(t))
}

// Len is the number of durations recorded.
func (s *Durations) Len() int { return len(s.d) }

// Quantile returns the q-quantile (0 <= q <= 1) of the durations, by the
// nearest-rank method; zero when nothing was recorded.
func (s *Durations) Quantile(q float64) time.Duration {
	if len(s.d) == 0 {
		return 0
	}
	sorted := slices.Clone(s.d)
	slices.Sort(sorted)
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Mean returns the mean duration.
func (s *Durations) Mean() time.Duration {
	if len(s.d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s.d {
		sum += d
	}
	return sum / time.Duration(len(s.d))
}

// Report reports the p50 and p99 as "<prefix>p50-ns/op" and
// "<prefix>p99-ns/op".
func (s *Durations) Report(b *testing.B, prefix string) {
	if len(s.d) == 0 {
		return
	}
	b.ReportMetric(float64(s.Quantile(0.50).Nanoseconds()), prefix+"p50-ns/op")
	b.ReportMetric(float64(s.Quantile(0.99).Nanoseconds()), prefix+"p99-ns/op")
}

// Pair runs base and subject alternately, b.N times each, swapping their
// order every iteration so that drift (GC, frequency scaling, a noisy
// neighbour) falls on both alike, and reports each side's p50 and the
// ratios subject/base of their p50s and p99s as "x-p50" and "x-p99" (the
// figure to compare with a target) and of their means as "x-mean". ns/op is
// the time of one base plus one subject.
func Pair(b *testing.B, base, subject func()) {
	var sb, ss Durations
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			sb.Time(base)
			ss.Time(subject)
		} else {
			ss.Time(subject)
			sb.Time(base)
		}
	}
	ReportPair(b, &sb, &ss)
}

// ReportPair reports the metrics of Pair for durations recorded elsewhere.
func ReportPair(b *testing.B, base, subject *Durations) {
	if base.Len() == 0 || subject.Len() == 0 {
		return
	}
	b.ReportMetric(float64(base.Quantile(0.5).Nanoseconds()), "base-p50-ns")
	b.ReportMetric(float64(subject.Quantile(0.5).Nanoseconds()), "subj-p50-ns")
	b.ReportMetric(ratio(subject.Quantile(0.5), base.Quantile(0.5)), "x-p50")
	b.ReportMetric(ratio(subject.Quantile(0.99), base.Quantile(0.99)), "x-p99")
	b.ReportMetric(ratio(subject.Mean(), base.Mean()), "x-mean")
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
