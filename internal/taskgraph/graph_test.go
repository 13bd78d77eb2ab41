package taskgraph

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

func nodes(spec string) []Node {
	// "a:b,c b:c c" — each task, then the ids it depends on.
	var out []Node
	for _, f := range strings.Fields(spec) {
		id, deps, _ := strings.Cut(f, ":")
		n := Node{ID: id}
		if deps != "" {
			n.Deps = strings.Split(deps, ",")
		}
		out = append(out, n)
	}
	return out
}

func TestCycle(t *testing.T) {
	for _, c := range []struct {
		spec string
		want []string
	}{
		{"a b:a c:a,b", nil},
		{"a:a", []string{"a", "a"}},
		{"a:b b:a", []string{"a", "b", "a"}},
		{"a:b b:c c:b", []string{"b", "c", "b"}},
		{"x a:b b:c c:a", []string{"a", "b", "c", "a"}},
		// The first dependency is followed first: the cycle through c is named, not through d.
		{"a:c,d c:a d:a", []string{"a", "c", "a"}},
		// An id that is no task is a leaf.
		{"a:gone b:a,gone", nil},
		{"a:gone,b b:a", []string{"a", "b", "a"}},
	} {
		if got := New(nodes(c.spec)).Cycle(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Cycle(%q) = %v, want %v", c.spec, got, c.want)
		}
	}
}

// An id given to two nodes names the first; the second is a node still, and a dependency on the
// id is one on the first.
func TestDuplicateIDNamesFirst(t *testing.T) {
	g := New(nodes("a:x b a:b c:a"))
	if i, ok := g.Index("a"); !ok || i != 0 || g.Len() != 4 || g.ID(2) != "a" {
		t.Fatalf("Index(a) = %d %v, Len %d", i, ok, g.Len())
	}
	if got := g.deps[3]; !reflect.DeepEqual(got, []int{0}) {
		t.Fatalf("Deps(c) = %v, want [0]", got)
	}
}

// A chain of 100,000 tasks is walked without recursion.
func TestCycleLongChain(t *testing.T) {
	n := 100000
	ns := make([]Node, n)
	for i := range ns {
		ns[i].ID = fmt.Sprint("t", i)
		if i+1 < n {
			ns[i].Deps = []string{fmt.Sprint("t", i+1)}
		}
	}
	if c := New(ns).Cycle(); c != nil {
		t.Fatalf("Cycle = %v, want none", c)
	}
	ns[n-1].Deps = []string{"t0"}
	if c := New(ns).Cycle(); len(c) != n+1 || c[0] != "t0" || c[n] != "t0" {
		t.Fatalf("Cycle has %d ids (%v ... ), want the whole chain", len(c), c[:2])
	}
}

func TestReadyOrderByRankThenPosition(t *testing.T) {
	ns := []Node{{ID: "low", Rank: 2}, {ID: "mid1", Rank: 1}, {ID: "high", Rank: 0, Deps: []string{"mid1"}}, {ID: "mid2", Rank: 1}}
	s, _ := NewSet(New(ns), func(int) State { return Waiting })
	var got []string
	for {
		i, ok := s.Pop()
		if !ok {
			break
		}
		got = append(got, s.Graph().ID(i))
		s.Done(i)
	}
	want := []string{"mid1", "high", "mid2", "low"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run order = %v, want %v", got, want)
	}
}

func TestFailBlocksTransitivelyAndRetry(t *testing.T) {
	// b and c depend on a; d on b and c; e on nothing.
	g := New(nodes("a b:a c:a d:b,c e"))
	s, _ := NewSet(g, func(int) State { return Waiting })
	a, _ := s.Pop()
	if g.ID(a) != "a" {
		t.Fatalf("first = %s", g.ID(a))
	}
	blocked := s.Fail(a)
	var got []string
	for _, b := range blocked {
		got = append(got, g.ID(b.Task)+"<"+g.ID(b.By))
	}
	if want := []string{"b<a", "c<a", "d<b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Fail(a) blocked %v, want %v", got, want)
	}
	if i, _ := s.Pop(); g.ID(i) != "e" || s.Len() != 0 {
		t.Fatalf("after the failure the ready set is %s and %d more, want e alone", g.ID(i), s.Len())
	}
	s = reopen(s, a)
	for _, id := range []string{"a", "b", "c", "d"} {
		if i, _ := g.Index(id); s.State(i) == Blocked || s.State(i) == Failed {
			t.Fatalf("after the retry of a, %s is %v", id, s.State(i))
		}
	}
	if i, ok := s.Peek(); !ok || g.ID(i) != "a" || s.State(3) != Waiting || s.State(4) != Taken {
		t.Fatalf("after the retry: peek %v %v, d %v, e %v", i, ok, s.State(3), s.State(4))
	}
}

// reopen is a new Set over s's graph in s's states but for task retried and the blocked tasks,
// which wait again, and the held ones, held still: a failed task retried, as the queue's
// Reblock makes its Set again from the tasks' states.
func reopen(s *Set, retried int) *Set {
	n, _ := NewSet(s.g, func(i int) State {
		if st := s.State(i); st != Blocked && i != retried {
			return st
		}
		return Waiting
	})
	for i := range s.g.Len() {
		if s.State(i) == Held {
			n.Hold(i, s.NotBefore(i))
		}
	}
	return n
}

func TestHoldRelease(t *testing.T) {
	g := New(nodes("a b c"))
	s, _ := NewSet(g, func(int) State { return Waiting })
	t0 := time.Unix(1000, 0)
	a, _ := s.Pop()
	s.Hold(a, t0.Add(time.Minute))
	s.Hold(1, t0.Add(time.Second))
	if s.Len() != 1 || !s.NextRelease().Equal(t0.Add(time.Second)) {
		t.Fatalf("Len %d, NextRelease %v", s.Len(), s.NextRelease())
	}
	s.Release(t0.Add(2 * time.Second))
	if i, _ := s.Peek(); g.ID(i) != "b" || !s.NextRelease().Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the first release: peek %s, next %v", g.ID(i), s.NextRelease())
	}
	s.Requeue(a) // given back before its time: the stale held entry is skipped
	if !s.NextRelease().IsZero() || s.Len() != 3 {
		t.Fatalf("after Requeue: next %v, Len %d", s.NextRelease(), s.Len())
	}
}

// rescan is the reference the Set replaces, as the engines computed it before by scanning
// every task: swarmrun's runner.ready() (pending or queued tasks whose dependencies are all
// completed or skipped, not held, stably sorted by priority rank over the manifest order) and
// its block() (a fixpoint over the tasks in order); with every rank equal, the head of ready is
// what the queue's Queue.Claim took (the first ready task in queue order that no usage limit
// holds).
type rescan struct {
	ns    []Node
	idx   map[string]int
	state []State
	until []time.Time
}

func (r *rescan) ready(now time.Time) []int {
	var out []int
	for i, n := range r.ns {
		if r.state[i] != Waiting && r.state[i] != Ready && r.state[i] != Held {
			continue
		}
		if now.Before(r.until[i]) {
			continue
		}
		ok := true
		for _, d := range n.Deps {
			j, known := r.idx[d]
			if !known || r.state[j] != Done {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, i)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return r.ns[out[a]].Rank < r.ns[out[b]].Rank })
	return out
}

func (r *rescan) block() {
	for again := true; again; {
		again = false
		for i, n := range r.ns {
			if r.state[i] != Waiting && r.state[i] != Ready && r.state[i] != Held {
				continue
			}
			for _, d := range n.Deps {
				if j, ok := r.idx[d]; ok && (r.state[j] == Failed || r.state[j] == Blocked) {
					r.state[i], again = Blocked, true
					break
				}
			}
		}
	}
}

// randomGraph is n tasks, each depending on up to 3 earlier ones (and, when missing, sometimes
// on an id that is no task), ranks from 0 to ranks-1.
func randomGraph(rng *rand.Rand, n, ranks int, missing bool) []Node {
	ns := make([]Node, n)
	for i := range ns {
		ns[i] = Node{ID: fmt.Sprint("t", i), Rank: rng.Intn(ranks)}
		for k := rng.Intn(4); k > 0 && i > 0; k-- {
			ns[i].Deps = append(ns[i].Deps, fmt.Sprint("t", rng.Intn(i)))
		}
		if missing && rng.Intn(20) == 0 {
			ns[i].Deps = append(ns[i].Deps, "gone")
		}
	}
	// Shuffled, so that dependencies come after as well as before their dependents.
	rng.Shuffle(n, func(a, b int) { ns[a], ns[b] = ns[b], ns[a] })
	return ns
}

// readyOrder is the Set's ready tasks in the order Pop would take them.
func readyOrder(s *Set) []int {
	out := append([]int{}, s.ready.items...)
	sort.Slice(out, func(a, b int) bool {
		ta, tb := out[a], out[b]
		if s.g.rank[ta] != s.g.rank[tb] {
			return s.g.rank[ta] < s.g.rank[tb]
		}
		return ta < tb
	})
	return out
}

// TestDifferential runs random graphs through random runs (tasks taken, completed, failed,
// retried, held until a time, given back) and checks after every step that the Set's ready
// order, and which tasks are blocked, are the rescan's: the order swarm run's ready() and the
// queue's Claim gave.
func TestDifferential(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		ranks := 3
		queue := seed%2 == 0 // the queue has no priorities, and ids that are no task
		if queue {
			ranks = 1
		}
		ns := randomGraph(rng, 1+rng.Intn(40), ranks, queue)
		ref := &rescan{ns: ns, idx: map[string]int{}, state: make([]State, len(ns)), until: make([]time.Time, len(ns))}
		for i, n := range ns {
			ref.idx[n.ID] = i
		}
		s, _ := NewSet(New(ns), func(int) State { return Waiting })
		now := time.Unix(0, 0)
		var taken []int
		for step := 0; step < 200; step++ {
			now = now.Add(time.Second)
			s.Release(now)
			want := ref.ready(now)
			if got := readyOrder(s); !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d: ready = %v, the rescan's %v", seed, step, got, want)
			}
			for i := range ns {
				gb, wb := s.State(i) == Blocked, ref.state[i] == Blocked
				if gb != wb {
					t.Fatalf("seed %d step %d: task %d blocked %v, the rescan's %v", seed, step, i, gb, wb)
				}
			}
			switch op := rng.Intn(10); {
			case op < 4: // take the next ready task
				if i, ok := s.Pop(); ok {
					if want[0] != i {
						t.Fatalf("seed %d step %d: Pop = %d, want %d", seed, step, i, want[0])
					}
					ref.state[i] = Taken
					taken = append(taken, i)
				}
			case op < 8 && len(taken) > 0: // end one at work
				k := rng.Intn(len(taken))
				i := taken[k]
				taken = append(taken[:k], taken[k+1:]...)
				switch rng.Intn(6) {
				case 0:
					s.Fail(i)
					ref.state[i] = Failed
					ref.block()
				case 1:
					s.Requeue(i)
					ref.state[i] = Waiting
				case 2:
					s.Hold(i, now.Add(time.Duration(rng.Intn(5))*time.Second))
					ref.state[i], ref.until[i] = Held, s.NotBefore(i)
				default:
					s.Done(i)
					ref.state[i] = Done
				}
			case op == 8: // retry a failed task
				for i := range ns {
					if ref.state[i] == Failed {
						s = reopen(s, i)
						// The rescan's Reblock: everything blocked is waiting again, then
						// blocked again by what still fails.
						for j := range ns {
							if ref.state[j] == Blocked || j == i {
								ref.state[j] = Waiting
							}
						}
						ref.block()
						break
					}
				}
			}
		}
	}
}

// runAll runs every task of ns to completion through a Set, in batches as an engine with
// slots would: what it costs is the ready set's upkeep over a whole run.
func runAll(ns []Node) int {
	s, _ := NewSet(New(ns), func(int) State { return Waiting })
	ran := 0
	var batch []int
	for {
		batch = batch[:0]
		for len(batch) < 4 {
			i, ok := s.Pop()
			if !ok {
				break
			}
			batch = append(batch, i)
		}
		if len(batch) == 0 {
			return ran
		}
		for _, i := range batch {
			s.Done(i)
			ran++
		}
	}
}

// BenchmarkReadySet is a whole run's upkeep of the ready set, per task: the same at 1,000 and
// 10,000 tasks but for the heap's log n (it was O(n) a task, the rescan, before).
func BenchmarkReadySet(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ns := randomGraph(rand.New(rand.NewSource(1)), n, 3, false)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for k := 0; k < b.N; k++ {
				if got := runAll(ns); got != n {
					b.Fatalf("ran %d of %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
		})
	}
}

// BenchmarkRescan is the same run with the ready set found by the rescan, as the engines did
// before: its cost per task grows with n.
func BenchmarkRescan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		ns := randomGraph(rand.New(rand.NewSource(1)), n, 3, false)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for k := 0; k < b.N; k++ {
				ref := &rescan{ns: ns, idx: map[string]int{}, state: make([]State, n), until: make([]time.Time, n)}
				for i, nd := range ns {
					ref.idx[nd.ID] = i
				}
				ran := 0
				for {
					r := ref.ready(time.Time{})
					if len(r) == 0 {
						break
					}
					for _, i := range r[:min(4, len(r))] {
						ref.state[i] = Done
						ran++
					}
				}
				if ran != n {
					b.Fatalf("ran %d of %d", ran, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/task")
		})
	}
}
