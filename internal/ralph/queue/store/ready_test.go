package store

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

// rescanQueue is the reference the ready set replaced: the queue as Claim, AnyReady, Held and
// Reblock computed it before, by scanning every task (a plain slice, changed as the Queue is).
type rescanQueue struct{ tasks []Task }

func (r *rescanQueue) index(id string) int {
	for i := range r.tasks {
		if r.tasks[i].ID == id {
			return i
		}
	}
	return -1
}

// held says whether a usage limit holds task t at now.
func held(t *Task, now time.Time) bool {
	if t.HeldUntil == "" {
		return false
	}
	until, err := time.Parse(time.RFC3339Nano, t.HeldUntil)
	return err == nil && now.Before(until)
}

func (r *rescanQueue) ready(t *Task) bool {
	if t.Status != Pending {
		return false
	}
	for _, d := range t.Dependencies {
		j := r.index(d)
		if j < 0 || (r.tasks[j].Status != Done && r.tasks[j].Status != Skipped) {
			return false
		}
	}
	return true
}

// claim is the first ready task in queue order that no usage limit holds.
func (r *rescanQueue) claim(agent, now string) (Task, bool) {
	at, _ := time.Parse(time.RFC3339Nano, now)
	for i := range r.tasks {
		t := &r.tasks[i]
		if !r.ready(t) || held(t, at) {
			continue
		}
		t.Status, t.ClaimedBy, t.ClaimedAt, t.CompletedAt, t.Attempt = Claimed, &agent, &now, nil, 0
		t.HeldUntil = ""
		return *t, true
	}
	return Task{}, false
}

func (r *rescanQueue) anyReady(now time.Time) bool {
	for i := range r.tasks {
		if r.ready(&r.tasks[i]) && !held(&r.tasks[i], now) {
			return true
		}
	}
	return false
}

func (r *rescanQueue) held(now time.Time) int {
	n := 0
	for i := range r.tasks {
		if r.tasks[i].Status == Pending && held(&r.tasks[i], now) {
			n++
		}
	}
	return n
}

// reblock: doomed is the least fixpoint of "failed (or blocked by a conflict), or not done nor
// skipped and depending on a doomed task".
func (r *rescanQueue) reblock() []string {
	doomed := make([]bool, len(r.tasks))
	for again := true; again; {
		again = false
		for i := range r.tasks {
			t := &r.tasks[i]
			if doomed[i] {
				continue
			}
			d := t.Status == Failed || (t.Status == Blocked && t.Reason == ReasonConflict)
			if !d && t.Status != Done && t.Status != Skipped {
				for _, dep := range t.Dependencies {
					if j := r.index(dep); j >= 0 && doomed[j] {
						d = true
						break
					}
				}
			}
			if d {
				doomed[i], again = true, true
			}
		}
	}
	var changed []string
	for i := range r.tasks {
		t := &r.tasks[i]
		switch {
		case t.Status == Pending && doomed[i]:
			t.Status = Blocked
		case t.Status == Blocked && !doomed[i]:
			t.Status = Pending
		default:
			continue
		}
		changed = append(changed, t.ID)
	}
	return changed
}

func (r *rescanQueue) put(t Task) {
	if i := r.index(t.ID); i >= 0 {
		r.tasks[i] = t
		return
	}
	r.tasks = append(r.tasks, t)
}

// TestReadySetMatchesRescan runs random queues through random changes (claims; tasks done,
// failed, retried, skipped, held by a usage limit, blocked by a conflict, added, their
// dependencies changed; Reblock) and checks after each that Claim, AnyReady, Held and Reblock
// give what the rescan gave, and that the queue's file is the same bytes.
func TestReadySetMatchesRescan(t *testing.T) {
	base := time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC)
	for seed := int64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := 1 + rng.Intn(25)
		randomDeps := func(i int) []string {
			deps := []string{}
			for k := rng.Intn(3); k > 0 && i > 0; k-- {
				deps = append(deps, fmt.Sprint("t", rng.Intn(i)))
			}
			if rng.Intn(15) == 0 {
				deps = append(deps, "gone")
			}
			return deps
		}
		tasks := newTasks(n, randomDeps)
		ref := &rescanQueue{tasks: append([]Task(nil), tasks...)}
		q := NewQueue("p", "x", tasks)
		for step := 0; step < 150; step++ {
			now := base.Add(time.Duration(step) * time.Second)
			stamp := now.Format(time.RFC3339)
			switch op := rng.Intn(12); {
			case op < 4:
				agent := fmt.Sprint("agent-", rng.Intn(3))
				got, gok := q.Claim(agent, stamp)
				want, wok := ref.claim(agent, stamp)
				if gok != wok || !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d: Claim = %s %v, the rescan's %s %v", seed, step, got.ID, gok, want.ID, wok)
				}
			case op < 9:
				task := ref.tasks[rng.Intn(len(ref.tasks))]
				switch rng.Intn(7) {
				case 0:
					task.Status = Done
				case 1:
					task.Status = Failed
				case 2:
					task.Status, task.Retries, task.ClaimedBy = Pending, 0, nil
				case 3:
					task.Status = Skipped
				case 4:
					task.Status = Pending
					task.HeldUntil = now.Add(time.Duration(rng.Intn(6)-1) * time.Second).Format(time.RFC3339)
				case 5:
					task.Status, task.Reason = Blocked, ReasonConflict
				case 6:
					task.Dependencies = randomDeps(ref.index(task.ID))
				}
				q.Put(task)
				ref.put(task)
			case op == 9:
				task := Task{ID: fmt.Sprint("t", len(ref.tasks)), Status: Pending, Dependencies: randomDeps(len(ref.tasks))}
				q.Put(task)
				ref.put(task)
			case op == 10:
				if got, want := q.Reblock(), ref.reblock(); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d: Reblock = %v, the rescan's %v", seed, step, got, want)
				}
			default:
				if got, want := q.AnyReady(now), ref.anyReady(now); got != want {
					t.Fatalf("seed %d step %d: AnyReady = %v, the rescan's %v", seed, step, got, want)
				}
				if got, want := q.Held(now), ref.held(now); got != want {
					t.Fatalf("seed %d step %d: Held = %v, the rescan's %v", seed, step, got, want)
				}
			}
			if got, want := string(q.Encode()), string(NewQueue("p", "x", append([]Task(nil), ref.tasks...)).Encode()); got != want {
				t.Fatalf("seed %d step %d: the queue's file is\n%s\nthe rescan's\n%s", seed, step, got, want)
			}
		}
	}
}
