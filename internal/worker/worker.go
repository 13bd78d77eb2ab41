// Package worker is swarm's worker registry: $SWARM_DIR/state.json, {"workers": [...]}, in the
// format the Python swarm reads and writes, so that either tool can take over from the other.
//
// The file is written as the Python tool writes it (internal/pyjson: json.dump with indent=2, no
// final newline, keys name, status, cmd, started, cwd, env, tags, tmux, worktree, pid, metadata)
// and read as tolerantly as it reads it (env, tags, metadata, tmux, worktree and pid may be
// missing). Unlike the Python tool, which dropped them on its next write (and crashed on an
// unknown key in tmux or worktree), keys this package does not know are kept, in their place,
// at the top level and in workers, tmux and worktree objects; a worker entry that cannot be
// read as a worker (a required key missing, a wrong type, a name
// that breaks statedir.CheckName's rule) is kept as it is and left out of
// State.Workers' readers (Registry warns about it).
//
// Every change goes through Registry.Update: under state.lock (flock, as the Python tool takes
// it), read, change, write to a temp file, fsync, rename. A state.json that does not parse is
// copied aside to state.json.corrupted (never over an older, different copy), as the Python
// tool did; unlike it, the first command that finds it replaces it at once with a fresh state
// (of the workers Registry.Rebuild knows to run) and warns once, instead of warning on every
// command and failing on every change.
//
// swarm's own facts about a worker (its supervisor's pid, its agent's exit code and finish
// time) live in the worker's metadata object, which the Python tool keeps as it is.
package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/fleet/internal/pyjson"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Statuses of a worker as state.json says them.
const (
	StatusRunning = "running"
	StatusStopped = "stopped"
)

// Keys of the metadata object that swarm writes (the Python tool ignores and keeps them).
const (
	MetaSupervised    = "supervised"     // true: started under a supervisor
	MetaSupervisorPID = "supervisor_pid" // the supervisor's pid
	MetaAgentPID      = "agent_pid"      // the agent's pid, once it runs
	MetaExitCode      = "exit_code"      // the agent's exit code, null when it cannot be known
	MetaFinished      = "finished"       // when the agent ended, local time as "started"
	MetaReason        = "reason"         // how the outcome was decided (agent-exit-0, killed, ...)
)

// Tmux is a tmux worker's window.
type Tmux struct {
	Session string
	Window  string
	// Socket is the tmux socket *name* (tmux -L), nil for the default server.
	Socket *string
	Extra  Object // keys the Python tool does not know, kept
}

// Worktree is a worker's git worktree.
type Worktree struct {
	Path, Branch, BaseRepo string
	Extra                  Object
}

// Env is the --env pairs of a worker, in their order.
type Env []EnvVar

// EnvVar is one --env pair.
type EnvVar struct{ Key, Value string }

// Worker is one entry of state.json.
type Worker struct {
	Name    string
	Status  string
	Cmd     []string
	Started string // local time, no offset: 2026-11-23T15:09:07.844392
	Cwd     string
	Env     Env
	Tags    []string
	Tmux    *Tmux
	// Worktree is nil for a worker without one.
	Worktree *Worktree
	// PID is a process worker's pid (ours: its supervisor's), nil for tmux workers.
	PID      *int64
	Metadata Object
	Extra    Object // keys the Python tool does not know, kept after metadata
}

// State is the whole of state.json.
type State struct {
	// Workers are the entries that read as workers, in the file's order.
	Workers []*Worker
	// entries is the file's workers array: each a *Worker, or a json.RawMessage kept as read.
	entries []any
	Extra   Object // top-level keys other than "workers"
}

// Bad returns the entries of the workers array that are not workers, as read, with why.
func (s *State) Bad() []error {
	var errs []error
	for i, e := range s.entries {
		if b, ok := e.(badEntry); ok {
			errs = append(errs, fmt.Errorf("workers[%d]: %w", i, b.err))
		}
	}
	return errs
}

type badEntry struct {
	raw json.RawMessage
	err error
}

// Get returns the worker called name, or nil.
func (s *State) Get(name string) *Worker {
	for _, w := range s.Workers {
		if w.Name == name {
			return w
		}
	}
	return nil
}

// Add appends w.
func (s *State) Add(w *Worker) {
	s.Workers = append(s.Workers, w)
	s.entries = append(s.entries, w)
}

// Remove removes the worker called name and reports whether there was one.
func (s *State) Remove(name string) bool {
	found := false
	kept := s.entries[:0]
	for _, e := range s.entries {
		if w, ok := e.(*Worker); ok && w.Name == name {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	s.entries = kept
	ws := s.Workers[:0]
	for _, w := range s.Workers {
		if w.Name != name {
			ws = append(ws, w)
		}
	}
	s.Workers = ws
	return found
}

// ErrCorrupt is matched by the error of Decode for a file the Python tool could not read
// either (json.load failed) or that has no workers list to read.
var ErrCorrupt = errors.New("corrupt state file")

// Decode reads state.json. An empty document, one that is not JSON (or not UTF-8), and one
// whose top level is not an object or whose "workers" is not a list, is ErrCorrupt. A UTF-8 BOM
// is accepted (the Python tool refused it as corrupt).
func Decode(b []byte) (*State, error) {
	// The workers' values are kept as slices of b: a copy, so that the caller's buffer is
	// the caller's.
	b = bytes.Clone(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")))
	if !validUTF8(b) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrCorrupt)
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		if err == nil {
			err = errors.New("not JSON")
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	top, err := parseObject(b)
	if err != nil {
		return nil, fmt.Errorf("%w: the top level is not an object", ErrCorrupt)
	}
	s := &State{}
	for _, m := range top {
		if m.Key != "workers" {
			s.Extra = append(s.Extra, m)
		}
	}
	raw := top.Get("workers")
	if raw == nil || string(raw) == "null" {
		return s, nil
	}
	list, err := splitArray(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: \"workers\" is not a list", ErrCorrupt)
	}
	for _, r := range list {
		w, err := decodeWorker(r)
		if err != nil {
			s.entries = append(s.entries, badEntry{raw: r, err: err})
			continue
		}
		s.entries = append(s.entries, w)
		s.Workers = append(s.Workers, w)
	}
	return s, nil
}

// decodeWorker reads one entry of state.json's workers (valid JSON: Decode checked the file).
func decodeWorker(b json.RawMessage) (*Worker, error) {
	o, err := parseObject(b)
	if err != nil {
		return nil, errors.New("not an object")
	}
	w := &Worker{}
	var env Object
	var tmux, worktree Object
	errs := []error{
		o.decodeField("name", &w.Name, true), o.decodeField("status", &w.Status, true), o.decodeField("cmd", &w.Cmd, true),
		o.decodeField("started", &w.Started, true), o.decodeField("cwd", &w.Cwd, true),
		o.decodeField("env", &env, false), o.decodeField("tags", &w.Tags, false), o.decodeField("pid", &w.PID, false),
		o.decodeField("metadata", &w.Metadata, false), o.decodeField("tmux", &tmux, false), o.decodeField("worktree", &worktree, false),
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// The name becomes a path (logs, heartbeats, the supervisor's files), a tmux target and a
	// branch: one that breaks the rule (the Python swarm checked none; or planted, such as
	// "../../victim") is no worker of ours to act on.
	if err := statedir.CheckName(statedir.KindWorker, w.Name); err != nil {
		return nil, err
	}
	if w.Env, err = decodeEnv(env); err != nil {
		return nil, err
	}
	// Python: TmuxInfo(**d) if d.get("tmux") else None, so an empty object is no window.
	if len(tmux) > 0 {
		if w.Tmux, err = decodeTmux(tmux); err != nil {
			return nil, err
		}
	}
	if len(worktree) > 0 {
		if w.Worktree, err = decodeWorktree(worktree); err != nil {
			return nil, err
		}
	}
	for _, m := range o {
		if !knownKeys[m.Key] {
			w.Extra = append(w.Extra, m)
		}
	}
	return w, nil
}

// decodeField decodes o's member key into dst. A member missing or null is left out, unless
// required: then it is an error.
func (o Object) decodeField(key string, dst any, required bool) error {
	v := o.Get(key)
	if v == nil {
		if required {
			return fmt.Errorf("no %q", key)
		}
		return nil
	}
	if string(v) == "null" {
		if required {
			return fmt.Errorf("%q is null", key)
		}
		return nil
	}
	if err := fastUnmarshal(v, dst); err != nil {
		return fmt.Errorf("%q: %v", key, err)
	}
	return nil
}

// decodeEnv reads a worker's env: every value a string, kept in the file's order.
func decodeEnv(env Object) ([]EnvVar, error) {
	var vars []EnvVar
	for _, m := range env {
		var v string
		if err := json.Unmarshal(m.Value, &v); err != nil {
			return nil, fmt.Errorf("env %q is not a string", m.Key)
		}
		vars = append(vars, EnvVar{m.Key, v})
	}
	return vars, nil
}

// decodeTmux reads a worker's tmux window, which must name a session and a window.
func decodeTmux(tmux Object) (*Tmux, error) {
	t := &Tmux{}
	for _, m := range tmux {
		var err error
		switch m.Key {
		case "session":
			err = json.Unmarshal(m.Value, &t.Session)
		case "window":
			err = json.Unmarshal(m.Value, &t.Window)
		case "socket":
			err = json.Unmarshal(m.Value, &t.Socket)
		default:
			t.Extra = append(t.Extra, m)
		}
		if err != nil {
			return nil, fmt.Errorf("tmux %q: %v", m.Key, err)
		}
	}
	if t.Session == "" || t.Window == "" {
		return nil, errors.New("tmux has no session or window")
	}
	return t, nil
}

// decodeWorktree reads a worker's worktree.
func decodeWorktree(worktree Object) (*Worktree, error) {
	t := &Worktree{}
	for _, m := range worktree {
		var err error
		switch m.Key {
		case "path":
			err = json.Unmarshal(m.Value, &t.Path)
		case "branch":
			err = json.Unmarshal(m.Value, &t.Branch)
		case "base_repo":
			err = json.Unmarshal(m.Value, &t.BaseRepo)
		default:
			t.Extra = append(t.Extra, m)
		}
		if err != nil {
			return nil, fmt.Errorf("worktree %q: %v", m.Key, err)
		}
	}
	return t, nil
}

// fastUnmarshal is json.Unmarshal for a value of valid JSON, without its checks and
// reflection for the common types of a worker (strings and objects); anything else, and every
// value of the wrong type (for its error), goes to json.Unmarshal.
func fastUnmarshal(v json.RawMessage, dst any) error {
	switch d := dst.(type) {
	case *string:
		if len(v) > 0 && v[0] == '"' {
			s, err := unquote(v)
			*d = s
			return err
		}
	case *Object:
		if len(v) > 0 && v[0] == '{' {
			o, err := parseObject(v)
			*d = o
			return err
		}
	}
	return json.Unmarshal(v, dst)
}

var knownKeys = map[string]bool{"name": true, "status": true, "cmd": true, "started": true, "cwd": true,
	"env": true, "tags": true, "tmux": true, "worktree": true, "pid": true, "metadata": true}

// pyWriter writes state.json's and the heartbeats' documents as the Python tool's json.dump
// (indent=2) does (pyjson.Writer), their keys in the Python tool's order.
type pyWriter struct {
	pyjson.Writer
}

// Encode writes s as the Python tool writes state.json.
func Encode(s *State) []byte {
	w := &pyWriter{}
	w.WriteString("{")
	w.Newline(1)
	w.Quote("workers")
	w.WriteString(": ")
	if len(s.entries) == 0 {
		w.WriteString("[]")
	} else {
		w.WriteString("[")
		for i, e := range s.entries {
			if i > 0 {
				w.WriteByte(',')
			}
			w.Newline(2)
			switch e := e.(type) {
			case *Worker:
				w.worker(e, 2)
			case badEntry:
				w.Raw(e.raw, 2)
			}
		}
		w.Newline(1)
		w.WriteString("]")
	}
	w.members(s.Extra, 1, false)
	w.Newline(0)
	w.WriteString("}")
	return w.Bytes()
}

// EncodeWorkers writes workers as a list, as `ls --format json` prints it (json.dumps, indent=2).
func EncodeWorkers(ws []*Worker) []byte {
	w := &pyWriter{}
	if len(ws) == 0 {
		return []byte("[]")
	}
	w.WriteString("[")
	for i, x := range ws {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Newline(1)
		w.worker(x, 1)
	}
	w.Newline(0)
	w.WriteString("]")
	return w.Bytes()
}

// EncodeWorker writes one worker as EncodeWorkers writes each (`status --json`).
func EncodeWorker(x *Worker) []byte {
	w := &pyWriter{}
	w.worker(x, 0)
	return w.Bytes()
}

// members writes o's members after others already written (first: none before them).
func (w *pyWriter) members(o Object, depth int, first bool) {
	for _, m := range o {
		if !first {
			w.WriteByte(',')
		}
		first = false
		w.Newline(depth)
		w.Quote(m.Key)
		w.WriteString(": ")
		if err := w.Raw(m.Value, depth); err != nil {
			w.WriteString("null")
		}
	}
}

func (w *pyWriter) key(k string, depth int, first bool) {
	if !first {
		w.WriteByte(',')
	}
	w.Newline(depth)
	w.Quote(k)
	w.WriteString(": ")
}

func (w *pyWriter) strList(l []string, depth int) {
	if len(l) == 0 {
		w.WriteString("[]")
		return
	}
	w.WriteString("[")
	for i, s := range l {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Newline(depth + 1)
		w.Quote(s)
	}
	w.Newline(depth)
	w.WriteString("]")
}

func (w *pyWriter) worker(x *Worker, depth int) {
	d := depth + 1
	w.WriteString("{")
	w.key("name", d, true)
	w.Quote(x.Name)
	w.key("status", d, false)
	w.Quote(x.Status)
	w.key("cmd", d, false)
	w.strList(x.Cmd, d)
	w.key("started", d, false)
	w.Quote(x.Started)
	w.key("cwd", d, false)
	w.Quote(x.Cwd)
	w.key("env", d, false)
	if len(x.Env) == 0 {
		w.WriteString("{}")
	} else {
		w.WriteString("{")
		for i, e := range x.Env {
			w.key(e.Key, d+1, i == 0)
			w.Quote(e.Value)
		}
		w.Newline(d)
		w.WriteString("}")
	}
	w.key("tags", d, false)
	w.strList(x.Tags, d)
	w.key("tmux", d, false)
	if x.Tmux == nil {
		w.WriteString("null")
	} else {
		w.WriteString("{")
		w.key("session", d+1, true)
		w.Quote(x.Tmux.Session)
		w.key("window", d+1, false)
		w.Quote(x.Tmux.Window)
		w.key("socket", d+1, false)
		if x.Tmux.Socket == nil {
			w.WriteString("null")
		} else {
			w.Quote(*x.Tmux.Socket)
		}
		w.members(x.Tmux.Extra, d+1, false)
		w.Newline(d)
		w.WriteString("}")
	}
	w.key("worktree", d, false)
	if x.Worktree == nil {
		w.WriteString("null")
	} else {
		w.WriteString("{")
		w.key("path", d+1, true)
		w.Quote(x.Worktree.Path)
		w.key("branch", d+1, false)
		w.Quote(x.Worktree.Branch)
		w.key("base_repo", d+1, false)
		w.Quote(x.Worktree.BaseRepo)
		w.members(x.Worktree.Extra, d+1, false)
		w.Newline(d)
		w.WriteString("}")
	}
	w.key("pid", d, false)
	if x.PID == nil {
		w.WriteString("null")
	} else {
		fmt.Fprintf(w, "%d", *x.PID)
	}
	w.key("metadata", d, false)
	if len(x.Metadata) == 0 {
		w.WriteString("{}")
	} else {
		w.WriteString("{")
		w.members(x.Metadata, d+1, true)
		w.Newline(d)
		w.WriteString("}")
	}
	w.members(x.Extra, d, false)
	w.Newline(depth)
	w.WriteString("}")
}

// Timestamp is how the Python tool writes a worker's start (datetime.now().isoformat()):
// local time, no offset, microseconds unless they are zero.
func Timestamp(t time.Time) string {
	t = t.Local()
	if us := t.Nanosecond() / 1000; us != 0 {
		return t.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%06d", us)
	}
	return t.Format("2006-01-02T15:04:05")
}

// ParseTimestamp reads a worker's start as Python's datetime.fromisoformat does for the forms
// the tools write: naive local time (with or without a fraction), or with an offset or Z.
func ParseTimestamp(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, true
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// Meta returns the metadata value key decoded into v, and whether it was there (and decoded).
func (x *Worker) Meta(key string, v any) bool {
	raw := x.Metadata.Get(key)
	if raw == nil {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// Supervised reports whether the worker was started under a supervisor (by this swarm).
func (x *Worker) Supervised() bool {
	var b bool
	return x.Meta(MetaSupervised, &b) && b
}

// Outcome is how a supervised worker's agent ended, from its metadata.
type Outcome struct {
	Finished string
	ExitCode *int64 // nil: not known
	Reason   string
}

// Ended returns the agent's outcome once its supervisor recorded one.
func (x *Worker) Ended() (*Outcome, bool) {
	var o Outcome
	if !x.Meta(MetaFinished, &o.Finished) {
		return nil, false
	}
	x.Meta(MetaExitCode, &o.ExitCode)
	x.Meta(MetaReason, &o.Reason)
	return &o, true
}
