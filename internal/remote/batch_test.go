package remote

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestRefBatchJoins: the pushes asked while one runs go together in one run after it; a joined
// run that fails is run again one request at a time, so that only the request whose ref is
// refused fails.
func TestRefBatchJoins(t *testing.T) {
	var b refBatch
	var mu sync.Mutex
	var runs [][]string
	first, release := make(chan struct{}), make(chan struct{})
	run := func(_ context.Context, _ string, specs []string) error {
		mu.Lock()
		runs = append(runs, specs)
		n := len(runs)
		mu.Unlock()
		if n == 1 {
			close(first)
			<-release
		}
		if slices.Contains(specs, "bad") {
			return errors.New("refused")
		}
		return nil
	}
	ctx := context.Background()
	errs := make(chan error, 4)
	go func() { errs <- b.do(ctx, "repo", []string{"a"}, run) }()
	<-first
	var wg sync.WaitGroup
	for _, spec := range []string{"b", "c", "bad"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.do(ctx, "repo", []string{spec}, run)
			if (err != nil) != (spec == "bad") {
				t.Errorf("push of %s: %v", spec, err)
			}
		}()
	}
	// The three wait behind the first: each is queued before it is released.
	for {
		b.mu.Lock()
		n := len(b.waiting)
		b.mu.Unlock()
		if n == 3 {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-errs; err != nil {
		t.Errorf("the first push: %v", err)
	}
	wg.Wait()
	var got []string
	for _, r := range runs {
		got = append(got, strings.Join(r, "+"))
	}
	// The first alone; the three joined (in the order they came); then, the joined one
	// refused, each alone.
	if len(got) != 5 || got[0] != "a" || len(runs[1]) != 3 {
		t.Errorf("runs %q, want a, then the three joined, then each of them alone", got)
	}
}
