package taskgraph

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
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
		for _, d := range p.s.Set.Graph().deps[pl.Task] {
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

// ctxPolicy is a testPolicy that stops once its context ends, as the engines' policies do.
type ctxPolicy struct {
	*testPolicy
	ctx context.Context
}

func (p *ctxPolicy) Stopping() bool { return p.ctx.Err() != nil }

// TestSchedulerInterruptedWhileHeld: interrupted while no task is at work and the only ready
// one is held for later, the loop returns at once (it waited for a task's end that could never
// come: a run whose last task was held off a host that went offline hung on its interrupt).
func TestSchedulerInterruptedWhileHeld(t *testing.T) {
	p := newTestPolicy(t, nodes("held"), []slot{{"a1", "a"}})
	ctx, cancel := context.WithCancel(context.Background())
	p.place = func(i int, free []slot) int {
		p.s.Set.Hold(i, time.Now().Add(time.Hour))
		cancel() // interrupted while the loop has nothing to wait for but the hold
		return -1
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		p.s.Loop(ctx, p.mu, &ctxPolicy{p, ctx})
	}()
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted loop did not return: it waits for a task's end while none is at work")
	}
	if len(p.started) != 0 {
		t.Fatalf("started %v; want none", p.started)
	}
}

// claimPolicy claims from a counter of tasks, slot by slot, as the queue claims from its file:
// a slot whose claim finds none left retires, one that finds the next task not yet free (it
// waits for the one before it) waits.
type claimPolicy struct {
	mu      sync.Mutex
	s       *Scheduler[slot]
	n, next int
	doneMu  sync.Mutex
	done    map[int]bool
	atWork  map[string]bool
	ran     map[int]string
	retired []string
	t       *testing.T
}

func (p *claimPolicy) Stopping() bool { return false }
func (p *claimPolicy) Claim(sl slot) Take {
	if p.atWork[sl.id] {
		p.t.Errorf("slot %s offered while at work", sl.id)
	}
	if p.next == p.n {
		p.retired = append(p.retired, sl.id)
		return Take{Retire: true}
	}
	// Task 3 waits for task 2 to be done (a dependency the file says so).
	p.doneMu.Lock()
	blocked := p.next == 3 && !p.done[2]
	p.doneMu.Unlock()
	if blocked {
		return Take{Again: time.Now().Add(time.Hour)}
	}
	p.atWork[sl.id] = true
	p.next++
	return Take{Took: true, Task: p.next - 1}
}
func (p *claimPolicy) Run(i int, sl slot) {
	p.doneMu.Lock()
	p.done[i] = true
	p.doneMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ran[i] = sl.id
	delete(p.atWork, sl.id)
	p.s.Free(sl, false)
}

// TestClaimLoop: a Claimer's tasks each run once, a slot never offered while at work; a slot
// that waits is offered again when a task ends; the loop returns once every slot retired.
func TestClaimLoop(t *testing.T) {
	slots := []slot{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}}
	p := &claimPolicy{n: 8, done: map[int]bool{}, atWork: map[string]bool{}, ran: map[int]string{}, t: t}
	p.s = NewScheduler[slot](nil, slots)
	p.s.ClaimLoop(context.Background(), &p.mu, p)
	if len(p.ran) != 8 || len(p.retired) != 3 {
		t.Fatalf("ran %v, retired %v; want 8 tasks, 3 slots retired", p.ran, p.retired)
	}
}

// Retire returns the free slots that match, in order, and keeps the others, in order.
func TestSchedulerRetire(t *testing.T) {
	s := NewScheduler[slot](nil, []slot{{"a1", "a"}, {"b1", "b"}, {"a2", "a"}, {"c1", "c"}})
	gone := s.Retire(func(sl slot) bool { return sl.host == "a" })
	if want := []slot{{"a1", "a"}, {"a2", "a"}}; !reflect.DeepEqual(gone, want) {
		t.Fatalf("Retire = %v, want %v", gone, want)
	}
	if want := []slot{{"b1", "b"}, {"c1", "c"}}; !reflect.DeepEqual(s.free, want) {
		t.Fatalf("free after Retire = %v, want %v", s.free, want)
	}
	if gone := s.Retire(func(slot) bool { return false }); len(gone) != 0 || len(s.free) != 2 {
		t.Fatalf("Retire of nothing = %v, free %v", gone, s.free)
	}
}
