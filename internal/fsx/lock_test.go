package fsx

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A waiter whose context ends returns at once, and the lock it was waiting for is not kept by
// the flock it leaves behind: the next taker gets it as soon as the holder lets go.
func TestLockFileCancelledWaiterLeavesNoLock(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "state.lock")
	unlock, err := LockFile(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := LockFile(ctx, lock)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // blocked in flock by now
	t0 := time.Now()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrLocked) {
			t.Errorf("cancelled LockFile = %v, want ErrLocked", err)
		}
		if d := time.Since(t0); d > time.Second {
			t.Errorf("cancelled LockFile returned after %s", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled LockFile did not return")
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil { // a second unlock is harmless
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	unlock2, err := LockFile(ctx2, lock)
	if err != nil {
		t.Fatalf("LockFile after the holder and a cancelled waiter let go = %v", err)
	}
	unlock2()
}

// Many waiters on one lock (each its own open file, as separate processes would be) all get
// it, one at a time.
func TestLockFileManyWaitersExclusive(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "state.lock")
	const n = 100
	var inside, max, total atomic.Int32
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := LockFile(ctx, lock)
			if err != nil {
				t.Error(err)
				return
			}
			if v := inside.Add(1); v > max.Load() {
				max.Store(v)
			}
			time.Sleep(time.Millisecond)
			total.Add(1)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if max.Load() != 1 || total.Load() != n {
		t.Errorf("%d took the lock, at most %d at once; want %d, 1", total.Load(), max.Load(), n)
	}
}
