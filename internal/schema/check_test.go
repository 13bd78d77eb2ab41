package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/state/schemas"
)

func TestEmbedded(t *testing.T) {
	for _, kind := range schemas.Kinds() {
		a, err := Embedded(kind)
		if err != nil {
			t.Fatalf("Embedded(%q): %v", kind, err)
		}
		if b, _ := Embedded(kind); a != b || a.Kind != kind {
			t.Errorf("Embedded(%q) twice: %p then %p (kind %q), want one compilation", kind, a, b, a.Kind)
		}
	}
	if _, err := Embedded("no-such-kind"); err == nil {
		t.Error("Embedded(no-such-kind) = nil error")
	}
}

// The state files written with Check have a fast path: a valid write costs no gojsonschema.
func TestEmbeddedFastPath(t *testing.T) {
	for _, kind := range []string{"run", "result", "swarm-state", "ralph-state", "task-queue", "retry-queue"} {
		if s, _ := Embedded(kind); s.fast == nil {
			t.Errorf("Embedded(%q) has no fast path", kind)
		}
	}
}

func TestCheck(t *testing.T) {
	s, err := Embedded("swarm-state")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  string
		want string // "" for valid
	}{
		{`{"workers": []}`, ""},
		{`{"workers": [{"name": "a", "status": "running", "cmd": [], "started": "s", "cwd": "/", "tmux": null, "worktree": null}]}`, ""},
		{`{"workers": [{"name": "a", "status": "zombie", "cmd": [], "started": "s", "cwd": "/"}]}`,
			`swarm-state does not satisfy its schema: /workers/0/status: expected one of "running", "stopped", got "zombie"`},
		{`{"workers": [{"name": "a", "status": "running", "cmd": [], "started": "s", "cwd": "/", "tmux": {"window": "a"}}]}`,
			`swarm-state does not satisfy its schema: /workers/0/tmux/session: missing required field`},
		{`{}`, `swarm-state does not satisfy its schema: /workers: missing required field`},
		{`{"workers": [1, 2, 3, 4, 5, 6, 7]}`, `; and 2 more`},
		{`{"workers": [`, `swarm-state does not satisfy its schema: not valid JSON`},
	} {
		err := s.Check([]byte(c.doc))
		if c.want == "" {
			if err != nil {
				t.Errorf("Check(%s) = %v, want nil", c.doc, err)
			}
			continue
		}
		var ie *InvalidError
		if err == nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%s) = %v, want an InvalidError holding %q", c.doc, err, c.want)
		}
	}
	err = s.Check([]byte(`{"workers": [`))
	if !errors.Is(err, ErrNotJSON) {
		t.Errorf("Check(not JSON) = %v, want ErrNotJSON too", err)
	}
}

// Check's verdict on the embedded schemas' own examples (state/schemas/testdata): the fast path
// and gojsonschema together say what gojsonschema alone says there.
func TestCheckExamples(t *testing.T) {
	for _, kind := range schemas.Kinds() {
		s, err := Embedded(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			dir   string
			valid bool
		}{{"valid", true}, {"invalid", false}} {
			files, _ := filepath.Glob(filepath.Join("../../state/schemas/testdata", kind, c.dir, "*.json"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Check(b); (err == nil) != c.valid {
					t.Errorf("Check(%s) = %v, want valid %v", f, err, c.valid)
				}
			}
		}
	}
}
