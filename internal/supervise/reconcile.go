package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/tmux"
)

// Closed is a bead whose records Reconcile closed.
type Closed struct {
	Bead   string `json:"bead"`
	Reason string `json:"reason"`
}

// Reconcile finds run records still "running" whose supervisor is gone (its process dead and
// its tmux session gone) and closes them as failed with reason supervisor-lost, killing what is
// left of the agent. A bead whose lock is held is being dispatched or finalised and is left
// alone. sessions is the tmux client of the dispatch socket.
func Reconcile(ctx context.Context, l Layout, sessions *tmux.Client) ([]Closed, error) {
	store := record.Store{Dir: l.Dir}
	entries, err := os.ReadDir(filepath.Join(l.Dir, "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var closed []Closed
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		bead := strings.TrimSuffix(name, ".json")
		if record.CheckBead(bead) != nil {
			continue
		}
		run, err := record.ReadRun(store.RunPath(bead))
		if err != nil || run.Status != record.StatusRunning {
			continue
		}
		c, err := reconcileBead(ctx, l, sessions, run)
		if err != nil {
			return closed, err
		}
		if c != nil {
			closed = append(closed, *c)
		}
	}
	return closed, nil
}

func reconcileBead(ctx context.Context, l Layout, sessions *tmux.Client, run *record.Run) (*Closed, error) {
	unlock, err := l.LockBead(ctx, run.Bead, 100*time.Millisecond)
	if errors.Is(err, fsx.ErrLocked) {
		return nil, nil // a dispatch or a supervisor is at work on it right now
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Read again under the lock: the supervisor may have finished since the scan.
	store := record.Store{Dir: l.Dir}
	run, err = record.ReadRun(store.RunPath(run.Bead))
	if err != nil || run.Status != record.StatusRunning {
		return nil, nil
	}
	entry, _ := l.ReadEntry(run.Bead)
	if entry != nil && entry.Attempt == run.Attempt && SupervisorAlive(entry.PID, run.Bead) {
		return nil, nil
	}
	session := run.SessionName
	if entry != nil && entry.Session != "" {
		session = entry.Session
	}
	live, err := sessions.HasSession(ctx, session)
	if err != nil && !errors.Is(err, tmux.ErrNoTmux) {
		return nil, err
	}
	if live && (entry == nil || entry.Backend == BackendTmux) {
		// The session is there, the supervisor not (yet, or any more): the pane's process is
		// the supervisor, so a live pane with no live supervisor only happens while it starts.
		if entry == nil {
			return nil, nil
		}
		sessions.KillSession(ctx, session)
	}
	if entry != nil && entry.AgentPID > 0 {
		// Pdeathsig should have killed the agent with its supervisor; make sure of it.
		syscall.Kill(-entry.AgentPID, syscall.SIGKILL)
	}
	finished := time.Now()
	if fi, err := os.Stat(l.LogPath(run.Bead)); err == nil && fi.ModTime().After(mustParse(run.StartedAt)) {
		finished = fi.ModTime() // the last sign of life is a better finish time than now
	}
	out := Outcome{Status: record.StatusFailed, Reason: ReasonLost, Finished: finished, UnknownExit: true,
		Summary: Summary(lastBytes(l.LogPath(run.Bead), 64<<10), 500)}
	r, res := Complete(*run, out)
	if err := store.WriteRun(ctx, &r); err != nil {
		return nil, err
	}
	if err := store.WriteResult(ctx, &res); err != nil {
		return nil, err
	}
	os.Remove(l.EntryPath(run.Bead))
	os.Remove(l.EntryPath(run.Bead) + ".reserve")
	return &Closed{Bead: run.Bead, Reason: ReasonLost}, nil
}

func mustParse(s string) time.Time {
	t, _ := record.ParseTime(s)
	return t
}

// SupervisorAlive reports whether pid is a live supervisor of bead. The command line is checked,
// not only the pid, because a pid is reused once its process is gone.
func SupervisorAlive(pid int, bead string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true // no /proc: trust the signal check
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	hasVerb, hasBead := false, false
	for _, a := range args {
		hasVerb = hasVerb || string(a) == SuperviseVerb
		hasBead = hasBead || string(a) == bead
	}
	return hasVerb && hasBead
}

// SuperviseVerb is the hidden verb under which a tool runs the supervisor.
const SuperviseVerb = "__supervise"

func lastBytes(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, 0)
	}
	b := make([]byte, n)
	k, _ := f.Read(b)
	return b[:k]
}
