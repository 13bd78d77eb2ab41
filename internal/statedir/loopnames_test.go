package statedir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestLoopNames: the real directories under ralph/ with a loop's name; a link beside them, a
// file, a bad name are left out, and a ralph/ that is a link is not followed.
func TestLoopNames(t *testing.T) {
	s := Swarm{Root: t.TempDir()}
	if names, err := s.LoopNames(); err != nil || names != nil {
		t.Fatalf("LoopNames(no ralph/) = %q, %v; want none", names, err)
	}
	elsewhere := t.TempDir()
	for _, d := range []string{s.RalphDir("b"), s.RalphDir("a-1"), s.RalphDir(".hidden"), filepath.Join(elsewhere, "x")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(elsewhere, "x"), s.RalphDir("linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.RalphDir("file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if names, err := s.LoopNames(); err != nil || !reflect.DeepEqual(names, []string{"a-1", "b"}) {
		t.Errorf("LoopNames = %q, %v; want [a-1 b]", names, err)
	}
	linked := Swarm{Root: t.TempDir()}
	if err := os.Symlink(s.Ralph(), linked.Ralph()); err != nil {
		t.Fatal(err)
	}
	if names, err := linked.LoopNames(); err == nil || names != nil {
		t.Errorf("LoopNames(ralph/ a link) = %q, %v; want nothing and an error", names, err)
	}
}
