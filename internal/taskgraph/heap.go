package taskgraph

import (
	"container/heap"
	"time"
)

// taskHeap is a min-heap (container/heap) of tasks by (rank, position), with each task's
// place in it kept so that a task can leave it from anywhere (a ready task skipped or failed).
type taskHeap struct {
	g     *Graph
	items []int
	at    []int // at[task]: its index in items, -1 when not in the heap
}

func (h *taskHeap) init(g *Graph, n int) {
	h.g = g
	h.at = make([]int, n)
	for i := range h.at {
		h.at[i] = -1
	}
}

func (h *taskHeap) Len() int { return len(h.items) }

func (h *taskHeap) Less(a, b int) bool {
	ta, tb := h.items[a], h.items[b]
	if ra, rb := h.g.rank[ta], h.g.rank[tb]; ra != rb {
		return ra < rb
	}
	return ta < tb
}

func (h *taskHeap) Swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.at[h.items[a]], h.at[h.items[b]] = a, b
}

func (h *taskHeap) Push(x any) {
	h.at[x.(int)] = len(h.items)
	h.items = append(h.items, x.(int))
}

func (h *taskHeap) Pop() any {
	last := len(h.items) - 1
	task := h.items[last]
	h.items, h.at[task] = h.items[:last], -1
	return task
}

func (h *taskHeap) push(task int)   { heap.Push(h, task) }
func (h *taskHeap) pop() int        { return heap.Pop(h).(int) }
func (h *taskHeap) remove(task int) { heap.Remove(h, h.at[task]) }

// heldTask is a task held until at. An entry goes stale when its task leaves the held state
// (or is held again, until another time); stale entries are dropped when they reach the top.
type heldTask struct {
	task int
	at   time.Time
}

// timeHeap is a min-heap (container/heap) of held tasks by time.
type timeHeap struct{ items []heldTask }

func (h *timeHeap) Len() int           { return len(h.items) }
func (h *timeHeap) Less(a, b int) bool { return h.items[a].at.Before(h.items[b].at) }
func (h *timeHeap) Swap(a, b int)      { h.items[a], h.items[b] = h.items[b], h.items[a] }
func (h *timeHeap) Push(x any)         { h.items = append(h.items, x.(heldTask)) }

func (h *timeHeap) Pop() any {
	last := len(h.items) - 1
	top := h.items[last]
	h.items = h.items[:last]
	return top
}

func (h *timeHeap) push(x heldTask) { heap.Push(h, x) }
func (h *timeHeap) pop() heldTask   { return heap.Pop(h).(heldTask) }
