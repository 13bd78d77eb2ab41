package statedir

import (
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDirPaths(t *testing.T) {
	d := Dir{Root: "state"}
	tests := []struct{ got, want string }{
		{d.Run("bd-1"), "state/runs/bd-1.json"},
		{d.Result("bd-1"), "state/results/bd-1.json"},
		{d.Verify("bd-1"), "state/results/bd-1-verify.json"},
		{d.AttemptDir("bd-1"), "state/attempts/bd-1"},
		{d.AttemptRun("bd-1", 2), "state/attempts/bd-1/run-2.json"},
		{d.AttemptResult("bd-1", 2), "state/attempts/bd-1/result-2.json"},
		{d.AttemptOutput("bd-1", 2), "state/attempts/bd-1/output-2.log"},
		{d.Log("bd-1"), "state/logs/bd-1.log"},
		{d.Prompt("bd-1"), "state/prompts/bd-1.txt"},
		{d.BeadLock("bd-1"), "state/locks/bd-1.lock"},
		{d.RunLock("bd-1"), "state/locks/runs/bd-1.lock"},
		{d.ResultLock("bd-1"), "state/locks/results/bd-1.lock"},
		{d.Supervisor("bd-1"), "state/supervisors/bd-1.json"},
		{d.Handoffs(), "state/handoff"},
		{d.Reserve("bd-1"), "state/reserves/bd-1"},
		{d.Socket("bd-1"), "state/sockets/bd-1.sock"},
		{d.Schema("run"), "state/schemas/run.schema.json"},
		{d.TemplateScores(), "state/template-scores.json"},
		{d.Watch(), "state/watch"},
		{d.LegacySpec("bd-1"), "state/supervisors/bd-1.spec.json"},
		{d.LegacyReserve("bd-1"), "state/supervisors/bd-1.json.reserve"},
		{LegacyRecordLock(d.Run("bd-1")), "state/runs/bd-1.json.lock"},
		{Dir{}.Run("x"), "runs/x.json"},
		{filepath.Join(d.Runs(), RecordFile("bd-1")), d.Run("bd-1")},
		{filepath.Join(d.Results(), RecordFile("bd-1")), d.Result("bd-1")},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("path %d = %q, want %q", i, tt.got, tt.want)
		}
	}
}

// perBead are every path Dir names for one bead.
func perBead(d Dir, bead string) map[string]string {
	return map[string]string{
		"Run": d.Run(bead), "Result": d.Result(bead), "Verify": d.Verify(bead),
		"AttemptDir": d.AttemptDir(bead), "AttemptRun": d.AttemptRun(bead, 1),
		"AttemptResult": d.AttemptResult(bead, 1), "AttemptOutput": d.AttemptOutput(bead, 1),
		"Log": d.Log(bead), "Prompt": d.Prompt(bead), "BeadLock": d.BeadLock(bead),
		"RunLock": d.RunLock(bead), "ResultLock": d.ResultLock(bead),
		"Supervisor": d.Supervisor(bead), "Reserve": d.Reserve(bead),
		"Socket": d.Socket(bead),
	}
}

// TestNoBeadCollides checks the layout's rule: for valid bead ids, no path of one bead is a path
// of another bead, or of another kind of file, or a directory of the layout.
func TestNoBeadCollides(t *testing.T) {
	d := Dir{Root: "s"}
	beads := []string{"y", "y.spec", "y.json", "y.json.reserve", "y.sock", "y.lock.x", "y.txt", "y.log",
		"runs", "results", "locks", "specs", "spec", "json", "run-1", "result-1", "output-1", "y-verify.x",
		strings.Repeat("l", 100), strings.Repeat("l", 100) + "x", strings.Repeat("l", 40) + "x"}
	rng := rand.New(rand.NewSource(1))
	const alphabet = "ab.-_1"
	for len(beads) < 20000 {
		b := make([]byte, 1+rng.Intn(10))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		beads = append(beads, string(b))
	}
	fixed := map[string]string{}
	for _, p := range []string{d.Runs(), d.Results(), d.Attempts(), d.Logs(), d.Prompts(), d.Locks(),
		d.Supervisors(), d.Handoffs(), d.Reserves(), d.Sockets(), d.Schemas(), d.Watch(), d.TemplateScores(),
		filepath.Dir(d.RunLock("x")), filepath.Dir(d.ResultLock("x"))} {
		fixed[p] = "layout"
	}
	seen := map[string]string{}
	valid, tried := 0, map[string]bool{}
	for _, bead := range beads {
		if CheckName(KindBead, bead) != nil || tried[bead] {
			continue
		}
		tried[bead] = true
		valid++
		for what, p := range perBead(d, bead) {
			who := what + "(" + bead + ")"
			if other, ok := seen[p]; ok {
				t.Fatalf("%s and %s are both %s", other, who, p)
			}
			if _, ok := fixed[p]; ok {
				t.Fatalf("%s is the layout's own %s", who, p)
			}
			seen[p] = who
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d valid beads tried", valid)
	}
	// A file of the layout must not sit where another bead's directory is (attempts/<bead>/...).
	for p, who := range seen {
		if parent := filepath.Dir(p); seen[parent] != "" && !strings.HasPrefix(seen[parent], "AttemptDir(") {
			t.Errorf("%s lies inside %s", who, seen[parent])
		}
	}
}

func TestSocketNamesStayShort(t *testing.T) {
	d := Dir{Root: "/s"}
	long := strings.Repeat("b", MaxName)
	if got := filepath.Base(d.Socket(long)); len(got) > 70 || !strings.Contains(got, "~") {
		t.Errorf("Socket(128-byte bead) = %q, want a shortened name with '~'", got)
	}
	if d.Socket(long) == d.Socket(long[:MaxName-1]+"c") {
		t.Error("two long beads with one prefix share a socket")
	}
	if got := d.Socket(strings.Repeat("b", 64)); got != "/s/sockets/"+strings.Repeat("b", 64)+".sock" {
		t.Errorf("Socket(64-byte bead) = %q, want it unshortened", got)
	}
}

func TestRecordBeadAndVerifyBead(t *testing.T) {
	tests := []struct {
		file string
		bead string
		ok   bool
	}{
		{"bd-1.json", "bd-1", true},
		{"bd-1.2.json", "bd-1.2", true},
		{"bd-1.json.lock", "", false}, // the sidecar locks of old writers stay in runs/
		{"bd-1.json.bak", "", false},
		{".bd-1.json.tmp-123", "", false},
		{".hidden.json", "", false},
		{".json", "", false},
		{"notes.txt", "", false},
	}
	for _, tt := range tests {
		bead, ok := RecordBead(tt.file)
		if ok != tt.ok || (ok && bead != tt.bead) {
			t.Errorf("RecordBead(%q) = %q, %v; want %q, %v", tt.file, bead, ok, tt.bead, tt.ok)
		}
	}
	if bead, ok := VerifyBead("bd-1-verify"); !ok || bead != "bd-1" {
		t.Errorf("VerifyBead(bd-1-verify) = %q, %v", bead, ok)
	}
	for _, n := range []string{"-verify", "bd-1", "verify"} {
		if _, ok := VerifyBead(n); ok {
			t.Errorf("VerifyBead(%q) = ok, want not a verification", n)
		}
	}
	for base, want := range map[string]string{"runs": "run", "results": "result", "state": "", "locks": ""} {
		if got := DirKind(base); got != want {
			t.Errorf("DirKind(%q) = %q, want %q", base, got, want)
		}
	}
}

func TestBeads(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	for _, n := range []string{"bd-2.json", "bd-1.json", "y.spec.json", "bd-1.spec.json.reserve", ".bd-3.json.tmp-1",
		"a b.json", "bd-4.json.reserve", "-x.json"} {
		if err := MkdirFor(filepath.Join(d.Supervisors(), n)); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d.Supervisors(), n), nil, 0o600)
	}
	got, err := Beads(d.Supervisors(), ".json")
	if want := []string{"bd-1", "bd-2", "y.spec"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Beads(supervisors) = %q, %v; want %q", got, err, want)
	}
	if got, err := Beads(d.Sockets(), ".sock"); err != nil || got != nil {
		t.Errorf("Beads(missing directory) = %q, %v; want none", got, err)
	}
	if fi, err := os.Stat(d.Supervisors()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("MkdirFor made %v, %v; want 0700", fi.Mode(), err)
	}
}

func TestSwarm(t *testing.T) {
	s := Swarm{Root: "/h/.swarm"}
	tests := []struct{ got, want string }{
		{s.State(), "/h/.swarm/state.json"},
		{s.StateLock(), "/h/.swarm/state.lock"},
		{s.StateCorrupted(), "/h/.swarm/state.json.corrupted"},
		{s.StdoutLog("w1"), "/h/.swarm/logs/w1.stdout.log"},
		{s.StderrLog("w1"), "/h/.swarm/logs/w1.stderr.log"},
		{s.HeartbeatLock(), "/h/.swarm/heartbeat.lock"},
		{s.Heartbeat("w1"), "/h/.swarm/heartbeats/w1.json"},
		{s.RalphDir("r"), "/h/.swarm/ralph/r"},
		{s.RalphState("r"), "/h/.swarm/ralph/r/state.json"},
		{s.RalphStateLock("r"), "/h/.swarm/ralph/r/state.lock"},
		{s.RalphStateCorrupted("r"), "/h/.swarm/ralph/r/state.json.corrupted"},
		{s.RalphIterations("r"), "/h/.swarm/ralph/r/iterations.log"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("path %d = %q, want %q", i, tt.got, tt.want)
		}
	}
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tt := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{"SWARM_DIR": "/x", "HOME": "/h"}, "/x", true},
		{map[string]string{"SWARM_DIR": "", "HOME": "/h"}, ".", true}, // set but empty: the current directory
		{map[string]string{"HOME": "/h"}, "/h/.swarm", true},
		{map[string]string{}, "", false},
	} {
		got, err := SwarmFromEnv(env(tt.env))
		if (err == nil) != tt.ok || got.Root != tt.want {
			t.Errorf("SwarmFromEnv(%v) = %q, %v; want %q", tt.env, got.Root, err, tt.want)
		}
	}
}
