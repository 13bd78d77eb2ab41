package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
)

// seedState is a state.json as the Python swarm writes it: every field, a Python-written
// metadata, non-ASCII escaped, no final newline.
const seedState = `{
  "workers": [
    {
      "name": "w1",
      "status": "running",
      "cmd": [
        "claude",
        "caf\u00e9 \ud83d\ude00 \"q\" \\ /<>&\t\u007f"
      ],
      "started": "2026-11-23T15:09:07.844392",
      "cwd": "/tmp/repo",
      "env": {
        "B": "2",
        "A": "1"
      },
      "tags": [
        "x"
      ],
      "tmux": {
        "session": "swarm-f0dccaff",
        "window": "w1",
        "socket": null
      },
      "worktree": {
        "path": "/tmp/wt/w1",
        "branch": "w1",
        "base_repo": "/tmp/repo"
      },
      "pid": null,
      "metadata": {
        "ralph": true,
        "ralph_iteration": 3,
        "f": 1.5,
        "big": 1e+300,
        "l": [],
        "o": {}
      }
    },
    {
      "name": "p1",
      "status": "stopped",
      "cmd": [
        "sleep",
        "1"
      ],
      "started": "2026-11-23T15:09:07",
      "cwd": "rel",
      "env": {},
      "tags": [],
      "tmux": null,
      "worktree": null,
      "pid": 4242,
      "metadata": {}
    }
  ]
}`

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name, in, want string // want "" means the same as in
	}{
		{"seed", seedState, ""},
		{"empty list", "{\n  \"workers\": []\n}", ""},
		{"missing file's first write", `{}`, "{\n  \"workers\": []\n}"},
		{"compact input", `{"workers":[{"name":"a","status":"running","cmd":["x"],"started":"s","cwd":"/"}]}`,
			"{\n  \"workers\": [\n    {\n      \"name\": \"a\",\n      \"status\": \"running\",\n      \"cmd\": [\n        \"x\"\n      ],\n      \"started\": \"s\",\n      \"cwd\": \"/\",\n      \"env\": {},\n      \"tags\": [],\n      \"tmux\": null,\n      \"worktree\": null,\n      \"pid\": null,\n      \"metadata\": {}\n    }\n  ]\n}"},
		{"unknown keys kept everywhere",
			`{"version": 2, "workers": [{"name":"a","status":"running","cmd":[],"started":"s","cwd":"/","x-top":{"k":[1,2.50]},
			  "tmux":{"session":"s","window":"a","socket":null,"pane":"%1"},"worktree":{"path":"p","branch":"b","base_repo":"r","dirty":false}}], "z": "\u00e9"}`,
			"{\n  \"workers\": [\n    {\n      \"name\": \"a\",\n      \"status\": \"running\",\n      \"cmd\": [],\n      \"started\": \"s\",\n      \"cwd\": \"/\",\n      \"env\": {},\n      \"tags\": [],\n      \"tmux\": {\n        \"session\": \"s\",\n        \"window\": \"a\",\n        \"socket\": null,\n        \"pane\": \"%1\"\n      },\n      \"worktree\": {\n        \"path\": \"p\",\n        \"branch\": \"b\",\n        \"base_repo\": \"r\",\n        \"dirty\": false\n      },\n      \"pid\": null,\n      \"metadata\": {},\n      \"x-top\": {\n        \"k\": [\n          1,\n          2.5\n        ]\n      }\n    }\n  ],\n  \"version\": 2,\n  \"z\": \"\\u00e9\"\n}"},
		{"entry that is no worker kept as it is",
			`{"workers": [{"name": "a"}, 7]}`,
			"{\n  \"workers\": [\n    {\n      \"name\": \"a\"\n    },\n    7\n  ]\n}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode([]byte(tt.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := string(Encode(s)); got != want {
				t.Errorf("Encode(Decode(%q)) =\n%s\nwant\n%s", tt.in, got, want)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	s, err := Decode([]byte(seedState))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Get("w1")
	if w == nil || w.Tmux == nil || w.Tmux.Session != "swarm-f0dccaff" || w.Worktree.BaseRepo != "/tmp/repo" ||
		len(w.Env) != 2 || w.Env[0] != (EnvVar{"B", "2"}) || w.Cmd[1] != "café 😀 \"q\" \\ /<>&\t\x7f" {
		t.Errorf("Decode(seed) w1 = %+v", w)
	}
	if p := s.Get("p1"); p == nil || p.PID == nil || *p.PID != 4242 || p.Tmux != nil {
		t.Errorf("Decode(seed) p1 = %+v", p)
	}
	bad, _ := Decode([]byte(`{"workers": [{"name": "a"}, {"name":"b","status":"running","cmd":["x"],"started":"s","cwd":"/"}]}`))
	if len(bad.Workers) != 1 || len(bad.Bad()) != 1 {
		t.Errorf("Decode(one bad entry): %d workers, %v", len(bad.Workers), bad.Bad())
	}
}

func TestDecodeCorrupt(t *testing.T) {
	for _, in := range []string{"", "{", `{"workers": [}`, "[]", `{"workers": {}}`, "\xff\xfe{}", `{"workers": []} x`, "null"} {
		if _, err := Decode([]byte(in)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Decode(%q) = %v, want ErrCorrupt", in, err)
		}
	}
	for _, in := range []string{"\xef\xbb\xbf{\"workers\": []}", `{"workers": null}`, " {} "} {
		if _, err := Decode([]byte(in)); err != nil {
			t.Errorf("Decode(%q) = %v, want nil", in, err)
		}
	}
}

func TestStateEdits(t *testing.T) {
	s, _ := Decode([]byte(`{"workers": [{"name": "bad"}, {"name":"a","status":"running","cmd":[],"started":"s","cwd":"/"}]}`))
	s.Add(&Worker{Name: "b", Status: StatusRunning, Started: "s", Cwd: "/", Metadata: Object{}.SetValue(MetaSupervised, true)})
	if !s.Remove("a") || s.Remove("a") {
		t.Errorf("Remove")
	}
	out := string(Encode(s))
	if !strings.Contains(out, `"name": "bad"`) || strings.Contains(out, `"name": "a"`) || !strings.Contains(out, "\"supervised\": true") {
		t.Errorf("Encode after edits:\n%s", out)
	}
	s2, _ := Decode([]byte(out))
	if !s2.Get("b").Supervised() {
		t.Errorf("Supervised() lost")
	}
}

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	var warnings []string
	r := &Registry{Dir: statedir.Swarm{Root: dir}, Warn: func(m string) { warnings = append(warnings, m) }}
	s, err := r.Load()
	if err != nil || len(s.Workers) != 0 {
		t.Fatalf("Load of nothing = %v, %v", s, err)
	}
	add := func(name string) error {
		return r.Update(context.Background(), func(s *State) error {
			if s.Get(name) != nil {
				return fmt.Errorf("worker '%s' already exists", name)
			}
			s.Add(&Worker{Name: name, Status: StatusRunning, Cmd: []string{"x"}, Started: "s", Cwd: "/"})
			return nil
		})
	}
	// Concurrent writers never lose one another's workers, and never both add one name.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- add(fmt.Sprintf("w%d", i%20))
		}(i)
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
		}
	}
	s, _ = r.Load()
	if len(s.Workers) != 20 || failed != 20 {
		t.Errorf("40 adds of 20 names: %d workers, %d refused; want 20, 20", len(s.Workers), failed)
	}
	if fi, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !fi.IsDir() {
		t.Errorf("logs/ not created: %v", err)
	}
	b, _ := os.ReadFile(r.Dir.State())
	if bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("state.json ends in a newline")
	}

	// Corrupt: read as empty with the Python tool's warning, copied aside; the next update
	// writes a fresh state; a second, different corruption does not overwrite the first copy.
	for i, bad := range []string{"{corrupt", "{corrupt again"} {
		warnings = nil
		os.WriteFile(r.Dir.State(), []byte(bad), 0o600)
		s, err := r.Load()
		if err != nil || len(s.Workers) != 0 || len(warnings) != 1 || !strings.HasPrefix(warnings[0], "corrupt state file, resetting (") {
			t.Fatalf("Load(corrupt) = %v, %v, warnings %q", s, err, warnings)
		}
		// Set aside once, said once (issue 17: two warnings on every command until a write).
		warnings = nil
		if s, err := r.Load(); err != nil || len(s.Workers) != 0 || len(warnings) != 0 {
			t.Errorf("Load after the reset = %v, %v, warnings %q; want nothing to say", s, err, warnings)
		}
		saved := r.Dir.StateCorrupted()
		if i == 1 {
			saved += ".1"
		}
		if got, _ := os.ReadFile(saved); string(got) != bad {
			t.Errorf("%s = %q, want %q", saved, got, bad)
		}
		if err := add("fresh"); err != nil {
			t.Fatalf("Update over a corrupt file: %v", err)
		}
		if s, _ := r.Load(); len(s.Workers) != 1 {
			t.Errorf("after the update: %d workers, want 1", len(s.Workers))
		}
	}
	if _, err := os.Stat(r.Dir.StateCorrupted() + ".2"); err == nil {
		t.Errorf("a third copy for two corruptions")
	}
}

func TestTimestamp(t *testing.T) {
	tm := time.Date(2026, 11, 23, 15, 9, 7, 844392123, time.Local)
	if got := Timestamp(tm); got != "2026-11-23T15:09:07.844392" {
		t.Errorf("Timestamp = %q", got)
	}
	if got := Timestamp(tm.Truncate(time.Second)); got != "2026-11-23T15:09:07" {
		t.Errorf("Timestamp(whole second) = %q", got)
	}
	for _, s := range []string{"2026-11-23T15:09:07.844392", "2026-11-23T15:09:07", "2026-11-23T15:09:07+00:00", "2026-11-23T15:09:07Z"} {
		if _, ok := ParseTimestamp(s); !ok {
			t.Errorf("ParseTimestamp(%q) failed", s)
		}
	}
}

var durationCases = []string{"4h", "30m", "90s", "1h30m", "2h30m15s", "3600", "0", "00", "", " 5M ", "1H", "h", "5x",
	"1m30", "30s5", "-5s", "+5s", "1_0s", "1__0s", "5 s", "1h 30m", "0h", "1h-30m", "m5s", "1.5h", "10m0s", "s", "99999999999"}

func TestParseDuration(t *testing.T) {
	want := map[string]int64{"4h": 14400, "30m": 1800, "90s": 90, "1h30m": 5400, "2h30m15s": 9015, "3600": 3600,
		" 5M ": 300, "1H": 3600, "+5s": 5, "1_0s": 10, "5 s": 5, "1h 30m": 5400, "1h-30m": 1800, "10m0s": 600, "m5s": 5,
		"99999999999": 99999999999}
	for _, in := range durationCases {
		got, err := ParseDuration(in)
		w, ok := want[in]
		if ok != (err == nil) || got != w {
			t.Errorf("ParseDuration(%q) = %v, %v; want %ds", in, got, err, w)
		}
	}
	for secs, want := range map[float64]string{0: "0s", 59.9: "59s", 60: "1m 0s", 1800: "30m 0s", 3599: "59m 59s", 3600: "1h 0m", 5400: "1h 30m", 90061: "25h 1m"} {
		if got := FormatDuration(time.Duration(secs * float64(time.Second))); got != want {
			t.Errorf("FormatDuration(%vs) = %q, want %q", secs, got, want)
		}
	}
	now := time.Now()
	for d, want := range map[time.Duration]string{5 * time.Second: "5s", 59 * time.Minute: "59m", 3 * time.Hour: "3h", 50 * time.Hour: "2d"} {
		if got := Age(now.Add(-d), now); got != want {
			t.Errorf("Age(-%v) = %q, want %q", d, got, want)
		}
	}
}

// pythonSwarm returns swarm.py from the Python original's mirror (or $SWARM_PY), or skips.
func pythonSwarm(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed: no comparison with the Python swarm")
	}
	if p := os.Getenv("SWARM_PY"); p != "" {
		return p
	}
	mirror, _ := filepath.Abs("../../../.mirror/mtomcal+swarm/repo")
	out, err := gitx.Run(context.Background(), mirror, "", "show", "HEAD:swarm.py")
	if err != nil {
		t.Skip("the Python swarm is not here (set SWARM_PY or mirror mtomcal/swarm): no comparison")
	}
	p := filepath.Join(t.TempDir(), "swarm.py")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runPython(t *testing.T, swarmPy, swarmDir, op, stdin string) string {
	t.Helper()
	cmd := exec.Command("python3", "testdata/pyswarm.py", swarmPy, op)
	cmd.Env = append(os.Environ(), "SWARM_DIR="+swarmDir)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 pyswarm.py %s: %v\n%s", op, err, stderr.String())
	}
	return string(out)
}

// TestPythonWritten: a state.json the Python swarm wrote is read and written back byte for
// byte; one we wrote (with our metadata) the Python swarm loads and saves back unchanged.
func TestPythonWritten(t *testing.T) {
	py := pythonSwarm(t)
	dir := t.TempDir()
	runPython(t, py, dir, "write", "")
	r := &Registry{Dir: statedir.Swarm{Root: dir}}
	theirs, err := os.ReadFile(r.Dir.State())
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Load()
	if err != nil || len(s.Workers) != 2 || len(s.Bad()) != 0 {
		t.Fatalf("Load(Python's) = %d workers, %v, %v", len(s.Workers), s.Bad(), err)
	}
	if ours := Encode(s); !bytes.Equal(ours, theirs) {
		t.Errorf("Encode(Python's state) differs:\n%s\nPython wrote:\n%s", ours, theirs)
	}

	// Ours, with swarm's metadata, through the Python tool's load and save.
	err = r.Update(context.Background(), func(s *State) error {
		w := s.Get("p1")
		w.Metadata = w.Metadata.SetValue(MetaSupervised, true).SetValue(MetaExitCode, 3).SetValue(MetaFinished, "2026-11-23T15:10:00.5")
		s.Add(&Worker{Name: "n", Status: StatusRunning, Cmd: []string{"ü"}, Started: Timestamp(time.Now()), Cwd: "/",
			Env: Env{{"K", "v"}}, Tags: []string{"t"}, Metadata: Object{}.SetValue(MetaReason, "agent-exit-0")})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := os.ReadFile(r.Dir.State())
	runPython(t, py, dir, "resave", "")
	back, _ := os.ReadFile(r.Dir.State())
	if !bytes.Equal(back, ours) {
		t.Errorf("the Python swarm's resave changed our state.json:\n%s\nours:\n%s", back, ours)
	}
	var v map[string]any
	if err := json.Unmarshal(back, &v); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}

// TestPythonDurations compares ParseDuration and FormatDuration with the Python swarm's.
func TestPythonDurations(t *testing.T) {
	py := pythonSwarm(t)
	got := strings.Split(strings.TrimSuffix(runPython(t, py, t.TempDir(), "durations", strings.Join(durationCases, "\n")), "\n"), "\n")
	if len(got) != len(durationCases) {
		t.Fatalf("python printed %d lines for %d cases", len(got), len(durationCases))
	}
	for i, in := range durationCases {
		d, err := ParseDuration(in)
		ours := "error"
		if err == nil {
			ours = fmt.Sprint(d)
		}
		if ours != got[i] {
			t.Errorf("ParseDuration(%q) = %s, Python's parse_duration = %s", in, ours, got[i])
		}
	}
	secs := []float64{0, 1, 59.5, 60, 61, 1800, 3599, 3600, 3661, 86400, 100000}
	var lines []string
	for _, s := range secs {
		lines = append(lines, fmt.Sprint(s))
	}
	pyFmt := strings.Split(strings.TrimSuffix(runPython(t, py, t.TempDir(), "formats", strings.Join(lines, " ")), "\n"), "\n")
	for i, s := range secs {
		if ours := FormatDuration(time.Duration(s * float64(time.Second))); ours != pyFmt[i] {
			t.Errorf("FormatDuration(%vs) = %q, Python's format_duration = %q", s, ours, pyFmt[i])
		}
	}
}

// TestPythonHeartbeat: heartbeat files the Python swarm wrote are read and written back byte
// for byte; one we wrote the Python swarm loads and saves back unchanged.
func TestPythonHeartbeat(t *testing.T) {
	py := pythonSwarm(t)
	dir := t.TempDir()
	runPython(t, py, dir, "hbwrite", "")
	sd := statedir.Swarm{Root: dir}
	for _, name := range []string{"w1", "w2"} {
		theirs, err := os.ReadFile(sd.Heartbeat(name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := DecodeHeartbeat(theirs)
		if err != nil {
			t.Fatalf("DecodeHeartbeat(Python's %s) = %v", name, err)
		}
		if ours := EncodeHeartbeat(h); !bytes.Equal(ours, theirs) {
			t.Errorf("EncodeHeartbeat(Python's %s) differs:\n%s\nPython wrote:\n%s", name, ours, theirs)
		}
	}
	pid := int64(7)
	when := HeartbeatTime(time.Date(2026, 11, 23, 19, 30, 0, 500000000, time.UTC))
	h := &Heartbeat{WorkerName: "w3", IntervalSeconds: 2, Message: "weiter ✓", ExpireAt: &when, CreatedAt: when,
		Status: HeartbeatActive, MonitorPID: &pid}
	ours := EncodeHeartbeat(h)
	if err := os.WriteFile(sd.Heartbeat("w3"), ours, 0o600); err != nil {
		t.Fatal(err)
	}
	runPython(t, py, dir, "hbresave", "w3")
	if back, _ := os.ReadFile(sd.Heartbeat("w3")); !bytes.Equal(back, ours) {
		t.Errorf("the Python swarm's resave changed our heartbeat:\n%s\nours:\n%s", back, ours)
	}
}

func TestHeartbeatTimes(t *testing.T) {
	if got := HeartbeatTime(time.Date(2026, 11, 23, 19, 30, 0, 0, time.FixedZone("x", 3600))); got != "2026-11-23T18:30:00+00:00" {
		t.Errorf("HeartbeatTime = %q", got)
	}
	c := "2026-11-23T19:30:00.25+00:00"
	last := "2026-11-23T19:40:00+00:00"
	h := &Heartbeat{IntervalSeconds: 60, CreatedAt: c}
	if n, ok := h.NextBeat(); !ok || !n.Equal(time.Date(2026, 11, 23, 19, 31, 0, 250000000, time.UTC)) {
		t.Errorf("NextBeat (no beat) = %v %v", n, ok)
	}
	h.LastBeatAt = &last
	if n, ok := h.NextBeat(); !ok || !n.Equal(time.Date(2026, 11, 23, 19, 41, 0, 0, time.UTC)) {
		t.Errorf("NextBeat = %v %v", n, ok)
	}
	now := time.Date(2026, 11, 23, 19, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{-time.Second: "now", 0: "now", 30 * time.Second: "in 30s",
		90 * time.Second: "in 1m", 2 * time.Hour: "in 2h", 49 * time.Hour: "in 2d"} {
		if got := Until(now.Add(d), now); got != want {
			t.Errorf("Until(%s) = %q, want %q", d, got, want)
		}
	}
	for _, bad := range []string{`[]`, `{"worker_name": "w"}`, `{"worker_name": "w", "interval_seconds": "x"}`,
		`{"worker_name": "w", "interval_seconds": 0}`, `{"worker_name": 3, "interval_seconds": 5}`, `{"worker_name": "w", "interval_seconds": 5, "beat_count": "1"}`} {
		if _, err := DecodeHeartbeat([]byte(bad)); err == nil {
			t.Errorf("DecodeHeartbeat(%s) = nil error", bad)
		}
	}
}

// TestParseObject: the one-pass split of an object gives what json.Decoder's tokens gave.
func TestParseObject(t *testing.T) {
	reference := func(b []byte) (Object, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
			return nil, fmt.Errorf("not an object")
		}
		var out Object
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return nil, err
			}
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				return nil, err
			}
			out = out.Set(kt.(string), v)
		}
		return out, nil
	}
	for _, in := range []string{`{}`, ` { } `, `{"a":1}`, "{\n  \"a\" : [1, {\"b\": \"}]\\\"\"}] ,\"c\":null, \"d\":true}",
		`{"k\"ey\\": "v\\\"", "é\u00e9": "\ud83d\ude00", "a": 1, "a": 2}`, `{"n": -1.5e+10, "o": {"p": {"q": []}}}`,
		`{"s": "a,b}c]d", "t": "\\"}`} {
		if !json.Valid([]byte(in)) {
			t.Fatalf("test input %s is not JSON", in)
		}
		want, werr := reference([]byte(in))
		got, gerr := parseObject([]byte(in))
		if (werr != nil) != (gerr != nil) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("parseObject(%s) = %q, %v; want %q, %v", in, got, gerr, want, werr)
		}
	}
	for _, in := range []string{`[1]`, `"x"`, ``, `{"a":1`} {
		if _, err := parseObject([]byte(in)); err == nil {
			t.Errorf("parseObject(%s) = nil error", in)
		}
	}
	if l, err := splitArray([]byte(` [ {"a": [1,2]}, "x,]", 3 ] `)); err != nil || len(l) != 3 || string(l[1]) != `"x,]"` {
		t.Errorf("splitArray = %q, %v", l, err)
	}
}

// Schema-on-write: a state.json that would not satisfy the swarm-state schema is refused, the
// file as it was; entries kept as read because they are no workers do not refuse a write.
func TestUpdateRefusesInvalid(t *testing.T) {
	r := &Registry{Dir: statedir.Swarm{Root: t.TempDir()}}
	ctx := context.Background()
	add := func(s *State) error {
		s.Add(&Worker{Name: "a", Status: StatusRunning, Cmd: []string{"x"}, Started: "s", Cwd: "/"})
		return nil
	}
	if err := r.Update(ctx, add); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(r.Dir.State())
	err := r.Update(ctx, func(s *State) error {
		s.Get("a").Status = "zombie"
		s.Add(&Worker{Name: "b", Status: StatusRunning, Started: "s", Cwd: "/"})
		return nil
	})
	var ie *schema.InvalidError
	if !errors.Is(err, schema.ErrInvalid) || !errors.As(err, &ie) || !strings.Contains(err.Error(), `/workers/0/status: expected one of "running", "stopped", got "zombie"`) {
		t.Fatalf("Update(status zombie) = %v, want the schema's refusal naming /workers/0/status", err)
	}
	if after, _ := os.ReadFile(r.Dir.State()); !bytes.Equal(after, before) {
		t.Errorf("a refused update changed state.json:\n%s\nwas\n%s", after, before)
	}

	// An entry that is no worker, kept as read: its own problems are not the write's.
	bad := `{"workers": [{"name": "kept"}, 7]}`
	if err := os.WriteFile(r.Dir.State(), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Update(ctx, add); err != nil {
		t.Fatalf("Update beside entries that are no workers = %v", err)
	}
	s, _ := r.Load()
	if len(s.Workers) != 1 || len(s.Bad()) != 2 {
		t.Errorf("after the update: %d workers, %d kept entries; want 1, 2", len(s.Workers), len(s.Bad()))
	}
	// ... but a problem of a worker it writes still refuses it.
	if err := r.Update(ctx, func(s *State) error { s.Get("a").Status = "zombie"; return nil }); !errors.Is(err, schema.ErrInvalid) {
		t.Errorf("Update(status zombie) beside kept entries = %v, want ErrInvalid", err)
	}
}

// A name read back from state.json is checked as a name from the command line is (issue 17):
// one the Python swarm accepted ("my.worker") or a planted one ("../../victim") would become a
// path in logs and clean; it is kept as it is, reported, and never read as a worker.
func TestDecodeUnsafeNames(t *testing.T) {
	for _, name := range []string{"../../victim", "my.worker", "a/b", "-rf", ".hidden", "", "HEAD"} {
		doc := fmt.Sprintf(`{"workers": [{"name": %q, "status": "stopped", "cmd": ["x"], "started": "s", "cwd": "/"}]}`, name)
		s, err := Decode([]byte(doc))
		if err != nil {
			t.Fatalf("Decode(%s) = %v", doc, err)
		}
		if len(s.Workers) != 0 || s.Get(name) != nil || len(s.Bad()) != 1 {
			t.Errorf("Decode(name %q): %d workers, bad %v; want it kept as a bad entry", name, len(s.Workers), s.Bad())
		}
		if out := Encode(s); !bytes.Contains(out, []byte(fmt.Sprintf("%q", name))) {
			t.Errorf("Encode lost the entry named %q:\n%s", name, out)
		}
	}
}

// A truncated state.json is rebuilt from what Rebuild knows (swarm: its supervisors), by
// Load and by Update alike, once (issue 17: the swarm forgot every running worker).
func TestRegistryRebuild(t *testing.T) {
	for _, update := range []bool{false, true} {
		dir := t.TempDir()
		var warnings []string
		calls := 0
		r := &Registry{Dir: statedir.Swarm{Root: dir}, Warn: func(m string) { warnings = append(warnings, m) },
			Rebuild: func() []*Worker {
				calls++
				return []*Worker{{Name: "w1", Status: StatusRunning, Cmd: []string{"x"}, Started: "s", Cwd: "/"}}
			}}
		good := `{"workers": [{"name": "w1", "status": "running", "cmd": ["x"], "started": "s", "cwd": "/"}, {"name": "w2"`
		os.WriteFile(r.Dir.State(), []byte(good), 0o600)
		if update {
			r.Update(context.Background(), func(*State) error { return ErrUnchanged })
		}
		s, err := r.Load()
		if err != nil || len(s.Workers) != 1 || s.Get("w1") == nil || calls != 1 {
			t.Fatalf("Load(truncated) = %+v, %v (Rebuild called %d times); want w1 rebuilt, once", s, err, calls)
		}
		if len(warnings) != 1 || !strings.Contains(warnings[0], "still running: w1") {
			t.Errorf("warnings %q, want one naming w1", warnings)
		}
		if b, _ := os.ReadFile(r.Dir.StateCorrupted()); string(b) != good {
			t.Errorf("the corrupt file was not kept: %q", b)
		}
		if s, _ := r.Load(); s.Get("w1") == nil || calls != 1 || len(warnings) != 1 {
			t.Errorf("a second Load: %+v, %d Rebuild calls, warnings %q", s, calls, warnings)
		}
	}
}
