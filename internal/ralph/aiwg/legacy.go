package aiwg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

// AIWG kept a single loop in .aiwg/ralph/current-loop.json before it kept several (its
// in-session loop's state, camelCase, written by its hook). Seed 003's backward compatibility:
// when that file is there, it is read, converted to the v2 state, written to
// loops/<loop_id>/state.json and registered; the legacy file is kept for the tools that expect
// it. The loop then answers status, resume, abort and report as any other.

// LegacyFile is AIWG's single-loop state, under .aiwg/ralph.
const LegacyFile = "current-loop.json"

// PauseMigrated is the pause reason of a loop taken from current-loop.json that was running:
// AIWG's in-session model ran it, and nothing runs it here until ralph resume does.
const PauseMigrated = "migrated"

// legacyLoop is current-loop.json as AIWG's tools wrote it. Its numbers are read as JSON
// numbers (JavaScript wrote 10 or 10.0 alike).
type legacyLoop struct {
	LoopID           string  `json:"loopId"`
	Active           bool    `json:"active"`
	Task             string  `json:"task"`
	Completion       string  `json:"completion"`
	MaxIterations    float64 `json:"maxIterations"`
	TimeoutMinutes   float64 `json:"timeoutMinutes"`
	StartTime        string  `json:"startTime"`
	StartTimeMs      float64 `json:"startTimeMs"`
	CurrentIteration float64 `json:"currentIteration"`
	Status           string  `json:"status"`
}

// maxLegacy bounds the read of current-loop.json (its iterations and learnings included).
const maxLegacy = 4 << 20

// MigrateLegacy takes the workspace's current-loop.json into the multi-loop layout, once: it
// returns the loop's id ("" when there is no legacy file), and does nothing more when the
// loop's directory exists already. A running legacy loop becomes paused (PauseMigrated; its
// timeout's clock starts at the migration), an ended one keeps its end (success: completed;
// aborted; any other: failed, exit_reason the legacy status). Its completion command is
// sealed (rt.SealDir) as at a start; it has no start to revert to. Its agent is agent (AIWG's
// in-session loop was Claude Code's: cmd/ralph gives start's default). Under the workspace's
// lock, within the limit of active loops.
func (w Workspace) MigrateLegacy(ctx context.Context, rt Runtime, agent string) (string, error) {
	path := filepath.Join(w.Dir(), LegacyFile)
	b, err := statedir.ReadFile(path, maxLegacy)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading AIWG's %s: %w", path, err)
	}
	var l legacyLoop
	if err := json.Unmarshal(b, &l); err != nil {
		return "", fmt.Errorf("%s is not AIWG's single-loop state (%v); move it away to go on without it", path, err)
	}
	st, err := l.state(w, agent, time.Now())
	if err != nil {
		return "", fmt.Errorf("%s: %v; move it away to go on without it", path, err)
	}
	if _, err := os.Lstat(w.LoopDir(st.LoopID)); err == nil {
		return st.LoopID, nil // migrated before
	}
	err = w.Locked(ctx, func(reg *Registry) error {
		if _, err := os.Lstat(w.LoopDir(st.LoopID)); err == nil {
			return nil // another ralph migrated it meanwhile
		}
		if !Terminal(st.Status) && reg.activeCount() >= MaxConcurrent {
			return fmt.Errorf("cannot take %s in: %d loops already active (max: %d); end one, then run ralph again", path, reg.activeCount(), MaxConcurrent)
		}
		if err := statedir.Mkdir(filepath.Join(w.Dir(), "loops")); err != nil {
			return err
		}
		if err := os.Mkdir(w.LoopDir(st.LoopID), 0o700); err != nil {
			return err
		}
		if err := w.writeSeal(rt, st, nil); err != nil {
			os.RemoveAll(w.LoopDir(st.LoopID))
			return err
		}
		if err := w.save(reg, st); err != nil {
			os.RemoveAll(w.LoopDir(st.LoopID))
			return err
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return st.LoopID, nil
}

// state is l as a v2 state of workspace w, run by agent, at now.
func (l legacyLoop) state(w Workspace, agent string, now time.Time) (*State, error) {
	if strings.TrimSpace(l.Task) == "" || strings.TrimSpace(l.Completion) == "" {
		return nil, errors.New("no task or no completion command")
	}
	for _, v := range []float64{l.MaxIterations, l.TimeoutMinutes, l.CurrentIteration} {
		if math.IsNaN(v) || v < 0 || v > 1e6 || v != math.Trunc(v) {
			return nil, fmt.Errorf("%v is not a count", v)
		}
	}
	started := now
	if t, err := time.Parse(time.RFC3339, l.StartTime); err == nil {
		started = t
	} else if l.StartTimeMs > 0 {
		started = time.UnixMilli(int64(l.StartTimeMs))
	}
	max := int(l.MaxIterations)
	if max < 1 {
		max = 10 // AIWG's in-session default
	}
	st := &State{Version: "2.0.0", LoopID: l.id(), Task: l.Task, CompletionCriteria: l.Completion,
		StartedAt: stamp(started), Owner: owner(), WorkingDirectory: w.Root, Iteration: int(l.CurrentIteration),
		Configuration: Configuration{MaxIterations: max, AutoTest: true, CheckpointInterval: 1, ExecutionMode: "default"},
		Progress:      Progress{CompletionChecks: []Check{}}, Agent: agent, StateDir: w.DefaultStateDir(),
		Iterations: []Iteration{}, TimeoutFrom: stamp(now)}
	st.Metrics.TotalIterations = st.Iteration
	st.setTimeout(time.Duration(l.TimeoutMinutes) * time.Minute)
	switch {
	case l.Status == "running" || l.Status == "" && l.Active:
		paused := stamp(now)
		st.Status, st.PausedAt, st.PauseReason = StatusPaused, &paused, PauseMigrated
	case l.Status == "success":
		st.Status, st.ExitReason = StatusCompleted, StatusCompleted
	case l.Status == "aborted":
		st.Status, st.ExitReason = StatusAborted, StatusAborted
	default: // max_iterations, timeout, failed, and any other end AIWG's hook wrote
		st.Status, st.ExitReason = StatusFailed, legacyReason(l.Status)
	}
	if Terminal(st.Status) {
		done := stamp(now)
		st.CompletedAt = &done
	}
	return st, nil
}

// id is the legacy loop's id: its own when it is one (ralph-<slug>-<8 hex>), else one made
// from its task and, for the 8 hex, its id and start, so that every look makes the same.
func (l legacyLoop) id() string {
	if IsLoopID(l.LoopID) {
		return l.LoopID
	}
	sum := sha256.Sum256([]byte(l.LoopID + "\x00" + l.StartTime + "\x00" + l.Task))
	return "ralph-" + slug(l.Task) + "-" + hex.EncodeToString(sum[:4])
}

// legacyReason is a legacy end (max_iterations, timeout, failed) as an exit reason
// (max-iterations); anything else, or a word that is not one, reads failed.
func legacyReason(status string) string {
	r := strings.ReplaceAll(status, "_", "-")
	if r == "" || len(r) > 40 {
		return StatusFailed
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return StatusFailed
		}
	}
	return r
}
