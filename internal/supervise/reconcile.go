package supervise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// Reconcile finds beads whose supervisor is gone (its process dead and its tmux session gone)
// while their run record still says "running", and closes them as failed with reason
// supervisor-lost, killing what is left of the agent. A bead whose lock is held is being
// dispatched or finalised and is left alone. sessions is the tmux client of the dispatch socket.
//
// It looks at the registry of supervisors only: dispatch registers a bead before writing its
// running records and the entry goes only after the final records are written, so every running
// record has an entry, and the cost does not grow with the number of records. All scans every
// run record as well, for records no registry knows (written by other tools, or by dispatch.sh).
func Reconcile(ctx context.Context, l Layout, sessions *tmux.Client, all bool) ([]Closed, error) {
	beads, err := l.Registered()
	if err != nil {
		return nil, err
	}
	if all {
		store := record.Store{Dir: l.Dir}
		for _, bead := range listBeads(filepath.Join(l.Dir, "runs"), ".json") {
			if run, err := record.ReadRun(store.RunPath(bead)); err == nil && run.Status == record.StatusRunning {
				beads = append(beads, bead)
			}
		}
	}
	var closed []Closed
	var errs []error
	seen := map[string]bool{}
	for _, bead := range beads {
		if seen[bead] {
			continue
		}
		seen[bead] = true
		// One bead that cannot be judged (an unreadable record, a full disk) must not keep the
		// others from being closed.
		c, err := ReconcileBead(ctx, l, sessions, bead)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", bead, err))
			continue
		}
		if c != nil {
			closed = append(closed, *c)
		}
	}
	return closed, errors.Join(errs...)
}

// Registered lists the beads with a registry entry, sorted.
func (l Layout) Registered() ([]string, error) {
	return listBeads(filepath.Join(l.Dir, "supervisors"), ".json"), nil
}

// Running returns the run records of the registered beads that say "running", in bead order:
// the agents at work now. Like Reconcile it reads the registry, never the whole history.
func (l Layout) Running() []*record.Run {
	store := record.Store{Dir: l.Dir}
	beads, _ := l.Registered()
	var runs []*record.Run
	for _, bead := range beads {
		if r, err := record.ReadRun(store.RunPath(bead)); err == nil && r.Status == record.StatusRunning {
			runs = append(runs, r)
		}
	}
	return runs
}

// listBeads returns the valid bead ids named <bead><suffix> in dir, sorted; spec files, reserves
// and temp files are not beads.
func listBeads(dir, suffix string) []string {
	beads, _ := fsx.Names(dir, func(n string) (string, bool) {
		bead, ok := strings.CutSuffix(n, suffix)
		return bead, ok && !strings.HasSuffix(n, ".spec.json") && !strings.HasPrefix(n, ".") && record.CheckBead(bead) == nil
	})
	return beads
}

// ReconcileBead is Reconcile for one bead: it closes the bead's records when its supervisor is
// lost, and returns nil when there was nothing to close.
func ReconcileBead(ctx context.Context, l Layout, sessions *tmux.Client, bead string) (*Closed, error) {
	unlock, err := l.LockBead(ctx, bead, 100*time.Millisecond)
	if errors.Is(err, fsx.ErrLocked) {
		return nil, nil // a dispatch or a supervisor is at work on it right now
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	store := record.Store{Dir: l.Dir}
	run, err := record.ReadRun(store.RunPath(bead))
	entry, _ := l.ReadEntry(bead)
	if err != nil || run.Status != record.StatusRunning {
		// Final records with an entry left over (a supervisor killed between its last write and
		// the entry's removal): the entry is stale once its process is gone.
		if entry != nil && !SupervisorAlive(entry.PID, bead) {
			l.removeEntry(bead)
		}
		return nil, nil
	}
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
		// The pane's process is the supervisor, so a live session whose supervisor is gone is a
		// leftover; with no entry at all, the session is the only sign of life: leave it.
		if entry == nil {
			return nil, nil
		}
		sessions.KillSession(ctx, session)
	}
	if entry != nil && entry.AgentPID > 0 {
		// Pdeathsig should have killed the agent with its supervisor; make sure of it, but only
		// if the pid is still that agent's: a pid is reused once its process is gone.
		if start, ok := ProcessStart(entry.AgentPID); ok && entry.AgentStart != 0 && start == entry.AgentStart {
			syscall.Kill(-entry.AgentPID, syscall.SIGKILL)
		}
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
	l.removeEntry(run.Bead)
	return &Closed{Bead: run.Bead, Reason: ReasonLost}, nil
}

// removeEntry removes a bead's registry entry and the supervisor's disk reserve.
func (l Layout) removeEntry(bead string) {
	os.Remove(l.EntryPath(bead))
	os.Remove(l.EntryPath(bead) + ".reserve")
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

// ProcessStart returns a process's start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat), which together with the pid names one process for good.
func ProcessStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after its end.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(fields[19], 10, 64)
	return n, err == nil
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
