package supervise

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
	"golang.org/x/sys/unix"
)

// Backends a supervisor runs under.
const (
	BackendTmux    = "tmux"
	BackendProcess = "process"
)

// SuperviseVerb is the hidden verb under which a tool runs the supervisor.
const SuperviseVerb = "__supervise"

// Layout names the files supervision keeps in a state directory, by statedir's rule: each
// kind of file has a directory of its own, so that no name, whatever it ends with, can be
// taken for another kind's file: supervisors/<name>.json (the registry), sockets/<name>.sock
// (control sockets), reserves/<name> (disk held for the final records), locks/<name>.lock,
// logs/<name>.log, prompts/<name>.txt, handoff/ (one-time spec sockets).
type Layout struct{ Dir string }

func (l Layout) dir() statedir.Dir { return statedir.Dir{Root: l.Dir} }

// EntryPath is the registry entry of name's live supervisor.
func (l Layout) EntryPath(name string) string { return l.dir().Supervisor(name) }

// SocketPath is the control socket of name's supervisor.
func (l Layout) SocketPath(name string) string { return l.dir().Socket(name) }

// ReservePath is the disk space name's supervisor holds for its final records.
func (l Layout) ReservePath(name string) string { return l.dir().Reserve(name) }

// LockPath is name's lock: held while a tool sets up an attempt, while a supervisor records its
// end, and while reconcile judges it, so they never interleave.
func (l Layout) LockPath(name string) string { return l.dir().BeadLock(name) }

// LogPath is the agent's full output for the current attempt.
func (l Layout) LogPath(name string) string { return l.dir().Log(name) }

// PromptPath is where the prompt is written for agents that read it from a file.
func (l Layout) PromptPath(name string) string { return l.dir().Prompt(name) }

// HandoffDir is where starters offer supervisors their specs.
func (l Layout) HandoffDir() string { return l.dir().Handoffs() }

// Lock takes name's lock, waiting up to wait. A link planted at the lock's path is refused,
// never followed, and never replaced: two processes that each replaced it would each hold "the"
// lock.
func (l Layout) Lock(ctx context.Context, name string, wait time.Duration) (func() error, error) {
	path := l.LockPath(name)
	if err := statedir.MkdirFor(path); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	unlock, err := fsx.LockFile(ctx, path)
	if err != nil && !errors.Is(err, fsx.ErrLocked) {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("the lock %s is a symbolic link, which is never followed: remove it", path)
		}
	}
	return unlock, err
}

// Entry is the registry entry of a live supervisor.
type Entry struct {
	// Tool is the tool whose recorder owns the attempt ("dispatch"), for Reconcile.
	Tool    string `json:"tool"`
	Name    string `json:"name"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"` // the supervisor; 0 while it is being launched
	// Start is the start time (clock ticks since boot) of a supervisor that serves a slot
	// (ServeHandoff), which its command line does not name: with the pid, it says this entry is
	// that process's, not a reused pid's (SupervisorAlive).
	Start    uint64 `json:"start,omitempty"`
	AgentPID int    `json:"agent_pid"` // the agent, leader of its own session; 0 until started
	// AgentStart is the agent's start time (clock ticks since boot), so that a pid reused by
	// another process is never taken for the agent.
	AgentStart uint64 `json:"agent_start,omitempty"`
	Backend    string `json:"backend"`
	Socket     string `json:"socket,omitempty"` // tmux's server socket
	Session    string `json:"session,omitempty"`
	Control    string `json:"control,omitempty"` // the supervisor's control socket
	StartedAt  string `json:"started_at"`
	// Outcome is set once the attempt ended and until its recorder has written it: a
	// supervisor that cannot write its records keeps it here, for Reconcile to finish.
	Outcome *Outcome `json:"outcome,omitempty"`
}

// WriteEntry records a live supervisor.
func (l Layout) WriteEntry(e *Entry) error {
	return l.writeEntry(e, true)
}

// rewriteEntry replaces the entry of a supervisor that is registered already (by WriteEntry,
// its own or its starter's) with what it learnt since: its agent, its outcome. Its content is
// on disk before the rename, as always, but the rename's durability is not waited for (the
// directory's fsync): a power cut may undo it, which leaves the entry before it, naming the
// same attempt, whose running record reconcile then closes as lost. An fsync a write less.
func (l Layout) rewriteEntry(e *Entry) error {
	return l.writeEntry(e, false)
}

func (l Layout) writeEntry(e *Entry, durable bool) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := statedir.MkdirFor(l.EntryPath(e.Name)); err != nil {
		return err
	}
	if durable {
		return fsx.WriteFileAtomic(l.EntryPath(e.Name), append(b, '\n'), 0o600)
	}
	_, err = fsx.WriteFileAtomicLazy(l.EntryPath(e.Name), append(b, '\n'), 0o600)
	return err
}

// entryLimit bounds what is read of an entry: a few hundred bytes are expected. (A hand-over
// file of an older version holds a prompt and an environment: megabytes at most.)
const entryLimit = 16 << 20

// ErrNotEntry is returned (wrapped) by ReadEntry for what sits at an entry's path but is no
// supervisor's entry: anything but a regular file (a link, a named pipe: never followed, never
// waited on), or a hand-over file an older dispatch left in the registry (ErrLegacySpec).
// ClearNotEntry removes it.
var ErrNotEntry = errors.New("not a supervisor's registry entry")

// ErrLegacySpec is the ErrNotEntry of a hand-over file: before the handoff sockets, dispatch
// wrote the supervisor's spec (the prompt and the whole environment) to
// supervisors/<bead>.spec.json, where the registry now reads bead "<bead>.spec"'s entry.
var ErrLegacySpec = fmt.Errorf("%w: a hand-over file of an older dispatch (a prompt and an environment)", ErrNotEntry)

// ReadEntry returns name's registry entry, or nil when there is none. It reads a regular file
// only, never through a link and never waiting on a named pipe (see ErrNotEntry). An entry
// written by an older version, which named its bead "bead", is read as well.
func (l Layout) ReadEntry(name string) (*Entry, error) {
	path := l.EntryPath(name)
	b, err := statedir.ReadFile(path, entryLimit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, statedir.ErrNotRegular):
		return nil, fmt.Errorf("supervisor entry %w: %w", err, ErrNotEntry)
	case err != nil:
		return nil, fmt.Errorf("supervisor entry: %w", err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("supervisor entry %s: %w", path, err)
	}
	if e.Name == "" {
		var keys map[string]json.RawMessage
		json.Unmarshal(b, &keys)
		var bead string
		json.Unmarshal(keys["bead"], &bead)
		_, hasPID := keys["pid"]
		_, hasArgv := keys["argv"]
		_, hasEnv := keys["env"]
		switch {
		case !hasPID && (hasArgv || hasEnv):
			return nil, fmt.Errorf("%s: %w", path, ErrLegacySpec)
		case hasPID && bead == name:
			e.Name = bead // an entry of the version before "name"
		}
	}
	if e.Name != name {
		return nil, fmt.Errorf("supervisor entry %s names %q", path, e.Name)
	}
	return &e, nil
}

// legacySpecAge is how old a hand-over file must be to be an orphan: an older dispatch hands
// its supervisor the spec within milliseconds of writing it.
const legacySpecAge = time.Minute

// ClearNotEntry removes what sits at name's entry path if it is no entry (ErrNotEntry) and
// reports whether it did: a link or a named pipe goes at once (removing it follows nothing), a
// hand-over file of an older dispatch once it is a minute old (an orphan, holding a prompt and
// an environment); a younger one is a launch in progress, and a real entry is never removed.
// The caller holds name's lock.
func (l Layout) ClearNotEntry(name string) bool {
	_, err := l.ReadEntry(name)
	if !errors.Is(err, ErrNotEntry) {
		return false
	}
	path := l.EntryPath(name)
	if errors.Is(err, ErrLegacySpec) {
		fi, err := os.Lstat(path)
		if err != nil || time.Since(fi.ModTime()) < legacySpecAge {
			return false
		}
	}
	return os.Remove(path) == nil
}

// RemoveEntry removes name's registry entry, its disk reserve and its control socket unless
// a supervisor listens on it (and the reserve where versions before the layout kept it). A
// supervisor closes its own socket (statedir.Listener.Close); a live one here is the next
// supervisor of the name, started once this entry's let go of it.
func (l Layout) RemoveEntry(name string) {
	os.Remove(l.EntryPath(name))
	os.Remove(l.ReservePath(name))
	statedir.RemoveStaleSocket(l.SocketPath(name))
	os.Remove(l.dir().LegacyReserve(name))
}

// Registered lists the names with a registry entry, sorted; valid says which file names are
// names (a tool's name rule), so temp files and strays are skipped.
func (l Layout) Registered(valid func(string) bool) []string {
	names, _ := statedir.Beads(l.dir().Supervisors(), ".json")
	kept := names[:0]
	for _, n := range names {
		if valid(n) {
			kept = append(kept, n)
		}
	}
	return kept
}

// ServeHandoff is the --handoff of a supervisor that serves a slot: it takes one attempt after
// another over descriptor 3, a connection its runner holds (attempt.StartServer), not one spec
// from a handoff socket.
const ServeHandoff = "fd:3"

// SupervisorAlive reports whether pid is a live supervisor of name. The command line is
// checked, not only the pid, because a pid is reused once its process is gone. A supervisor
// that serves a slot names no attempt on its command line: it is name's while name's registry
// entry (in the state directory of its command line) names it, pid and start time, which it
// writes itself once it has claimed the attempt and removes once the attempt is recorded.
func SupervisorAlive(pid int, name string) bool {
	if !proc.Alive(pid) {
		return false
	}
	args, err := proc.Args(pid)
	if err != nil {
		return true // as proc.Holds: a live pid whose command line cannot be read
	}
	if !slices.Contains(args, SuperviseVerb) {
		return false
	}
	return slices.Contains(args, name) || servesNow(pid, args, name)
}

// servesNow says whether pid, a supervisor whose command line is args, serves a slot and
// runs name's attempt now (SupervisorAlive).
func servesNow(pid int, args []string, name string) bool {
	i := slices.Index(args, SuperviseVerb)
	if i < 0 || !slices.Contains(args[i:], ServeHandoff) || !ownProcess(pid) {
		return false
	}
	dir := stateDirArg(args[i+1:])
	if dir == "" || !filepath.IsAbs(dir) {
		return false
	}
	e, err := Layout{Dir: dir}.ReadEntry(name)
	if err != nil || e == nil || e.PID != pid || e.Start == 0 {
		return false
	}
	start, ok := proc.StartTime(pid)
	return ok && start == e.Start
}

// stateDirArg is the --state-dir of a supervisor verb's arguments, "" when there is none.
func stateDirArg(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--state-dir="); ok {
			return v
		}
		if a == "--state-dir" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// ownProcess says whether pid runs as this user: another user's process, whatever its command
// line says, is never taken for a supervisor of ours.
func ownProcess(pid int) bool {
	var st unix.Stat_t
	return unix.Stat("/proc/"+strconv.Itoa(pid), &st) == nil && int(st.Uid) == os.Getuid()
}

// WaitExit waits until the supervisor of entry has exited, ctx is done, or limit has passed
// (0: no limit), through a pidfd: the kernel says when, nothing polls the process table. When
// the process cannot be held (no pid, or already gone) it pauses briefly instead, so that a
// caller looping on "is it recorded yet" does not spin.
func WaitExit(ctx context.Context, entry *Entry, limit time.Duration) {
	if entry == nil || entry.PID <= 0 {
		pause(ctx, 5*time.Millisecond)
		return
	}
	fd, err := unix.PidfdOpen(entry.PID, 0)
	if err != nil {
		pause(ctx, 5*time.Millisecond)
		return
	}
	defer unix.Close(fd)
	// Checked once the pidfd holds the process: a pid reused meanwhile is not our supervisor.
	if !SupervisorAlive(entry.PID, entry.Name) {
		return
	}
	var deadline time.Time
	if limit > 0 {
		deadline = time.Now().Add(limit)
	}
	for ctx.Err() == nil && (deadline.IsZero() || time.Now().Before(deadline)) {
		// 200 ms at most a poll: ctx and the deadline are looked at between polls.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 200)
		if n > 0 || (err != nil && !errors.Is(err, syscall.EINTR)) {
			return
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
