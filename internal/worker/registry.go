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
// an empty state; a corrupt one is copied aside (see setAside), reported, and read as empty.
func (r *Registry) Load() (*State, error) {
	b, err := fsx.ReadFileLimit(r.Dir.State(), fsx.MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.Dir.State(), err)
	}
	return r.decode(b)
}

func (r *Registry) decode(b []byte) (*State, error) {
	s, err := Decode(b)
	if errors.Is(err, ErrCorrupt) {
		saved, serr := r.setAside(b)
		if serr != nil {
			// Without a copy, a fresh state would lose the file: refuse instead.
			return nil, fmt.Errorf("%s is corrupt (%v) and could not be copied aside: %w", r.Dir.State(), err, serr)
		}
		// The Python tool's words first: scripts may look for them.
		r.warn("corrupt state file, resetting")
		r.warn(fmt.Sprintf("%v; the file is kept as %s", err, saved))
		return &State{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range s.Bad() {
		r.warn(fmt.Sprintf("%s: %v: kept as it is, not read as a worker", r.Dir.State(), e))
	}
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
		old, err := fsx.ReadFileLimit(path, fsx.MaxStateFile)
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
		if old != nil {
			var err error
			if s, err = r.decode(old); err != nil {
				return nil, err
			}
		}
		if err := fn(s); err != nil {
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
