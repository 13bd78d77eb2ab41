package aiwg

import (
	"fmt"
	"path/filepath"

	"github.com/agentfleet/fleet/internal/ralph/rails"
	"github.com/agentfleet/fleet/internal/statedir"
)

// A loop's agent works in its workspace, which holds .aiwg/ralph/loops/<id>/state.json: it can
// write the file. What judges it, the completion command (run through /bin/sh when it has shell
// syntax), must not come from there. Start keeps the command in a seal, <SealDir>/<id>.json,
// outside the workspace (Runtime.SealDir); a controller takes it from the seal when it starts
// (from state.json only when there is no seal: a loop started without a SealDir, or before
// seals existed), holds it in memory, and puts it back into the state whenever the state says
// another (a line in its log says so). The prompt, the check and status all see the sealed one.

// seal is a loop's <id>.json in Runtime.SealDir. Besides the completion command it keeps the
// loop's rails (rails.go), which the agent must not lift either, and the controller's own
// ledger: what the loop spent and when its agent was last started, which the agent must not
// lower.
type seal struct {
	LoopID             string      `json:"loop_id"`
	Workspace          string      `json:"workspace"`
	CompletionCriteria string      `json:"completion_criteria"`
	Rails              rails.Rails `json:"rails"`
	// SpentUSD is what the loop's iterations cost, as the controller counted it.
	SpentUSD float64 `json:"spent_usd"`
	// Calls are when the agent was started within the last hour (RFC 3339), for
	// --max-calls-per-hour.
	Calls []string `json:"calls,omitempty"`
	// Start is where the workspace's tree started, which abort --revert trusts alone (nil:
	// outside git, or a loop sealed before starts were).
	Start *startPoint `json:"start,omitempty"`
}

// startPoint is where a loop's workspace started, as Start recorded it: HEAD (Commit), the
// uncommitted changes (Stash, git stash create's commit, "" for none), and the list of the
// untracked files then (untracked-at-start in the loop's directory, inside the workspace) by
// its SHA-256, "" when no list was kept (then --revert removes no untracked file).
type startPoint struct {
	Commit          string `json:"commit"`
	Stash           string `json:"stash,omitempty"`
	UntrackedSHA256 string `json:"untracked_sha256,omitempty"`
}

// sealPath is loop id's seal, "" without a SealDir.
func (rt *Runtime) sealPath(id string) string {
	if rt.SealDir == "" {
		return ""
	}
	return filepath.Join(rt.SealDir, id+".json")
}

// writeSeal keeps st's completion command, rails and start in its seal (nothing without a
// SealDir).
func (w Workspace) writeSeal(rt Runtime, st *State, start *startPoint) error {
	path := rt.sealPath(st.LoopID)
	if path == "" {
		return nil
	}
	if err := statedir.Mkdir(rt.SealDir); err != nil {
		return fmt.Errorf("keeping the loop's completion command outside the workspace: %w", err)
	}
	s := seal{LoopID: st.LoopID, Workspace: w.Root, CompletionCriteria: st.CompletionCriteria, Start: start}
	if st.Rails != nil {
		s.Rails = *st.Rails
	}
	return w.storeSeal(rt, &s)
}

// storeSeal writes s as its loop's seal (nothing without a SealDir). Its writers hold the
// workspace's lock.
func (w Workspace) storeSeal(rt Runtime, s *seal) error {
	path := rt.sealPath(s.LoopID)
	if path == "" {
		return nil
	}
	return rails.WriteSeal(path, s)
}

// readSeal is loop id's seal; false when there is no seal to read.
func (w Workspace) readSeal(rt Runtime, id string) (*seal, bool, error) {
	path := rt.sealPath(id)
	if path == "" {
		return nil, false, nil
	}
	var s seal
	found, err := rails.ReadSeal(path, &s)
	if !found {
		return nil, false, err
	}
	if err != nil || s.LoopID != id || s.Workspace != w.Root {
		return nil, false, fmt.Errorf("%s is not loop %s's seal (%v)", path, id, err)
	}
	return &s, true, nil
}

// holdCriteria puts the completion command the controller holds back into st when st says
// another, and says so; it reports whether it changed st.
func (c *controller) holdCriteria(st *State) bool {
	if st.CompletionCriteria == c.criteria {
		return false
	}
	fmt.Fprintf(c.log, "ralph: warning: loop %s: state.json's completion command was changed to %q behind the controller's back; the loop's own %q is kept\n",
		c.id, st.CompletionCriteria, c.criteria)
	st.CompletionCriteria = c.criteria
	return true
}
