package schema

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentfleet/fleet/state/schemas"
)

// Schema-on-write: every writer of a state file checks the bytes it is about to write against
// the file's embedded schema (Embedded), and writes nothing that Check refuses.

// embedded holds, for each kind of the embedded schemas, the function that compiles it on first
// use and returns that one compilation ever after: a writer pays for the compilation once per
// process, not once per write. The map is built once and never changed.
var embedded = func() map[string]func() (*Schema, error) {
	m := map[string]func() (*Schema, error){}
	for _, kind := range schemas.Kinds() {
		m[kind] = sync.OnceValues(func() (*Schema, error) {
			b, err := schemas.Read(kind)
			if err != nil {
				return nil, err
			}
			return Compile(kind, "embedded:"+schemas.FileName(kind), b)
		})
	}
	return m
}()

// Embedded is the embedded schema of kind (state/schemas), compiled on its first use and
// shared, safe for concurrent use.
func Embedded(kind string) (*Schema, error) {
	compile, ok := embedded[kind]
	if !ok {
		return nil, fmt.Errorf("no embedded schema for kind %q", kind)
	}
	return compile()
}

// ErrInvalid marks a document that does not satisfy its schema (Check's InvalidError).
var ErrInvalid = errors.New("does not satisfy its schema")

// InvalidError is a document Check refused: not JSON (Err wraps ErrNotJSON, or another of
// Validate's errors), or with Problems.
type InvalidError struct {
	// Kind is the schema's kind.
	Kind string
	// Problems are what the schema found, sorted; none when Err says why instead.
	Problems []Problem
	// Err is why the document could not be checked at all, or nil.
	Err error
}

// maxListed is how many problems an InvalidError's message lists; the rest are counted.
const maxListed = 5

func (e *InvalidError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s %v: %v", e.Kind, ErrInvalid, e.Err)
	}
	parts := make([]string, 0, maxListed+1)
	for i, p := range e.Problems {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Problems)-maxListed))
			break
		}
		parts = append(parts, p.String())
	}
	return fmt.Sprintf("%s %v: %s", e.Kind, ErrInvalid, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns Err.
func (e *InvalidError) Unwrap() error { return e.Err }

// Check validates doc: nil when it satisfies the schema, else an *InvalidError (errors.Is
// ErrInvalid) saying why. A valid document costs what Validate's fast path costs.
func (s *Schema) Check(doc []byte) error {
	problems, err := s.Validate(doc)
	switch {
	case err != nil:
		return &InvalidError{Kind: s.Kind, Err: err}
	case len(problems) > 0:
		return &InvalidError{Kind: s.Kind, Problems: problems}
	}
	return nil
}
