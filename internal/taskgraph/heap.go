package taskgraph

import "container/heap"

// taskHeap is a min-heap (container/heap) of tasks by before, with each task's place in it
// kept so that a task can leave it from anywhere (a ready task skipped or failed, a held one
// given back). The Set keeps two: the ready tasks by (rank, position), the held ones by their
// not-before time.
type taskHeap struct {
	items  []int
	at     []int // at[task]: its index in items, while it is in the heap
	before func(a, b int) bool
}

func (h *taskHeap) Len() int           { return len(h.items) }
func (h *taskHeap) Less(a, b int) bool { return h.before(h.items[a], h.items[b]) }

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
	h.items = h.items[:last]
	return task
}

func (h *taskHeap) push(task int)   { heap.Push(h, task) }
func (h *taskHeap) remove(task int) { heap.Remove(h, h.at[task]) }
