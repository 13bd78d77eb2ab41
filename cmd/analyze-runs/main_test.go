package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/compattest"
	"github.com/agentfleet/fleet/internal/record/hostile"
	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/rogpeppe/go-internal/testscript"
	bolt "go.etcd.io/bbolt"
)

func TestMain(m *testing.M) {
	cacheFresh = 0 // the records the tests have just written are cached
	testscript.Main(m, map[string]func(){
		tool:             func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
		"peakrss-helper": hostile.PeakRSSHelper,
	})
}

func TestScripts(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			need.Setup(env)
			env.Setenv("REPO", repo)
			env.Setenv("SOURCE_DATE_EPOCH", "1771243200") // 2026-02-16 12:00:00 UTC
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "race" {
				return raceEnabled, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: hostile.WithScriptCmds(map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"need": need.Cmd,
			// mkfile NAME CONTENT writes CONTENT to the file NAME, both read as the inside of a
			// Go string literal, so that a name can hold a newline or an escape ('a\nb', '\x1b').
			"mkfile": func(ts *testscript.TestScript, neg bool, args []string) {
				name, err := strconv.Unquote(`"` + args[0] + `"`)
				ts.Check(err)
				content, err := strconv.Unquote(`"` + args[1] + `"`)
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(name), []byte(content), 0o600))
			},
			// truncate FILE SIZE cuts FILE to SIZE bytes, as a full disk or a copy cut short.
			"truncate": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 2 {
					ts.Fatalf("usage: truncate FILE SIZE")
				}
				size, err := strconv.ParseInt(args[1], 10, 64)
				ts.Check(err)
				ts.Check(os.Truncate(ts.MkAbs(args[0]), size))
			},
		}),
	})
}

// expectedName matches the expected outputs: report.{txt,json} for a plain run,
// report-since-<DATE>.{txt,json} for --since DATE.
var expectedName = regexp.MustCompile(`^report(?:-since-(.+))?\.(txt|json)$`)

// TestCompat runs every set of the corpus, plain and with --since as the expected files name
// it, and compares as the corpus README says: text line by line with the time line masked, JSON
// as parsed values (numbers within 1e-9) with raw_data ordered by bead.
func TestCompat(t *testing.T) {
	root := compattest.Dir(t, "analyze-runs")
	sets, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, set := range sets {
		if !set.IsDir() {
			continue
		}
		// A copy: the report writes its cache in the state directory, and the corpus is shared.
		state := copyState(t, filepath.Join(root, set.Name(), "state"))
		expected, _ := filepath.Glob(filepath.Join(root, set.Name(), "expected", "*"))
		for _, path := range expected {
			m := expectedName.FindStringSubmatch(filepath.Base(path))
			if m == nil {
				continue
			}
			args := []string{tool, "--state-dir", state}
			if m[1] != "" {
				args = append(args, "--since", m[1])
			}
			if m[2] == "json" {
				args = append(args, "--json")
			}
			name := set.Name() + "/" + filepath.Base(path)
			t.Run(name, func(t *testing.T) {
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				if code := run(args, &stdout, &stderr); code != 0 {
					t.Fatalf("%s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
				}
				if stderr.Len() > 0 {
					t.Errorf("stderr: %s", stderr.String())
				}
				if m[2] == "txt" {
					compareText(t, stdout.String(), string(want))
				} else {
					compareJSON(t, stdout.Bytes(), want)
				}
			})
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("no expected outputs found in the corpus")
	}
}

var generatedLine = regexp.MustCompile(`(?m)^Generated: .*$`)

func compareText(t *testing.T, got, want string) {
	t.Helper()
	got = generatedLine.ReplaceAllString(got, "Generated: <TIME>")
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("line %d = %q, want %q", i+1, g, w)
			return
		}
	}
}

// additions are the statistics this tool adds to the original's document; they are checked
// for presence, their values by the unit tests.
var additions = []string{"duration_percentiles", "skipped_records"}

func compareJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	g["generated_at"] = w["generated_at"]
	stats, _ := g["statistics"].(map[string]any)
	for _, k := range additions {
		if _, ok := stats[k]; !ok {
			t.Errorf("statistics.%s is missing", k)
		}
		delete(stats, k)
	}
	for _, doc := range []map[string]any{g, w} {
		if raw, ok := doc["raw_data"].([]any); ok {
			sort.SliceStable(raw, func(i, j int) bool {
				return fmt.Sprint(raw[i].(map[string]any)["bead"]) < fmt.Sprint(raw[j].(map[string]any)["bead"])
			})
		}
	}
	for _, d := range diff("", g, w) {
		t.Error(d)
	}
}

// diff lists where got and want differ, by JSON path.
func diff(path string, got, want any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s = %v, want an object", path, got)}
		}
		var out []string
		for k := range w {
			if _, ok := g[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s is missing", path, k))
				continue
			}
			out = append(out, diff(path+"."+k, g[k], w[k])...)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s is not in the original's document", path, k))
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s = %v, want %v", path, got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i])...)
		}
		return out
	case float64:
		if g, ok := got.(float64); !ok || math.Abs(g-w) > 1e-9 {
			return []string{fmt.Sprintf("%s = %v, want %v", path, got, want)}
		}
		return nil
	}
	if got != want {
		return []string{fmt.Sprintf("%s = %#v, want %#v", path, got, want)}
	}
	return nil
}

// copyState copies a state directory of the corpus to a temporary one.
func copyState(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state")
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestCompatCache: on every set of the corpus, every format and filter prints the same bytes
// (and the same warnings) through the cache, cold and warm, as without it, and after
// --rebuild-cache and --verify-cache.
func TestCompatCache(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1771243200") // the report's time: the same in every run
	root := compattest.Dir(t, "analyze-runs")
	sets, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var variants [][]string
	for _, f := range []string{"text", "markdown", "csv", "html", "prometheus"} {
		variants = append(variants, []string{"--format", f})
	}
	variants = append(variants, []string{"--templates"}, []string{"--templates", "--json"}, []string{"--detailed", "--by", "week"},
		[]string{"--since", "2026-01-08"}, []string{"--until", "2026-01-05", "--format", "csv"}, []string{"--agent", "claude", "--format", "markdown"},
		[]string{"--model", "opus,sonnet", "--by", "day"}, []string{"--template", "custom", "--format", "prometheus"}, []string{"--attempts", "--format", "html"})
	ran := 0
	for _, set := range sets {
		if !set.IsDir() {
			continue
		}
		state := copyState(t, filepath.Join(root, set.Name(), "state"))
		for _, v := range variants {
			base := append([]string{tool, "--state-dir", state}, v...)
			report := func(extra ...string) string {
				var stdout, stderr bytes.Buffer
				args := append(slices.Clone(base), extra...)
				if code := run(args, &stdout, &stderr); code != 0 {
					t.Fatalf("%s: exit %d, stderr %s", strings.Join(args, " "), code, stderr.String())
				}
				return stdout.String() + "\nstderr:\n" + stderr.String()
			}
			want := report("--no-cache")
			for _, extra := range [][]string{nil, nil, {"--rebuild-cache"}, nil, {"--verify-cache"}, nil} {
				if got := report(extra...); got != want {
					t.Errorf("%s %s %v: through the cache the output differs:\n%s\nwant:\n%s", set.Name(), strings.Join(v, " "), extra, got, want)
				}
			}
			ran++
		}
		if _, err := os.Stat(filepath.Join(state, "cache", "analyze-runs.db")); err != nil {
			t.Errorf("%s: no cache was written: %v", set.Name(), err)
		}
	}
	if ran == 0 {
		t.Fatal("no set in the corpus")
	}
}

// fixtureHistory writes n record pairs of every outcome the report counts (agents, models,
// templates, statuses, a run without a result) to a new state directory, which it returns.
func fixtureHistory(t *testing.T, n int) string {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	for _, d := range []string{"runs", "results"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewSource(27))
	for i := range n {
		bead := fmt.Sprintf("bd-%04d", i)
		start := time.Date(2026, 2, 1+rng.Intn(14), rng.Intn(24), rng.Intn(60), 0, 0, time.UTC)
		run := fmt.Sprintf(`{"bead":%q,"agent":%q,"model":%q,"started_at":%q,"attempt":%d,"prompt":%q,"template_name":%q}`,
			bead, []string{"claude", "codex"}[rng.Intn(2)], []string{"opus", "sonnet", "gpt"}[rng.Intn(3)],
			start.Format(time.RFC3339), 1+rng.Intn(3), []string{"Fix it", "Build it", "Review it"}[rng.Intn(3)],
			[]string{"feature", "bug-fix", ""}[rng.Intn(3)])
		res := fmt.Sprintf(`{"bead":%q,"status":%q,"finished_at":%q,"reason":%q}`,
			bead, []string{"done", "done", "failed", "timeout"}[rng.Intn(4)],
			start.Add(time.Duration(rng.Intn(3600))*time.Second).Format(time.RFC3339), []string{"status-file", "tests-failed"}[rng.Intn(2)])
		if err := os.WriteFile(filepath.Join(state, "runs", bead+".json"), []byte(run), 0o600); err != nil {
			t.Fatal(err)
		}
		if rng.Intn(8) == 0 {
			continue // still running
		}
		if err := os.WriteFile(filepath.Join(state, "results", bead+".json"), []byte(res), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// cacheWarning is the one line a run that finds the cache unreadable writes on stderr.
var cacheWarning = regexp.MustCompile(`^analyze-runs: warning: the cache cannot be read \([^\n]+\): it is written anew from the records\n$`)

// TestTruncatedCache: a cache cut short at every page boundary, a byte short of its pages and
// at random lengths prints, in text and JSON, through the cache and with --rebuild-cache and
// --verify-cache, what a run without the cache prints, exit 0, with one warning when it was
// read and found cut short. It crashed every run, --rebuild-cache and --verify-cache included
// (issue 27, bug 4: a bbolt panic or a SIGBUS on its map).
func TestTruncatedCache(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1771243200") // the report's time: the same in every run
	state := fixtureHistory(t, 300)
	path := filepath.Join(state, "cache", "analyze-runs.db")
	analyzeRuns := func(args ...string) (stdout, stderr string) {
		t.Helper()
		var out, errs bytes.Buffer
		args = append([]string{tool, "--state-dir", state}, args...)
		if code := run(args, &out, &errs); code != 0 {
			t.Fatalf("%s: exit %d, stderr %s", strings.Join(args, " "), code, errs.String())
		}
		return out.String(), errs.String()
	}
	analyzeRuns()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize, need := boltExtent(t, path)
	offsets := []int{1, need - 1}
	for at := 0; at < len(whole); at += pageSize {
		offsets = append(offsets, at)
	}
	rng := rand.New(rand.NewSource(4))
	for range 8 {
		offsets = append(offsets, rng.Intn(len(whole)))
	}
	variants := [][]string{nil, {"--json"}, {"--templates", "--json"}, {"--format", "csv"}, {"--rebuild-cache"}, {"--verify-cache"}}
	want := map[string]string{}
	for _, v := range variants {
		key := strings.Join(v, " ")
		if !slices.Contains(v, "--rebuild-cache") && !slices.Contains(v, "--verify-cache") {
			want[key], _ = analyzeRuns(append(v, "--no-cache")...)
		}
	}
	want["--rebuild-cache"], want["--verify-cache"] = want[""], want[""]
	for _, at := range offsets {
		for _, v := range variants {
			key := strings.Join(v, " ")
			if err := os.WriteFile(path, whole[:at], 0o600); err != nil {
				t.Fatal(err)
			}
			stdout, stderr := analyzeRuns(v...)
			if stdout != want[key] {
				t.Errorf("cut to %d bytes, %q: the report differs from the records':\n%s\nwant:\n%s", at, key, stdout, want[key])
			}
			// --json reads every record, not the cache; --rebuild-cache does not open it.
			read := key != "--json" && key != "--rebuild-cache"
			switch {
			case read && at < need:
				if !cacheWarning.MatchString(stderr) {
					t.Errorf("cut to %d bytes of %d, %q: stderr %q, want one warning that the cache cannot be read", at, need, key, stderr)
				}
			case stderr != "":
				t.Errorf("cut to %d bytes of %d, %q: stderr %q, want none", at, need, key, stderr)
			}
			if got, _ := os.ReadFile(path); key == "--json" && !bytes.Equal(got, whole[:at]) {
				t.Errorf("cut to %d bytes, --json: the cache was changed", at)
			}
		}
	}
}

// boltExtent is the page size of the bbolt file at path and the bytes its pages in use take,
// as bbolt reads them.
func boltExtent(t *testing.T, path string) (pageSize, size int) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		size = int(tx.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db.Info().PageSize, size
}
