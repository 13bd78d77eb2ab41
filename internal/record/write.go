package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// ErrInvalid marks a record that does not satisfy its schema; such a record is never written.
var ErrInvalid = errors.New("record does not satisfy its schema")

// Store is a state directory holding runs/<bead>.json and results/<bead>.json, with their
// locks under locks/ (statedir.Dir names every path).
type Store struct {
	// Dir is the state directory (the tools' --state-dir, by default ./state).
	Dir string
}

// Paths is the layout of the store's state directory.
func (s Store) Paths() statedir.Dir { return statedir.Dir{Root: s.Dir} }

// RunPath is the path of bead's run record.
func (s Store) RunPath(bead string) string { return s.Paths().Run(bead) }

// ResultPath is the path of bead's result record.
func (s Store) ResultPath(bead string) string { return s.Paths().Result(bead) }

// AttemptsDir is where a bead's earlier attempts are kept (dispatch copies each attempt's records
// there before the next replaces them; analyze-runs --attempts reads them): attempts/<bead>.
// With bead "", the directory of all beads' attempts.
func (s Store) AttemptsDir(bead string) string {
	if bead == "" {
		return s.Paths().Attempts()
	}
	return s.Paths().AttemptDir(bead)
}

// WriteRun checks r against the embedded run schema and writes it atomically under its lock.
func (s Store) WriteRun(ctx context.Context, r *Run) error {
	if err := CheckBead(r.Bead); err != nil {
		return err
	}
	return write(ctx, KindRun, s.RunPath(r.Bead), s.Paths().RunLock(r.Bead), r)
}

// WriteResult checks r against the embedded result schema and writes it atomically under its lock.
func (s Store) WriteResult(ctx context.Context, r *Result) error {
	if err := CheckBead(r.Bead); err != nil {
		return err
	}
	return write(ctx, KindResult, s.ResultPath(r.Bead), s.Paths().ResultLock(r.Bead), r)
}

// Marshal renders a record as the tools write it: two-space indent, a final newline (as jq does).
func Marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// embedded holds the compiled embedded schemas, compiled on first use and shared.
var embedded = struct {
	once    sync.Once
	schemas map[Kind]*schema.Schema
	err     error
}{}

// Check validates a marshalled record against the embedded schema of kind, returning an error
// wrapping ErrInvalid that lists the problems.
func Check(kind Kind, doc []byte) error {
	embedded.once.Do(func() {
		embedded.schemas = map[Kind]*schema.Schema{}
		for _, k := range []Kind{KindRun, KindResult} {
			s, err := schema.Load(string(k), "")
			if err != nil {
				embedded.err = err
				return
			}
			embedded.schemas[k] = s
		}
	})
	if embedded.err != nil {
		return embedded.err
	}
	problems, err := embedded.schemas[kind].Validate(doc)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(problems) > 0 {
		parts := make([]string, len(problems))
		for i, p := range problems {
			parts[i] = p.String()
		}
		return fmt.Errorf("%s %w: %s", kind, ErrInvalid, strings.Join(parts, "; "))
	}
	return nil
}

// write checks a record and writes it atomically under lockPath. The locks live under locks/,
// not beside the records: runs/ and results/ hold records only.
func write(ctx context.Context, kind Kind, path, lockPath string, v any) error {
	doc, err := Marshal(v)
	if err != nil {
		return err
	}
	if err := Check(kind, doc); err != nil {
		return fmt.Errorf("not writing %s: %w", path, err)
	}
	// State directories hold prompts: keep them private.
	if err := statedir.MkdirFor(path); err != nil {
		return err
	}
	if err := statedir.MkdirFor(lockPath); err != nil {
		return err
	}
	return fsx.WriteLockedBy(ctx, lockPath, path, doc, 0o600)
}
