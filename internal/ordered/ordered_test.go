package ordered

import (
	"math/rand"
	"sync/atomic"
	"testing"
	"time"
)

func TestMapEmitsInOrderWithBoundedWindow(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		var inFlight, maxInFlight atomic.Int64
		var got []int
		Map(n, 4, 8, func(i int) int {
			cur := inFlight.Add(1)
			for {
				m := maxInFlight.Load()
				if cur <= m || maxInFlight.CompareAndSwap(m, cur) {
					break
				}
			}
			time.Sleep(time.Duration(rand.Intn(50)) * time.Microsecond)
			return i * 2
		}, func(i, v int) {
			inFlight.Add(-1)
			if v != i*2 {
				t.Errorf("emit(%d, %d), want value %d", i, v, i*2)
			}
			got = append(got, i)
		})
		if len(got) != n {
			t.Fatalf("Map(%d) emitted %d results", n, len(got))
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("Map(%d) emitted %d at position %d, want in order", n, v, i)
			}
		}
		if maxInFlight.Load() > 8 {
			t.Errorf("Map(%d) held %d results at once, want at most the window of 8", n, maxInFlight.Load())
		}
	}
}
