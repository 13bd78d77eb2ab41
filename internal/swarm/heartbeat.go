package swarm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/agentfleet/fleet/internal/worker"
)

// The heartbeat: a message typed into a worker on a schedule (to nudge an agent that stopped
// at a rate limit), kept in $SWARM_DIR/heartbeats/<worker>.json in the Python swarm's format,
// changed under heartbeat.lock as it did. The calls here only edit that file. The beats are
// typed by the worker's own supervisor (beat.go), which reads the file every second: no
// daemon of its own, no pid to go stale, it ends with its worker, it reads the agent's screen
// to type only into an idle agent, and the schedule is the file's (the last beat plus the
// interval), so it survives anything swarm itself does.

// heartbeatLimit bounds what is read of a heartbeat file (a few hundred bytes are expected).
const heartbeatLimit = 1 << 20

// Heartbeat reads the heartbeat of the worker name; nil when there is none.
func (s *Swarm) Heartbeat(name string) (*worker.Heartbeat, error) {
	path := s.dir.Heartbeat(name)
	b, err := statedir.ReadFile(path, heartbeatLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	hb, err := worker.DecodeHeartbeat(b)
	if err == nil && hb.WorkerName != name {
		// Every write goes to the file its worker_name names (as the Python swarm's did): a
		// file that names another must not lead a write elsewhere.
		err = fmt.Errorf("it is the heartbeat of %q, not of %q", hb.WorkerName, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return hb, nil
}

// UpdateHeartbeat changes name's heartbeat under heartbeat.lock: fn gets the current one (nil
// when there is none) and returns what to write (nil: nothing). A file that cannot be read is
// an error and is left as it is.
func (s *Swarm) UpdateHeartbeat(ctx context.Context, name string, fn func(hb *worker.Heartbeat) (*worker.Heartbeat, error)) error {
	path := s.dir.Heartbeat(name)
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	return fsx.Update(ctx, path, s.dir.HeartbeatLock(), func(old []byte) ([]byte, error) {
		var hb *worker.Heartbeat
		if len(bytes.TrimSpace(old)) > 0 {
			var err error
			if hb, err = worker.DecodeHeartbeat(old); err == nil && hb.WorkerName != name {
				err = fmt.Errorf("it is the heartbeat of %q, not of %q", hb.WorkerName, name)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v (remove it, or fix it by hand)", path, err)
			}
		}
		nhb, err := fn(hb)
		if err != nil {
			return nil, err
		}
		if nhb == nil {
			return nil, fsx.ErrUnchanged
		}
		return worker.EncodeHeartbeat(nhb), nil
	})
}

// Heartbeats reads every heartbeat, sorted by worker name. Files that are not heartbeats are
// skipped, each said to warn (the Python swarm skipped them silently).
func (s *Swarm) Heartbeats(warn func(string)) ([]*worker.Heartbeat, error) {
	names, err := fsx.Names(s.dir.Heartbeats(), func(n string) (string, bool) { return strings.CutSuffix(n, ".json") })
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*worker.Heartbeat
	for _, n := range names {
		hb, err := s.Heartbeat(n)
		switch {
		case err != nil:
			warn(err.Error())
		case hb != nil:
			out = append(out, hb)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].WorkerName < out[j].WorkerName })
	return out, nil
}

// StopHeartbeat marks name's heartbeat stopped if it is live: its worker ended or was removed.
func (s *Swarm) StopHeartbeat(ctx context.Context, name string) error {
	return s.UpdateHeartbeat(ctx, name, func(hb *worker.Heartbeat) (*worker.Heartbeat, error) {
		if hb == nil || !hb.Live() {
			return nil, nil
		}
		hb.Status, hb.MonitorPID = worker.HeartbeatStopped, nil
		return hb, nil
	})
}

// SettleHeartbeats does what the Python swarm did at every start for heartbeats nobody
// watches: a live one whose worker is gone or stopped is stopped, one past its expiry
// expired (in the file and in hbs). heartbeat list and status call it, so that they say what
// is.
func (s *Swarm) SettleHeartbeats(ctx context.Context, hbs []*worker.Heartbeat) {
	var st *worker.State
	now := time.Now()
	for _, hb := range hbs {
		if !hb.Live() {
			continue
		}
		status := ""
		if exp, ok := hb.Expires(); ok && !now.Before(exp) {
			status = worker.HeartbeatExpired
		} else {
			if st == nil {
				var err error
				if st, err = s.reg.Load(); err != nil {
					return
				}
			}
			if w := st.Get(hb.WorkerName); w == nil || !s.Live(ctx, w).Running {
				status = worker.HeartbeatStopped
			}
		}
		if status == "" {
			continue
		}
		created := hb.CreatedAt
		s.UpdateHeartbeat(ctx, hb.WorkerName, func(cur *worker.Heartbeat) (*worker.Heartbeat, error) {
			if cur == nil || !cur.Live() || cur.CreatedAt != created {
				return nil, nil
			}
			cur.Status, cur.MonitorPID = status, nil
			return cur, nil
		})
		hb.Status, hb.MonitorPID = status, nil
	}
}

// NewHeartbeat is a fresh active heartbeat for name as hb says it, created at now, with no
// monitor yet.
func NewHeartbeat(name string, hb HeartbeatSpec, now time.Time) *worker.Heartbeat {
	x := &worker.Heartbeat{WorkerName: name, IntervalSeconds: int64(hb.Interval / time.Second), Message: hb.Message,
		CreatedAt: worker.HeartbeatTime(now), Status: worker.HeartbeatActive}
	if hb.Expire > 0 {
		exp := worker.HeartbeatTime(now.Add(hb.Expire.Truncate(time.Second)))
		x.ExpireAt = &exp
	}
	return x
}

// MonitorOf is the pid that will beat w's heartbeat (its supervisor), recorded as monitor_pid
// so that a Python swarm run on the same directory sees a live monitor and forks none of its
// own; nil when it does not run.
func (s *Swarm) MonitorOf(w *worker.Worker) *int64 {
	if e, _ := s.layout.ReadEntry(w.Name); e != nil && e.PID > 0 && supervise.SupervisorAlive(e.PID, w.Name) {
		pid := int64(e.PID)
		return &pid
	}
	return nil
}

// CanBeat checks that w can have a heartbeat of ours: it runs under a supervisor of this
// swarm, which types the beats. A worker the Python swarm started has none (its own heartbeat
// daemons still serve it); the error says so in the Python swarm's words where it had some.
func (s *Swarm) CanBeat(ctx context.Context, w *worker.Worker) error {
	if !w.Supervised() {
		if w.Tmux == nil {
			return errors.New("heartbeat requires tmux worker")
		}
		return fmt.Errorf("worker '%s' was started by the Python swarm and has no supervisor to type the beats: "+
			"respawn it with this swarm, or use the Python swarm's heartbeat", w.Name)
	}
	if !s.Live(ctx, w).Running {
		return fmt.Errorf("worker '%s' is not running", w.Name)
	}
	return nil
}
