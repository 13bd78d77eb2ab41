package store

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestPlans: the plans with a task queue file; a link to one, and the other files of the
// directory, are left out.
func TestPlans(t *testing.T) {
	d := In(t.TempDir())
	if plans, err := d.Plans(); err != nil || plans != nil {
		t.Fatalf("Plans(no directory) = %q, %v; want none", plans, err)
	}
	if err := os.MkdirAll(d.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{d.TaskQueue("p1"), d.RetryQueue("p2"), d.Progress("p1"), d.TaskQueue("p.2")} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(other, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, d.TaskQueue("linked")); err != nil {
		t.Fatal(err)
	}
	if plans, err := d.Plans(); err != nil || !reflect.DeepEqual(plans, []string{"p.2", "p1"}) {
		t.Errorf("Plans = %q, %v; want [p.2 p1]", plans, err)
	}
}
