package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/supervise"
)

// Acting on another host's agent (swarm top --hosts): the view asks the host's own swarm, over
// the connection it polls the host with, to run the action there with its hidden verb ActVerb.
// The verb opens the host's agents as AgentsVerb does, finds the row, and calls the same
// Model method an action on this machine's row calls: what the command refuses here, it
// refuses there, in the host's own words.

// ActVerb is swarm's hidden verb a host carries out an action of swarm top --hosts with:
// `swarm __act --state-dir DIR --workspace DIR --kind K [--source S] [--row-dir D] [--key KEY]
// -- ACTION NAME [NEW]`, the text of send and the prompt of new on its stdin. It prints an
// ActAnswer.
const ActVerb = "__act"

// The actions ActVerb carries out: the Model's methods of the same names.
const (
	ActSend    = "send"    // Send: the text on stdin
	ActKey     = "key"     // Key: --key
	ActKill    = "kill"    // Kill
	ActPause   = "pause"   // Pause
	ActResume  = "resume"  // Resume
	ActStop    = "stop"    // Stop
	ActDiff    = "diff"    // Diff: ActAnswer.Diff
	ActWorkDir = "workdir" // WorkDir: ActAnswer.Dir
	ActNew     = "new"     // SpawnLike: NEW is the name, the prompt on stdin
)

// Actions are the actions ActVerb knows.
var Actions = []string{ActSend, ActKey, ActKill, ActPause, ActResume, ActStop, ActDiff, ActWorkDir, ActNew}

// ActRequest names a row of the host's and what to do with it.
type ActRequest struct {
	Action string
	// Kind, Source, StateDir and Name are the row's, as the host's answer said them.
	Kind     Kind
	Source   string
	StateDir string
	Name     string
	Key      string // ActKey's key (interrupt, eof, ...)
	New      string // ActNew's name
	Text     string // ActSend's line, ActNew's prompt (stdin)
}

// ActAnswer is what ActVerb prints: the diff of ActDiff, the directory of ActWorkDir.
type ActAnswer struct {
	Diff *Diff  `json:"diff,omitempty"`
	Dir  string `json:"dir,omitempty"`
}

// maxActText bounds the text read from the verb's stdin: a line typed into an agent, a prompt.
const maxActText = 1 << 20

// Check holds a request to what may become an argument on the host: names and sources as a
// state name (statedir.CheckName, the bead rule, the widest), a state directory an absolute,
// clean path, an action and a key among those known. A host's answer is hostile: none of it
// reaches ssh's command line before this.
func (q ActRequest) Check() error {
	switch {
	case !slices.Contains(Actions, q.Action):
		return fmt.Errorf("unknown action %q (%s)", q.Action, strings.Join(Actions, ", "))
	case !slices.Contains(Kinds, q.Kind):
		return fmt.Errorf("unknown kind %q", q.Kind)
	case q.Action == ActKey && supervise.Keys[q.Key] == "":
		return fmt.Errorf("unknown key %q", q.Key)
	case q.Action == ActNew && q.New == "":
		return ErrNoName
	}
	if err := statedir.CheckName(statedir.KindBead, q.Name); err != nil {
		return fmt.Errorf("the agent's name %q: %v", remote.Printable(q.Name), err)
	}
	if q.Source != "" {
		if err := statedir.CheckName(statedir.KindBead, q.Source); err != nil {
			return fmt.Errorf("the agent's source %q: %v", remote.Printable(q.Source), err)
		}
	}
	if q.StateDir != "" && !cleanAbs(q.StateDir) {
		return fmt.Errorf("the agent's state directory %q is not a clean absolute path", remote.Printable(q.StateDir))
	}
	if q.New != "" && strings.HasPrefix(q.New, "-") {
		// The host's spawn checks the name; this keeps it from ever reading as an option.
		return fmt.Errorf("invalid worker name %q: it starts with '-'", q.New)
	}
	return nil
}

// cleanAbs: an absolute path as filepath.Clean leaves it, with no control character.
func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && remote.Printable(p) == p && !strings.ContainsAny(p, "\x00\n")
}

// Argv is the host's command line for q (its swarm binary prog; stateDir and workspace the
// host's, from hosts.yaml): flags first, then "--" and the operands, so that no name is
// ever read as an option.
func (q ActRequest) Argv(prog, stateDir, workspace string) []string {
	argv := []string{prog, ActVerb, "--state-dir", stateDir, "--workspace", workspace, "--kind", string(q.Kind)}
	if q.Source != "" {
		argv = append(argv, "--source", q.Source)
	}
	if q.StateDir != "" {
		argv = append(argv, "--row-dir", q.StateDir)
	}
	if q.Key != "" {
		argv = append(argv, "--key", q.Key)
	}
	argv = append(argv, "--", q.Action, q.Name)
	if q.New != "" {
		argv = append(argv, q.New)
	}
	return argv
}

// ReadActText reads ActVerb's stdin, at most maxActText bytes.
func ReadActText(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxActText+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxActText {
		return "", fmt.Errorf("the text is over %d bytes", maxActText)
	}
	return string(b), nil
}

// errNoRow is an action on a row the host does not list (any more).
var errNoRow = errors.New("no such agent here (it may have ended and gone from the list)")

// Act is ActVerb's work on the host: q's row among src's (as AgentsVerb reads them), and q's
// action on it through the Model's method; the answer as one JSON document on w.
func Act(ctx context.Context, src Sources, q ActRequest, w io.Writer) error {
	if err := q.Check(); err != nil {
		return err
	}
	m, err := Open(src)
	if err != nil {
		return err
	}
	rows, err := m.Snapshot(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(rows, func(r *Row) bool {
		return r.Host == "" && r.Kind == q.Kind && r.Source == q.Source && r.StateDir == q.StateDir && r.Name == q.Name
	})
	if i < 0 {
		return fmt.Errorf("%s %s: %w", q.Kind, q.Name, errNoRow)
	}
	r := rows[i]
	var a ActAnswer
	switch q.Action {
	case ActSend:
		err = m.Send(ctx, r, q.Text)
	case ActKey:
		err = m.Key(ctx, r, q.Key)
	case ActKill:
		err = m.Kill(ctx, r)
	case ActPause:
		err = m.Pause(ctx, r)
	case ActResume:
		err = m.Resume(ctx, r)
	case ActStop:
		err = m.Stop(ctx, r)
	case ActDiff:
		a.Diff, err = m.Diff(ctx, r)
	case ActWorkDir:
		a.Dir, err = m.WorkDir(r)
	case ActNew:
		_, err = m.SpawnLike(ctx, r, q.New, strings.TrimSpace(q.Text), newReadyWait)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(a)
}

// newReadyWait is how long a worker started from the view is given to be ready for its prompt
// (as spawn --ready-wait).
const newReadyWait = 30 * time.Second
