package taskgraph

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"
)

// slot is a test's slot: an agent on a host.
type slot struct{ id, host string }

// testPolicy runs each task by ending it at once (done, or failed when fail says so), and
// checks what the Scheduler promises as it goes.
type testPolicy struct {
	t     *testing.T
	mu    *sync.Mutex
	s     *Scheduler[slot]
	fail  map[int]bool
	halt  bool // stop starting after a failure
	place func(i int, free []slot) int

	failed  bool
	atWork  int
	most    int
	started []int
	queued  map[int]bool
}

func (p *testPolicy) Stopping() bool { return p.halt && p.failed }
func (p *testPolicy) Queued(tasks []int) {
	for _, i := range tasks {
		p.queued[i] = true
	}
}
func (p *testPolicy) Place(i int, free []slot) int {
	if p.place != nil {
		return p.place(i, free)
	}
	return 0
}
func (p *testPolicy) Assign(placed []Placed[slot]) {
	for _, pl := range placed {
		if !p.queued[pl.Task] {
			p.t.Errorf("task %d assigned without being told ready", pl.Task)
		}
		for _, d := range p.s.Set.Graph().Deps(pl.Task) {
			if p.s.Set.State(d) != Done {
				p.t.Errorf("task %d assigned before its dependency %d is done", pl.Task, d)
			}
		}
		p.started = append(p.started, pl.Task)
		if p.atWork++; p.atWork > p.most {
			p.most = p.atWork
		}
	}
}
func (p *testPolicy) Launched([]Placed[slot]) {}
func (p *testPolicy) Run(i int, sl slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.atWork--
	if p.fail[i] {
		p.failed = true
		p.s.Set.Fail(i)
	} else {
		p.s.Set.Done(i)
	}
	p.s.Free(sl, false)
}

func newTestPolicy(t *testing.T, ns []Node, slots []slot) *testPolicy {
	set, _ := NewSet(New(ns), func(int) State { return Waiting })
	mu := &sync.Mutex{}
	return &testPolicy{t: t, mu: mu, s: NewScheduler(set, slots), fail: map[int]bool{}, queued: map[int]bool{}}
}

// TestSchedulerRunsEveryTaskOnce: on random graphs, every task runs once, after its
// dependencies, never more at once than there are slots.
func TestSchedulerRunsEveryTaskOnce(t *testing.T) {
	slots := []slot{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}}
	for seed := int64(1); seed <= 20; seed++ {
		ns := randomGraph(rand.New(rand.NewSource(seed)), 60, 3, false)
		p := newTestPolicy(t, ns, slots)
		p.s.Loop(context.Background(), p.mu, p)
		seen := map[int]bool{}
		for _, i := range p.started {
			if seen[i] {
				t.Fatalf("seed %d: task %d ran twice", seed, i)
			}
			seen[i] = true
		}
		if len(seen) != len(ns) || p.most > len(slots) {
			t.Fatalf("seed %d: %d of %d tasks ran, at most %d at once", seed, len(seen), len(ns), p.most)
		}
	}
}

// TestSchedulerStopsStarting: once the policy stops (a halt rule met by a failure), no task
// starts, the failed task's dependents are blocked, and the loop returns.
func TestSchedulerStopsStarting(t *testing.T) {
	ns := nodes("a b:a c d")
	p := newTestPolicy(t, ns, []slot{{"s1", "h"}})
	p.fail[0], p.halt = true, true
	p.s.Loop(context.Background(), p.mu, p)
	if fmt.Sprint(p.started) != "[0]" || p.s.Set.State(1) != Blocked || p.s.Set.State(2) != Ready {
		t.Fatalf("started %v, b %v, c %v; want [0], blocked, ready", p.started, p.s.Set.State(1), p.s.Set.State(2))
	}
}

// TestSchedulerPlaceAndHold: a task the policy will not place waits for a slot at work, and one
// it holds runs once its time has come, the loop waking for it.
func TestSchedulerPlaceAndHold(t *testing.T) {
	ns := nodes("wants-b held other")
	p := newTestPolicy(t, ns, []slot{{"a1", "a"}, {"b1", "b"}})
	until := time.Now().Add(20 * time.Millisecond)
	p.place = func(i int, free []slot) int {
		switch {
		case i == 0: // only on host b
			for k, s := range free {
				if s.host == "b" {
					return k
				}
			}
			return -1
		case i == 1 && p.s.Set.NotBefore(1).IsZero():
			p.s.Set.Hold(1, until)
			return -1
		}
		return 0
	}
	p.s.Loop(context.Background(), p.mu, p)
	if len(p.started) != 3 || p.s.Set.State(0) != Done || p.s.Set.State(1) != Done {
		t.Fatalf("started %v", p.started)
	}
}
