package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Registry reads and changes a swarm directory's state.json.
type Registry struct {
	Dir statedir.Swarm
	// Warn is told what the user should know (a corrupt file set aside, entries that are not
	// workers), once per Load or Update; nil drops it.
	Warn func(msg string)
	// Rebuild, when set, gives the workers known to run elsewhere than in state.json (swarm:
	// its supervisors' registry): a corrupt state.json is replaced by a state of them, so that
	// a truncated file does not make the swarm forget the workers that run. It is called
	// under state.lock and must not take it.
	Rebuild func() []*Worker
}

// Ensure creates $SWARM_DIR and its logs/ as every Python swarm command did (ensure_dirs),
// owner only, and checks them as every state directory is checked (statedir.Swarm.Check): a
// directory of another user's, or a subdirectory that is a link, is refused, nothing written.
func (r *Registry) Ensure() error {
	if err := os.MkdirAll(r.Dir.Root, 0o700); err != nil {
		return fmt.Errorf("creating the swarm directory: %w", err)
	}
	if err := r.Dir.Check(); err != nil {
		return err
	}
	return statedir.Mkdir(r.Dir.Logs())
}

// Load reads the state without a lock (every write replaces the file whole). A missing file is
// an empty state. A corrupt one is set aside once (see reset): under the lock it is copied to
// state.json.corrupted and replaced by a fresh state (of the workers Rebuild knows), so that
// the next command finds a good file and says nothing.
func (r *Registry) Load() (*State, error) {
	b, err := r.read()
	if err != nil || b == nil {
		return &State{}, err
	}
	s, err := r.decode(b)
	if !errors.Is(err, ErrCorrupt) {
		return s, err
	}
	err = fsx.Update(context.Background(), r.Dir.State(), r.Dir.StateLock(), func(old []byte) ([]byte, error) {
		if old == nil {
			return nil, ErrUnchanged // another command set it aside meanwhile
		}
		if _, err := Decode(old); !errors.Is(err, ErrCorrupt) {
			return nil, ErrUnchanged // or wrote a good one
		}
		s, err := r.reset(old, err)
		if err != nil {
			return nil, err
		}
		return Encode(s), nil
	})
	if err != nil {
		return nil, err
	}
	if b, err = r.read(); err != nil || b == nil {
		return &State{}, err
	}
	return r.decode(b)
}

// read reads state.json as it is: a regular file only, never through a link; nil when there is
// none.
func (r *Registry) read() ([]byte, error) {
	b, err := statedir.ReadFile(r.Dir.State(), fsx.MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.Dir.State(), err)
	}
	return b, nil
}

// decode reads b, state.json's content; a corrupt one is ErrCorrupt, for the caller to reset
// under the lock.
func (r *Registry) decode(b []byte) (*State, error) {
	s, err := Decode(b)
	if err != nil {
		return nil, err
	}
	for _, e := range s.Bad() {
		r.warn(fmt.Sprintf("%s: %v: kept as it is, not read as a worker", r.Dir.State(), e))
	}
	return s, nil
}

// reset is the state that replaces b, a corrupt state.json (why: its error), the caller
// holding state.lock: b is copied aside first (setAside), then the state is made of the
// workers Rebuild knows to run, and the user is told once, in one line that starts with the
// Python tool's words (scripts may look for them).
func (r *Registry) reset(b []byte, why error) (*State, error) {
	saved, err := r.setAside(b)
	if err != nil {
		// Without a copy, a fresh state would lose the file: refuse instead.
		return nil, fmt.Errorf("%s is corrupt (%v) and could not be copied aside: %w", r.Dir.State(), why, err)
	}
	s := &State{}
	var names []string
	if r.Rebuild != nil {
		for _, w := range r.Rebuild() {
			s.Add(w)
			names = append(names, w.Name)
		}
	}
	msg := fmt.Sprintf("corrupt state file, resetting (%s; the file is kept as %s)",
		strings.TrimPrefix(why.Error(), ErrCorrupt.Error()+": "), saved)
	if len(names) > 0 {
		msg += fmt.Sprintf("; rebuilt from their supervisors, still running: %s", strings.Join(names, ", "))
	}
	r.warn(msg)
	return s, nil
}

func (r *Registry) warn(msg string) {
	if r.Warn != nil {
		r.Warn(msg)
	}
}

// setAside copies a corrupt state.json to state.json.corrupted, as the Python tool did; if
// that holds a different file already (an earlier corruption), to state.json.corrupted.N, the
// first N free, so that no bad file is ever lost. The same content is not copied twice. It
// returns where the copy is.
func (r *Registry) setAside(b []byte) (string, error) {
	base := r.Dir.StateCorrupted()
	for n := 0; n < 1000; n++ {
		path := base
		if n > 0 {
			path = base + "." + strconv.Itoa(n)
		}
		old, err := statedir.ReadFile(path, fsx.MaxStateFile)
		switch {
		case err == nil && bytes.Equal(old, b):
			return path, nil
		case errors.Is(err, fs.ErrNotExist):
			return path, fsx.WriteFileAtomic(path, b, 0o600)
		}
	}
	return "", errors.New("a thousand corrupted copies are there already")
}

// Update changes the state under state.lock: fn gets the current state (empty when the file is
// missing, or corrupt: then set aside first) and changes it in place; the result is checked
// against the embedded swarm-state schema (Check) and written atomically. fn's error, or
// Check's, is returned and nothing is written: the file stays as it was. ErrUnchanged writes
// nothing.
func (r *Registry) Update(ctx context.Context, fn func(s *State) error) error {
	if err := r.Ensure(); err != nil {
		return err
	}
	return fsx.Update(ctx, r.Dir.State(), r.Dir.StateLock(), func(old []byte) ([]byte, error) {
		s := &State{}
		reset := false
		if old != nil {
			var err error
			s, err = r.decode(old)
			if errors.Is(err, ErrCorrupt) {
				s, err = r.reset(old, err)
				reset = true
			}
			if err != nil {
				return nil, err
			}
		}
		if err := fn(s); err != nil && !(reset && errors.Is(err, ErrUnchanged)) {
			// (A reset state is written even when fn changes nothing: the corrupt file is
			// set aside once.)
			return nil, err
		}
		doc := Encode(s)
		if err := Check(s, doc); err != nil {
			return nil, fmt.Errorf("not writing %s: %w", r.Dir.State(), err)
		}
		return doc, nil
	})
}

// StateKind is state.json's schema kind (state/schemas/swarm-state.schema.json).
const StateKind = "swarm-state"

// Check validates doc, s as Encode wrote it, against the embedded swarm-state schema: nil, or
// a *schema.InvalidError (errors.Is schema.ErrInvalid). The entries s keeps
// as they were read because they are not workers (State.Bad) are not this writer's to judge:
// their problems alone do not refuse the write (the Python swarm, and this package, promise to
// keep them), and they cost a check by gojsonschema instead of the fast path.
func Check(s *State, doc []byte) error {
	sc, err := schema.Embedded(StateKind)
	if err != nil {
		return err
	}
	err = sc.Check(doc)
	var ie *schema.InvalidError
	if err == nil || !errors.As(err, &ie) || ie.Err != nil {
		return err
	}
	var kept []string
	for i, e := range s.entries {
		if _, ok := e.(badEntry); ok {
			kept = append(kept, "/workers/"+strconv.Itoa(i))
		}
	}
	for _, p := range ie.Problems {
		if !under(p.Pointer, kept) {
			return err
		}
	}
	return nil
}

// under reports whether the JSON pointer p is one of prefixes or inside one.
func under(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// ErrUnchanged, returned by Update's fn, leaves the file as it is.
var ErrUnchanged = fsx.ErrUnchanged
