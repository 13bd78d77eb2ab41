package taskgraph

import "time"

// State is where a task is in a Set.
type State uint8

const (
	// Waiting: a dependency has not finished.
	Waiting State = iota
	// Ready: every dependency finished; in the ready heap.
	Ready
	// Held: ready, but not before a time (Hold); Release makes it ready.
	Held
	// Taken: popped from the ready set, at work.
	Taken
	// Done: finished (completed, or skipped): its dependents may run.
	Done
	// Failed: ended for good; its dependents are blocked.
	Failed
	// Blocked: a dependency failed or is blocked; it blocks its own dependents in turn.
	Blocked
)

// Blocking is a task newly blocked, and the dependency (failed or blocked) that blocks it.
type Blocking struct {
	Task, By int
}

// Set is the ready set over a Graph: each task's state, the count of its dependencies that have
// not finished, a heap of the ready tasks by rank then position, and a heap of the held ones by
// their not-before time. Each change costs O(the changed tasks' edges · log n). A Set is not
// safe for concurrent use: its engine guards it with its own lock.
type Set struct {
	g          *Graph
	state      []State
	unfinished []int // dependencies not Done, those that are no node included
	ready      taskHeap
	held       taskHeap
	notBefore  []time.Time
	fresh      []int // tasks become ready since the last TakeFresh
}

// NewSet makes the ready set of g with each task in the state initial gives: Waiting (the Set
// makes it Ready when its dependencies are done), Taken, Done, Failed or Blocked (Ready and Held
// are read as Waiting). The tasks that a failed or blocked dependency blocks are blocked at
// once: the returned list says which, and by what.
func NewSet(g *Graph, initial func(i int) State) (*Set, []Blocking) {
	n := g.Len()
	s := &Set{g: g, state: make([]State, n), unfinished: make([]int, n), notBefore: make([]time.Time, n)}
	s.ready = taskHeap{at: make([]int, n), before: func(a, b int) bool {
		return g.rank[a] < g.rank[b] || (g.rank[a] == g.rank[b] && a < b)
	}}
	// A task is in one heap at most: they share at.
	s.held = taskHeap{at: s.ready.at, before: func(a, b int) bool { return s.notBefore[a].Before(s.notBefore[b]) }}
	for i := range n {
		if st := initial(i); st != Ready && st != Held {
			s.state[i] = st
		}
		s.unfinished[i] += g.missing[i] + len(g.deps[i])
		if s.state[i] == Done {
			for _, d := range g.dependents[i] {
				s.unfinished[d]--
			}
		}
	}
	var blocked []Blocking
	for i := range n {
		if s.state[i] == Failed || s.state[i] == Blocked {
			blocked = s.propagate(i, blocked)
		}
	}
	for i := range n {
		s.makeReady(i)
	}
	return s, blocked
}

// Order is g's tasks in a topological order: each after its dependencies, ties broken by rank,
// then position. A task on a cycle, after one, or depending on an id that is no task is left
// out. It is a run of the ready set with every task done as soon as it is taken.
func (g *Graph) Order() []int {
	s, _ := NewSet(g, func(int) State { return Waiting })
	out := make([]int, 0, g.Len())
	for {
		i, ok := s.Pop()
		if !ok {
			return out
		}
		out = append(out, i)
		s.Done(i)
	}
}

// Graph is the graph the set is over.
func (s *Set) Graph() *Graph { return s.g }

// State is task i's state.
func (s *Set) State(i int) State { return s.state[i] }

// Len is how many tasks are ready (not counting the held ones).
func (s *Set) Len() int { return s.ready.Len() }

// Pop takes the ready task of the lowest rank (the first in node order among equals): it is
// Taken. False when none is ready.
func (s *Set) Pop() (int, bool) {
	i, ok := s.Peek()
	if ok {
		s.move(i, Taken)
	}
	return i, ok
}

// Peek is the task Pop would take, without taking it.
func (s *Set) Peek() (int, bool) {
	if s.ready.Len() == 0 {
		return 0, false
	}
	return s.ready.items[0], true
}

// Requeue puts task i back to be run again: ready, or waiting when a dependency is unfinished
// (a retry, a task given back unstarted, an interrupted one).
// A failed or blocked task's blocked dependents stay blocked: a Set made again from the tasks'
// states (NewSet) unblocks them, as the queue's Reblock does.
func (s *Set) Requeue(i int) {
	s.move(i, Waiting)
	s.makeReady(i)
}

// Take takes task i out of the ready set without finishing it, from whatever state it was
// in: it is Taken (the queue's task claimed, failed or blocked, whose dependents it does not
// block itself: the queue blocks them in its file, Reblock).
func (s *Set) Take(i int) { s.move(i, Taken) }

// Hold keeps task i from the ready set until until: Release puts it back then, ready when its
// dependencies have finished.
func (s *Set) Hold(i int, until time.Time) {
	s.move(i, Held)
	s.notBefore[i] = until
	s.held.push(i)
}

// NotBefore is the time task i was last held until (zero: never held).
func (s *Set) NotBefore(i int) time.Time { return s.notBefore[i] }

// Release makes ready the held tasks whose time has come at now (waiting, when a dependency
// has not finished).
func (s *Set) Release(now time.Time) {
	for s.held.Len() > 0 && !now.Before(s.notBefore[s.held.items[0]]) {
		s.Requeue(s.held.items[0])
	}
}

// NextRelease is the earliest time a held task may run, zero when none is held.
func (s *Set) NextRelease() time.Time {
	if s.held.Len() == 0 {
		return time.Time{}
	}
	return s.notBefore[s.held.items[0]]
}

// Done finishes task i (completed or skipped): the dependents whose last unfinished dependency
// it was become ready.
func (s *Set) Done(i int) {
	if s.state[i] == Done {
		return
	}
	s.move(i, Done)
	for _, d := range s.g.dependents[i] {
		s.unfinished[d]--
		s.makeReady(d)
	}
}

// Fail ends task i for good; its dependents that wait or are ready are blocked, transitively.
// The returned list names them with the dependency that blocks each, in the order they were
// reached.
func (s *Set) Fail(i int) []Blocking { return s.end(i, Failed) }

// Block blocks task i itself (a merge conflict, say): its dependents are blocked as by Fail.
func (s *Set) Block(i int) []Blocking { return s.end(i, Blocked) }

func (s *Set) end(i int, st State) []Blocking {
	s.move(i, st)
	return s.propagate(i, nil)
}

// TakeFresh returns the tasks that became ready since the last call, in the order they did:
// an engine marks them queued.
func (s *Set) TakeFresh() []int {
	out := s.fresh
	s.fresh = nil
	return out
}

// propagate blocks the waiting, ready and held dependents of the failed or blocked task i,
// transitively, appending them to out.
func (s *Set) propagate(i int, out []Blocking) []Blocking {
	queue := []int{i}
	for len(queue) > 0 {
		t := queue[0]
		queue = queue[1:]
		for _, d := range s.g.dependents[t] {
			switch s.state[d] {
			case Waiting, Ready, Held:
				s.move(d, Blocked)
				out = append(out, Blocking{Task: d, By: t})
				queue = append(queue, d)
			}
		}
	}
	return out
}

// move puts task i in state st, out of the ready or the held heap, and counted unfinished again
// by its dependents when it was done (a task retried after it completed). A dependent made
// unfinished stays ready no longer.
func (s *Set) move(i int, st State) {
	switch s.state[i] {
	case Ready:
		s.ready.remove(i)
	case Held:
		s.held.remove(i)
	case Done:
		for _, d := range s.g.dependents[i] {
			if s.unfinished[d]++; s.state[d] == Ready {
				s.ready.remove(d)
				s.state[d] = Waiting
			}
		}
	}
	s.state[i] = st
}

// makeReady makes task i ready when it waits and none of its dependencies is unfinished.
func (s *Set) makeReady(i int) {
	if s.state[i] == Waiting && s.unfinished[i] == 0 {
		s.state[i] = Ready
		s.ready.push(i)
		s.fresh = append(s.fresh, i)
	}
}
