// Package taskgraph is the scheduling core shared by `swarm run` (package swarmrun) and
// `ralph queue run` (package queue/store): a graph of tasks, each with its dependencies, a
// priority rank and its position in the file that lists them; the ready set over it; and a
// Scheduler that runs the ready tasks on slots, asking a Policy for what differs between
// engines.
//
// Both engines used to keep their own copy of these rules, and both rescanned every task to
// find the next one to run, which made a run of n tasks cost O(n²). Here a Graph is checked
// once for a cycle (Cycle, which names the cycle's path for the error message), and a Set keeps
// for each task the count of its unfinished dependencies and a heap of the tasks ready to run,
// by priority then file order: a task that ends updates only its own dependents, so a whole run
// costs O((n + edges) log n).
//
// A Set knows nothing of processes, slots, files or time beyond the not-before times it is
// given: the engines decide what a task's end means (completed, failed, retried) and tell the
// Set. A failed task blocks its transitive dependents; when it is retried, a Set made again
// from the tasks' states unblocks those that nothing else blocks.
//
// A Scheduler owns the free slots (of every host: a slot is the Policy's type) and the count of
// tasks at work, and loops: the best ready task goes to the first free slot the Policy's Place
// accepts, until nothing runs and nothing can start. The Policy says when to stop starting
// (swarm run's --halt), records the assignments (swarm run's state.json), and runs each task.
// swarm run is its first Policy. The queue (package queue/runner) is its second, a Claimer: its
// ready set is a Set over its file, which other processes change, so it takes its tasks one
// claim at a time inside the store's transaction (the budget checked in the same one), and the
// Scheduler's ClaimLoop offers it each free slot (an agent) at every wake.
//
// What "interrupted" means, for both engines (docs/swarm-run.md, docs/ralph.md): the run stops
// waiting, and the task goes back to the ready set (Requeue), neither done nor failed, no retry
// counted; the attempt's process is stopped (SIGTERM, then SIGKILL after the grace), and what it
// left (its worktree, its branch) is kept for the next run to look at and continue. The queue
// left its attempts running, its tasks claimed, for the next run to adopt, until issue 28. A
// runner killed outright (SIGKILL) stops nothing: the next run adopts the attempts it left, by
// their records (package adopttest runs one test of it against both engines).
package taskgraph

import "slices"

// Node is a task as the graph is made from it.
type Node struct {
	ID string
	// Deps are the ids of the tasks it depends on. An id that is no node of the graph is a
	// dependency that never finishes (the task is never ready), and a leaf for Cycle.
	Deps []string
	// Rank is its priority: lower runs first; tasks of one rank run in the order of the nodes.
	Rank int
}

// Graph is a set of tasks and their dependencies, fixed once made. Tasks are named by their
// position in the nodes it was made from.
type Graph struct {
	ids        []string
	index      map[string]int
	rank       []int
	deps       [][]int // the dependencies that are nodes, in the order given
	missing    []int   // how many dependencies are no node
	dependents [][]int // the reverse edges, each list in node order
}

// New makes the graph of nodes; their order is the file's order.
func New(nodes []Node) *Graph {
	g := &Graph{ids: make([]string, len(nodes)), index: make(map[string]int, len(nodes)), rank: make([]int, len(nodes)),
		deps: make([][]int, len(nodes)), missing: make([]int, len(nodes)), dependents: make([][]int, len(nodes))}
	// Backward, so that an id given twice names its first node.
	for i, n := range slices.Backward(nodes) {
		g.ids[i], g.rank[i] = n.ID, n.Rank
		g.index[n.ID] = i
	}
	for i, n := range nodes {
		for _, d := range n.Deps {
			if j, ok := g.index[d]; ok {
				g.deps[i] = append(g.deps[i], j)
				g.dependents[j] = append(g.dependents[j], i)
			}
		}
		g.missing[i] = len(n.Deps) - len(g.deps[i])
	}
	return g
}

// Len is the number of tasks.
func (g *Graph) Len() int { return len(g.ids) }

// ID is the id of task i.
func (g *Graph) ID(i int) string { return g.ids[i] }

// Index is the position of the task id.
func (g *Graph) Index(id string) (int, bool) {
	i, ok := g.index[id]
	return i, ok
}

// Colours of the depth-first walk.
const (
	white = iota // not seen
	grey         // on the current path
	black        // done: no cycle through it
)

// Cycle returns a cycle of dependencies as the path around it (its first id repeated last), or
// nil. The walk is depth first, from the tasks in node order and through each task's
// dependencies in the order given, so the cycle named is the same on every run; it is one walk
// over the whole graph, each task visited once, without recursion, so a chain of 100,000 tasks
// cannot exhaust the stack.
func (g *Graph) Cycle() []string { return g.CycleFrom(len(g.ids)) }

// CycleFrom is Cycle with the walk started from the first n tasks only: a cycle that none of
// them reaches is not looked for (the tasks a queue holds already, say, when new ones are
// checked).
func (g *Graph) CycleFrom(n int) []string {
	color := make([]uint8, len(g.ids))
	next := make([]int, len(g.ids)) // next[task]: the next of its dependencies to follow
	var path []int                  // the grey tasks, each a dependency of the one before
	for start := range g.ids[:n] {
		if color[start] != white {
			continue
		}
		color[start] = grey
		path = append(path[:0], start)
		for len(path) > 0 {
			top := path[len(path)-1]
			if next[top] == len(g.deps[top]) {
				color[top] = black
				path = path[:len(path)-1]
				continue
			}
			d := g.deps[top][next[top]]
			next[top]++
			switch color[d] {
			case grey:
				return g.names(path[slices.Index(path, d):])
			case white:
				color[d] = grey
				path = append(path, d)
			}
		}
	}
	return nil
}

// names is the cycle of tasks as its path of ids, the first repeated last.
func (g *Graph) names(cycle []int) []string {
	out := make([]string, 0, len(cycle)+1)
	for _, i := range cycle {
		out = append(out, g.ids[i])
	}
	return append(out, out[0])
}
