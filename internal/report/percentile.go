package report

// Percentiles are the duration percentiles of a report, in whole seconds. They are exact: the
// aggregator keeps every duration as an int32 (4 MB for a million runs) and sorts them once,
// which is simpler and truer than a histogram's bucket bounds at that size.
type Percentiles struct {
	Count int   `json:"count"` // how many runs had a duration
	P50   int64 `json:"p50"`
	P90   int64 `json:"p90"`
	Max   int64 `json:"max"`
}

// percentiles summarises sorted durations.
func percentiles(sorted []int32) Percentiles {
	p := Percentiles{Count: len(sorted)}
	if len(sorted) == 0 {
		return p
	}
	p.P50 = int64(nearestRank(sorted, 50))
	p.P90 = int64(nearestRank(sorted, 90))
	p.Max = int64(sorted[len(sorted)-1])
	return p
}

// nearestRank is the p-th percentile of sorted values by the nearest-rank method: the smallest
// value with at least p% of the values at or below it, always one of the values (for a median of
// an even count, the lower middle one). 0 for no values.
func nearestRank(sorted []int32, p int) int32 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (p*n + 99) / 100 // ceil(p/100 · n), in integers
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}
