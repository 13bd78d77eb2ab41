package taskgraph

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Policy is what an engine decides for the Scheduler: what a slot is (S: a slot of this
// machine or of a host), which slot a task may start in, what starting and running a task
// mean, and when no task may start any more. Every method but Launched and Run is called with
// the engine's lock held (the one given to Loop).
type Policy[S any] interface {
	// Stopping says that no task may start any more: the run is interrupted, or a halt rule
	// was met. It is asked at every wake.
	Stopping() bool
	// Queued is told the tasks that became ready since the last wake (swarm run marks them
	// queued in its state).
	Queued(tasks []int)
	// Place is the index in free (never empty) of the slot task i starts in, -1 when it may
	// not start in any of them now; then the Scheduler gives it back to the ready set, unless
	// Place held it (Set.Hold). Without a hold, -1 is for a task that waits for a slot at
	// work: the Scheduler looks again when a task ends.
	Place(i int, free []S) int
	// Assign records the tasks placed at this wake (none, often) before they start.
	Assign(placed []Placed[S])
	// Launched is told, without the lock, that the tasks assigned are about to start.
	Launched(placed []Placed[S])
	// Run runs task i in slot, on a goroutine of its own, without the lock. It ends the task
	// (under the lock: Set.Done, Fail, Requeue or Hold, then Scheduler.Free) before it returns.
	Run(i int, slot S)
}

// Placed is a task placed in a slot.
type Placed[S any] struct {
	Task int
	Slot S
}

// Scheduler runs the tasks of a Set on slots, the best ready task first in the first slot the
// Policy gives it, until none runs and none can start. Its state is guarded by the engine's
// lock: its methods are called with it held, but for Loop.
type Scheduler[S any] struct {
	Set     *Set
	free    []S
	running int
	wake    chan struct{}
}

// NewScheduler is a scheduler of set's tasks on slots.
func NewScheduler[S any](set *Set, slots []S) *Scheduler[S] {
	return &Scheduler[S]{Set: set, free: append([]S(nil), slots...), wake: make(chan struct{}, 1)}
}

// Free ends the task that ran in slot: the slot takes tasks again unless retire (its host went
// offline, say).
func (s *Scheduler[S]) Free(slot S, retire bool) {
	s.running--
	if !retire {
		s.free = append(s.free, slot)
	}
}

// Running is how many slots hold a task (taken, not yet freed).
func (s *Scheduler[S]) Running() int { return s.running }

// Retire takes the free slots that match out of the schedule for good (a host gone offline),
// and returns them.
func (s *Scheduler[S]) Retire(match func(S) bool) []S {
	gone := slices.DeleteFunc(slices.Clone(s.free), func(slot S) bool { return !match(slot) })
	s.free = slices.DeleteFunc(s.free, match)
	return gone
}

// Loop schedules until nothing runs and nothing can start: no task is ready or held, no slot
// is left, or the policy stops (then it waits for the tasks at work to end). ctx ending wakes
// it; the policy's Stopping should then say so. mu is the engine's lock.
func (s *Scheduler[S]) Loop(ctx context.Context, mu sync.Locker, p Policy[S]) {
	s.loop(ctx, mu, func() (placed []Placed[S], held time.Time, idle bool) {
		s.Set.Release(time.Now())
		stopping := p.Stopping()
		if !stopping {
			p.Queued(s.Set.TakeFresh())
			placed = s.place(p)
		}
		p.Assign(placed)
		held = s.Set.NextRelease()
		// Idle: nothing runs and nothing can start (stopping, no task ready or held back, or no
		// slot left).
		return placed, held, s.running == 0 && (stopping || len(s.free) == 0 || (s.Set.Len() == 0 && held.IsZero()))
	}, p.Launched, p.Run)
}

// loop is Loop's and ClaimLoop's: at each wake, under mu, step says which tasks start
// (placed), the time to wake at the latest (zero: a task's end) and whether nothing runs and
// nothing can start (idle: the loop returns); the tasks placed start (launched told first,
// without the lock), and the loop waits.
func (s *Scheduler[S]) loop(ctx context.Context, mu sync.Locker, step func() ([]Placed[S], time.Time, bool), launched func([]Placed[S]), run func(int, S)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		mu.Lock()
		placed, next, idle := step()
		busy := s.running > 0
		mu.Unlock()
		if len(placed) > 0 && launched != nil {
			launched(placed)
		}
		s.start(&wg, placed, run)
		if idle {
			return
		}
		s.wait(ctx, next, busy)
	}
}

// Claimer is a policy that takes its tasks itself, a slot at a time, from a ready set kept
// where the Scheduler cannot hold it: the queue's, in its files, which other processes change,
// claimed inside its store's transaction (the budget checked in the same one). The Scheduler
// then owns only the slots and the waits: ClaimLoop offers each free slot to Claim at every
// wake, and runs what it took. Stopping and Claim are called with the engine's lock held, Run
// without it.
type Claimer[S any] interface {
	Stopping() bool
	// Claim takes a task for slot, or says why not: the slot waits (until Again, or a task's
	// end), or it takes no task any more (Retire: the budget is reached, nothing is left).
	Claim(slot S) Take
	// Run runs the task Claim took for slot, on a goroutine of its own, without the lock. It
	// ends the task (Scheduler.Free under the lock) before it returns.
	Run(task int, slot S)
}

// Take is what Claim did with a slot.
type Take struct {
	// Took says that the slot took Task (numbered as the policy likes: it is handed to Run).
	Took bool
	Task int
	// Retire takes the slot out of the schedule for good.
	Retire bool
	// Again is when to offer the slot again (zero: when a task ends), when it took nothing.
	Again time.Time
}

// ClaimLoop schedules a Claimer's tasks until nothing runs and either the policy stops or no
// slot is left: every free slot retired. ctx ending wakes it; the policy's Stopping should
// then say so. mu is the engine's lock.
func (s *Scheduler[S]) ClaimLoop(ctx context.Context, mu sync.Locker, c Claimer[S]) {
	s.loop(ctx, mu, func() (placed []Placed[S], again time.Time, idle bool) {
		stopping := c.Stopping()
		if !stopping {
			placed, again = s.claim(c)
		}
		return placed, again, s.running == 0 && (stopping || len(s.free) == 0)
	}, nil, c.Run)
}

// claim offers each free slot, in order, to c: it returns the tasks taken, and the earliest
// time a slot that took nothing asked to be offered again.
func (s *Scheduler[S]) claim(c Claimer[S]) (placed []Placed[S], again time.Time) {
	free := s.free
	s.free = nil
	for _, slot := range free {
		switch t := c.Claim(slot); {
		case t.Took:
			placed = append(placed, Placed[S]{Task: t.Task, Slot: slot})
			s.running++
		case !t.Retire:
			s.free = append(s.free, slot)
			if !t.Again.IsZero() && (again.IsZero() || t.Again.Before(again)) {
				again = t.Again
			}
		}
	}
	return placed, again
}

// start runs each task placed on a goroutine of its own, which wakes the loop when it ends
// (a wake already pending does).
func (s *Scheduler[S]) start(wg *sync.WaitGroup, placed []Placed[S], run func(int, S)) {
	for _, pl := range placed {
		wg.Go(func() {
			run(pl.Task, pl.Slot)
			select {
			case s.wake <- struct{}{}:
			default:
			}
		})
	}
}

// wait waits for a task's end, the time next (zero: none), or ctx's end: then, when tasks are
// at work (busy), for a task's end, as the tasks see ctx end too and stop. With none at work
// there is no end to wait for: the loop looks again at once, and stops.
func (s *Scheduler[S]) wait(ctx context.Context, next time.Time, busy bool) {
	var release <-chan time.Time
	if !next.IsZero() {
		// Left unstopped when the loop wakes first: a timer nothing refers to is collected
		// (Go 1.23).
		release = time.After(time.Until(next))
	}
	select {
	case <-release:
	case <-s.wake:
	case <-ctx.Done():
		if busy {
			<-s.wake
		}
	}
}

// place takes the ready tasks, best first, for the free slots the policy gives them; a task
// that may start in none of them now goes back to the ready set (unless the policy held it).
func (s *Scheduler[S]) place(p Policy[S]) (placed []Placed[S]) {
	var back []int
	for len(s.free) > 0 {
		i, ok := s.Set.Pop()
		if !ok {
			break
		}
		if at := p.Place(i, s.free); at >= 0 {
			placed = append(placed, Placed[S]{Task: i, Slot: s.free[at]})
			s.free = append(s.free[:at:at], s.free[at+1:]...)
			s.running++
		} else if s.Set.State(i) == Taken {
			back = append(back, i)
		}
	}
	for _, i := range back {
		s.Set.Requeue(i)
	}
	return placed
}
