package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/statedir"
)

// TruthsayerBin reads TRUTHSAYER_BIN (default $HOME/truthsayer/truthsayer, dispatch.sh's).
func TruthsayerBin(getenv func(string) string) string {
	if v := getenv("TRUTHSAYER_BIN"); v != "" {
		return v
	}
	return filepath.Join(getenv("HOME"), "truthsayer", "truthsayer")
}

// TruthsayerLog is where Truthsayer's output for bead goes: state/truthsayer/<bead>.log, where
// dispatch.sh kept it.
func TruthsayerLog(stateDir, bead string) string {
	return statedir.Dir{Root: stateDir}.Truthsayer(bead)
}

// Watcher is a Truthsayer watching a repository while its agent works: its process group, named
// for good by its pid and start time (pids are reused).
type Watcher struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// StartTruthsayer starts bin watch DIR with its output in log (truncated), as dispatch.sh did
// just before it started the agent. It runs in a session of its own: it outlives dispatch and
// the terminal dispatch ran in, until the attempt's supervisor stops it.
func StartTruthsayer(bin, dir, log string, env []string) (*Watcher, error) {
	if err := statedir.MkdirFor(log); err != nil {
		return nil, err
	}
	// Made fresh, as truncating it would: whatever is at log (the last attempt's findings, or
	// a link planted there) is removed, never followed.
	if err := os.Remove(log); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Reaped here if it ends while dispatch still runs (--wait).
	c, err := proc.StartDetached([]string{bin, "watch", dir}, proc.Detached{Env: env, Output: f})
	if err != nil {
		return nil, err
	}
	w := &Watcher{PID: c.Pid}
	w.Start, _ = proc.StartTime(w.PID)
	return w, nil
}

// Stop stops the watcher (SIGTERM to its process group, as dispatch.sh's kill), if it is still
// the process that was started.
func (w *Watcher) Stop() {
	if w == nil || w.PID <= 0 {
		return
	}
	if start, ok := proc.StartTime(w.PID); !ok || start != w.Start {
		return
	}
	syscall.Kill(-w.PID, syscall.SIGTERM)
}

// CountFindings counts the lines of a Truthsayer log that start with ERROR or WARNING (0 when
// there is no log), as dispatch.sh counted them for the wake message. Only a regular file is
// read, never through a link, and a named pipe there does not block (statedir.Open).
func CountFindings(log string) int {
	f, err := statedir.Open(log)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Bytes(); bytes.HasPrefix(l, []byte("ERROR")) || bytes.HasPrefix(l, []byte("WARNING")) {
			n++
		}
	}
	return n
}
