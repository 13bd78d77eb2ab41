package mergeverb

import (
	"reflect"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/mergeback"
	"github.com/agentfleet/fleet/internal/statedir"
)

// TestNamesApartFromTheRuns: the scratch worktree and the resolving agent's bead can be no
// task's worktree or bead, which follow the name rule (a letter or digit first; no '.' in a
// task id or execution id).
func TestNamesApartFromTheRuns(t *testing.T) {
	if err := statedir.CheckName(statedir.KindBead, ScratchName("2026-12-07-x-ab12")); err == nil {
		t.Errorf("ScratchName(%q) = %q, a name a task's worktree could have", "2026-12-07-x-ab12", ScratchName("2026-12-07-x-ab12"))
	}
	// An execution's beads are <execution>-<task>, neither of which may hold a '.'.
	bead := mergeback.Bead("2026-12-07-x-ab12", "t1")
	if statedir.CheckName(statedir.KindBead, bead) != nil || !strings.Contains(bead, ".") {
		t.Errorf("Bead = %q: not a bead, or one an execution's task could have", bead)
	}
}

func TestSplitTest(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"go test ./...", []string{"go", "test", "./..."}, true},
		{`sh -c 'make check | tee log'`, []string{"sh", "-c", "make check | tee log"}, true},
		{"", nil, false},
		{`sh "unclosed`, nil, false},
	} {
		got, err := SplitTest(c.in)
		if (err == nil) != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("SplitTest(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
