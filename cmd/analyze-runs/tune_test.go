package main

import (
	"runtime/debug"
	"testing"

	"github.com/agentfleet/fleet/internal/report"
)

// TestTuneForCache: while a scan takes beads from the cache the garbage collector runs at
// cacheGCPercent under cacheMemoryLimit plus report.CacheScanMemory, never above the limit it
// had; both are put back after, and neither is touched when GOGC / GOMEMLIMIT set them.
func TestTuneForCache(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	const pairs = 1000
	done := tuneForCache(true, true)(pairs)
	if got := debug.SetGCPercent(cacheGCPercent); got != cacheGCPercent {
		t.Errorf("GC percent %d during the scan, want %d", got, cacheGCPercent)
	}
	if got, want := debug.SetMemoryLimit(-1), cacheMemoryLimit+report.CacheScanMemory(pairs); got != want {
		t.Errorf("memory limit %d during the scan, want %d", got, want)
	}
	done()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after the scan: GC percent %d, want 100 put back", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("after the scan: memory limit %d, want %d put back", got, int64(1<<40))
	}

	debug.SetMemoryLimit(1 << 20)
	done = tuneForCache(true, true)(pairs)
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Errorf("under a lower limit: %d during the scan, want it kept (%d)", got, 1<<20)
	}
	done()

	debug.SetGCPercent(50)
	done = tuneForCache(false, false)(pairs)
	if gc, lim := debug.SetGCPercent(50), debug.SetMemoryLimit(-1); gc != 50 || lim != 1<<20 {
		t.Errorf("with GOGC and GOMEMLIMIT set: GC percent %d, limit %d, want 50 and %d untouched", gc, lim, 1<<20)
	}
	done()
}
