package record

import (
	"bytes"
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

// Marshal renders a record as dispatch.sh wrote it (jq -c, then printf '%s\n'): one compact
// line and a newline, the fields in the struct's order (the original's), strings escaped as jq
// escapes them, so that `grep -l '"status":"running"' state/runs/*.json` and other line-based
// consumers keep matching.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // jq writes <, > and & as they are
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return jqEscapes(buf.Bytes()), nil
}

// jqEscapes turns encoding/json's string escapes into jq's where the two differ: jq writes
// U+2028, U+2029 and the replacement character for invalid UTF-8 as they are (Go escapes them)
// and escapes DEL (Go does not). The escapes are read left to right, so a backslash the text
// itself holds ("\\u2028") is never taken for one.
func jqEscapes(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u20`)) && !bytes.Contains(b, []byte(`\ufffd`)) && bytes.IndexByte(b, 0x7f) < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == 0x7f:
			out = append(out, `\u007f`...)
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u' && i+6 <= len(b):
			switch string(b[i+2 : i+6]) {
			case "2028":
				out = append(out, "\u2028"...)
			case "2029":
				out = append(out, "\u2029"...)
			case "fffd":
				out = append(out, "\ufffd"...)
			default:
				out = append(out, b[i:i+6]...)
			}
			i += 5
		case c == '\\' && i+1 < len(b):
			out = append(out, c, b[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	return out
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
