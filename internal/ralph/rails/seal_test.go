package rails

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentfleet/fleet/internal/statedir"
)

type testSeal struct {
	Loop    string `json:"loop"`
	Rails   *Rails `json:"rails"`
	CostUSD float64
}

// TestSealRoundTrip: a seal is indented JSON ending in a newline, mode 0600, and reads back as
// written; the rails inside keep a swarm loop's format (no timeouts written).
func TestSealRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rails.json")
	in := testSeal{Loop: "l1", Rails: &Rails{BudgetUSD: usd(1.5), MaxCallsPerHour: 3}, CostUSD: 0.25}
	if err := WriteSeal(path, in); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "{\n  \"loop\": \"l1\",\n  \"rails\": {\n    \"budget_usd\": 1.5,\n    \"max_calls_per_hour\": 3\n  },\n  \"CostUSD\": 0.25\n}\n"
	if string(b) != want {
		t.Errorf("the seal reads\n%s\nwant\n%s", b, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the seal's mode is %v, want 0600", fi.Mode().Perm())
	}
	var out testSeal
	found, err := ReadSeal(path, &out)
	if !found || err != nil || out.Loop != "l1" || !out.Rails.Equal(in.Rails) || out.CostUSD != 0.25 {
		t.Errorf("ReadSeal = %v, %v, %+v; want what was written", found, err, out)
	}
}

// TestSealHostile: no seal is not an error; one that is no JSON is found and refused; a link
// planted where the seal goes is neither followed when it is written (its target is left as
// it was) nor when it is read.
func TestSealHostile(t *testing.T) {
	dir := t.TempDir()
	var s testSeal
	if found, err := ReadSeal(filepath.Join(dir, "none.json"), &s); found || err != nil {
		t.Errorf("ReadSeal of no file = %v, %v; want not found, no error", found, err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	if found, err := ReadSeal(bad, &s); !found || err == nil {
		t.Errorf("ReadSeal of no JSON = %v, %v; want found, with an error", found, err)
	}

	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("the agent's\n"), 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if found, err := ReadSeal(link, &s); found || !errors.Is(err, statedir.ErrNotRegular) {
		t.Errorf("ReadSeal through a link = %v, %v; want refused (not a regular file)", found, err)
	}
	if err := WriteSeal(link, testSeal{Loop: "l1"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "the agent's\n" {
		t.Errorf("writing the seal wrote through the link: its target now reads %q", b)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the seal is not a file of its own after the write: %v, %v", fi, err)
	}
}

// TestInside: a path is inside a directory when it is the directory or under it, links
// resolved (a swarm directory reached through a link into the tree is inside it).
func TestInside(t *testing.T) {
	root := t.TempDir()
	tree := filepath.Join(root, "tree")
	os.MkdirAll(filepath.Join(tree, "sub", ".swarm"), 0o755)
	os.MkdirAll(filepath.Join(root, "elsewhere"), 0o755)
	os.Symlink(filepath.Join(tree, "sub", ".swarm"), filepath.Join(root, "swarm-link"))
	for _, c := range []struct {
		path string
		rel  string
		in   bool
	}{
		{tree, ".", true},
		{filepath.Join(tree, "sub", ".swarm"), "sub/.swarm", true},
		{filepath.Join(root, "swarm-link"), "sub/.swarm", true},
		{filepath.Join(root, "elsewhere"), "", false},
		{root, "", false},
		{filepath.Join(root, "tree-not"), "", false},
	} {
		rel, in := Inside(tree, c.path)
		if in != c.in || rel != c.rel {
			t.Errorf("Inside(%s, %s) = %q, %v; want %q, %v", tree, c.path, rel, in, c.rel, c.in)
		}
	}
}
