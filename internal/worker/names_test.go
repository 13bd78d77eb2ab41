package worker

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentfleet/fleet/internal/statedir"
)

// TestNames: the workers' names, in state.json's order, less those no worker may have; a
// state.json that is a link is not followed.
func TestNames(t *testing.T) {
	dir := statedir.Swarm{Root: t.TempDir()}
	if names, err := Names(dir); err != nil || names != nil {
		t.Fatalf("Names(no state.json) = %q, %v; want none", names, err)
	}
	w := func(name string) string {
		return `{"name":"` + name + `","status":"running","cmd":["x"],"started":"2026-01-01T00:00:00","cwd":"/"}`
	}
	doc := `{"workers":[` + w("b") + `,` + w("a-1") + `,` + w("../x") + `]}`
	if err := os.WriteFile(dir.State(), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if names, err := Names(dir); err != nil || !reflect.DeepEqual(names, []string{"b", "a-1"}) {
		t.Errorf("Names = %q, %v; want [b a-1]", names, err)
	}
	linked := statedir.Swarm{Root: t.TempDir()}
	if err := os.Symlink(dir.State(), filepath.Join(linked.Root, "state.json")); err != nil {
		t.Fatal(err)
	}
	if names, err := Names(linked); !errors.Is(err, statedir.ErrNotRegular) || names != nil {
		t.Errorf("Names(state.json a link) = %q, %v; want nothing and ErrNotRegular", names, err)
	}
}
