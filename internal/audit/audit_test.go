package audit

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestKindFromPath(t *testing.T) {
	tests := []struct{ path, want string }{
		{"state/runs", "run"},
		{"state/runs/", "run"},
		{"state/runs/bd-1.json", "run"},
		{"/ws/state/results/bd-1.json", "result"},
		{"results", "result"},
		{"state/swarm.json", ""},
		{"runs-old/bd-1.json", ""},
	}
	for _, tt := range tests {
		if got := KindFromPath(tt.path); got != tt.want {
			t.Errorf("KindFromPath(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestKindLabel(t *testing.T) {
	tests := map[string]string{"run": "Run records", "result": "Result records", "swarm-state": "Swarm state files",
		"task-queue": "Task queue files", "manifest": "Manifests", "execution": "Execution states"}
	for kind, want := range tests {
		if got := KindLabel(kind); got != want {
			t.Errorf("KindLabel(%q) = %q, want %q", kind, got, want)
		}
	}
	for _, k := range Kinds {
		if !KnownKind(k) {
			t.Errorf("KnownKind(%q) = false", k)
		}
	}
	if KnownKind("runs") {
		t.Error(`KnownKind("runs") = true`)
	}
}

func TestWriteBackupNeverOverwrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bd-1.json")
	var got []string
	for _, content := range []string{"first", "second", "third"} {
		name, err := writeBackup(path, []byte(content))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, filepath.Base(name))
		if b, _ := os.ReadFile(name); string(b) != content {
			t.Errorf("backup %s holds %q, want %q", name, b, content)
		}
	}
	if want := []string{"bd-1.json.bak", "bd-1.json.bak.1", "bd-1.json.bak.2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("backups = %v, want %v", got, want)
	}
	if b, _ := os.ReadFile(path + ".bak"); string(b) != "first" {
		t.Errorf("the first backup now holds %q: it was overwritten", b)
	}
}

func TestTally(t *testing.T) {
	tally := Tally{}
	for _, r := range []Report{{Kind: "result", Valid: true}, {Kind: "run", Valid: false}, {Kind: "run", Valid: true}, {Kind: "manifest"}} {
		tally.Add(r)
	}
	if got, want := tally.SortedKinds(), []string{"run", "result", "manifest"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SortedKinds = %v, want %v (the order of Kinds)", got, want)
	}
	if tally.Failed() != 2 || *tally["run"] != (Count{Passed: 1, Failed: 1}) {
		t.Errorf("tally = %+v, failed %d", tally, tally.Failed())
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		name, kind string
		want       bool
	}{
		{"bd-1.json", "run", true},
		{".bd-1.json.tmp-123", "run", false},
		{"bd-1.json.bak", "run", false},
		{"work.yaml", "manifest", true},
		{"work.yaml", "run", false},
		{"notes.txt", "run", false},
	}
	for _, tt := range tests {
		if got := matches(tt.name, tt.kind); got != tt.want {
			t.Errorf("matches(%q, %q) = %v, want %v", tt.name, tt.kind, got, tt.want)
		}
	}
}
