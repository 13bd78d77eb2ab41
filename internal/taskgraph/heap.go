package taskgraph

import "time"

// taskHeap is a binary min-heap of tasks by (rank, position), with each task's place in it
// kept so that a task can leave it from anywhere (a ready task skipped or failed).
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

func (h *taskHeap) less(a, b int) bool {
	ta, tb := h.items[a], h.items[b]
	if ra, rb := h.g.rank[ta], h.g.rank[tb]; ra != rb {
		return ra < rb
	}
	return ta < tb
}

func (h *taskHeap) swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.at[h.items[a]], h.at[h.items[b]] = a, b
}

func (h *taskHeap) push(task int) {
	h.items = append(h.items, task)
	h.at[task] = len(h.items) - 1
	h.up(len(h.items) - 1)
}

func (h *taskHeap) pop() int {
	task := h.items[0]
	h.remove(task)
	return task
}

func (h *taskHeap) remove(task int) {
	i := h.at[task]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.at[task] = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *taskHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts item i down; it says whether it moved.
func (h *taskHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(r, c) {
			c = r
		}
		if !h.less(c, i) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}

// heldTask is a task held until at. An entry goes stale when its task leaves the held state
// (or is held again, until another time); stale entries are dropped when they reach the top.
type heldTask struct {
	task int
	at   time.Time
}

// timeHeap is a min-heap of held tasks by time.
type timeHeap struct{ items []heldTask }

func (h *timeHeap) Len() int { return len(h.items) }

func (h *timeHeap) push(x heldTask) {
	h.items = append(h.items, x)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].at.Before(h.items[p].at) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *timeHeap) pop() heldTask {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i, n := 0, last
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.items[r].at.Before(h.items[c].at) {
			c = r
		}
		if !h.items[c].at.Before(h.items[i].at) {
			break
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
	return top
}
