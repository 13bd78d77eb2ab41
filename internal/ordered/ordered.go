// Package ordered runs independent jobs in parallel and hands their results back in job order,
// so a tool can read thousands of files on every core and still print a sorted, reproducible
// report without holding all the results in memory.
package ordered

import "sync"

// Map calls fn(i) for every i in [0, n) on workers goroutines and calls emit(i, result) in
// increasing order of i, from the calling goroutine. At most window results (window ≥ workers)
// are held at once, so memory stays flat however large n is.
func Map[T any](n, workers, window int, fn func(i int) T, emit func(i int, v T)) {
	if workers < 1 {
		workers = 1
	}
	if window < workers {
		window = workers
	}
	type item struct {
		i int
		v T
	}
	jobs := make(chan int)
	results := make(chan item, window)
	// Each token is one result in flight or waiting to be emitted; the producer takes one before
	// starting a job and emit gives it back, which bounds what is held to window results.
	tokens := make(chan struct{}, window)

	go func() {
		for i := 0; i < n; i++ {
			tokens <- struct{}{}
			jobs <- i
		}
		close(jobs)
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results <- item{i, fn(i)}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	pending := make(map[int]T, window)
	next := 0
	for it := range results {
		pending[it.i] = it.v
		for {
			v, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			emit(next, v)
			next++
			<-tokens
		}
	}
}
