package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

const good = `name: Sprint 47
repo: .
base_branch: main
defaults: {agent: claude, model: sonnet, timeout: 30m, retries: 1}
tasks:
  - id: feature-a
    prompt: "Implement A"
    branch: feature/a
    priority: high
    depends_on: []
  - id: feature-b
    prompt_file: tasks/b.md
    branch: feature/b
    depends_on: [feature-a]
    timeout: 90
    retries: 0
    agent: codex
`

func reader(files map[string]string) ReadFunc {
	return func(name string) ([]byte, error) {
		if s, ok := files[name]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
}

func TestParseGood(t *testing.T) {
	m, err := Parse("work.yaml", []byte(good), reader(map[string]string{"tasks/b.md": "Do B\n"}))
	if err != nil {
		t.Fatalf("Parse(good) = %v", err)
	}
	if m.Name != "Sprint 47" || m.Slug() != "sprint-47" || m.BaseBranch != "main" || m.Repo != "." {
		t.Errorf("Parse(good) = %+v", m)
	}
	want := Defaults{Agent: "claude", Model: "sonnet", Timeout: 30 * time.Minute, Retries: 1}
	if m.Defaults != want {
		t.Errorf("defaults = %+v, want %+v", m.Defaults, want)
	}
	a, b := m.Tasks[0], m.Tasks[1]
	if a.Priority != High || a.Timeout != 30*time.Minute || a.Retries != 1 || a.Agent != "claude" || a.Line != 6 {
		t.Errorf("task a = %+v", a)
	}
	if b.Prompt != "Do B\n" || b.Priority != Medium || b.Timeout != 90*time.Second || b.Retries != 0 || b.Agent != "codex" ||
		!reflect.DeepEqual(b.DependsOn, []string{"feature-a"}) {
		t.Errorf("task b = %+v", b)
	}
}

// TestParseTest reads the optional test command (swarm run merge's), one line as written.
func TestParseTest(t *testing.T) {
	doc := "name: x\ntest: go test ./...\ntasks:\n  - {id: a, prompt: p, branch: b}\n"
	m, err := Parse("work.yaml", []byte(doc), nil)
	if err != nil || m.Test != "go test ./..." {
		t.Fatalf("Parse(%q) = %+v, %v; want test %q", doc, m, err, "go test ./...")
	}
	bad := "name: x\ntest: \"make\\ncheck\"\ntasks:\n  - {id: a, prompt: p, branch: b}\n"
	if _, err := Parse("work.yaml", []byte(bad), nil); err == nil || !strings.Contains(err.Error(), "work.yaml:2: test") {
		t.Errorf("Parse(%q) = %v, want an error at line 2", bad, err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"not yaml", "name: [", "work.yaml:1: not YAML"},
		{"not a mapping", "- a\n", "work.yaml:1: a manifest is a mapping"},
		{"no name", "tasks:\n  - {id: a, prompt: p, branch: b}\n", "work.yaml:1: name is missing"},
		{"no tasks", "name: x\n", "work.yaml:1: tasks is missing"},
		{"empty tasks", "name: x\ntasks: []\n", "work.yaml:2: tasks must be a list of at least one task"},
		{"unknown key", "name: x\ndepends-on: 1\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:2: unknown key "depends-on"`},
		{"no id", "name: x\ntasks:\n  - prompt: p\n    branch: b\n", "work.yaml:3: a task has no id"},
		{"no branch", "name: x\ntasks:\n  - id: a\n    prompt: p\n", `work.yaml:3: task "a" has no branch`},
		{"no prompt", "name: x\ntasks:\n  - id: a\n    branch: b\n", `work.yaml:3: task "a" has no prompt`},
		{"both prompts", "name: x\ntasks:\n  - id: a\n    branch: b\n    prompt: p\n    prompt_file: f\n", `work.yaml:6: task "a" has both prompt and prompt_file`},
		{"missing prompt file", "name: x\ntasks:\n  - id: a\n    branch: b\n    prompt_file: nope.md\n", `work.yaml:5: prompt_file "nope.md"`},
		{"bad priority", "name: x\ntasks:\n  - id: a\n    branch: b\n    prompt: p\n    priority: urgent\n", `work.yaml:6: priority "urgent" is not one of high, medium, low`},
		{"id too long for its bead", "name: x\ntasks:\n  - id: " + strings.Repeat("a", MaxTaskID+1) + "\n    branch: b\n    prompt: p\n", fmt.Sprintf("work.yaml:3: task id %q is %d characters long; at most %d are allowed", strings.Repeat("a", MaxTaskID+1), MaxTaskID+1, MaxTaskID)},
		{"bad id", "name: x\ntasks:\n  - id: a/b\n    branch: b\n    prompt: p\n", `work.yaml:3: task id "a/b" has characters`},
		{"bad branch", "name: x\ntasks:\n  - id: a\n    branch: a..b\n    prompt: p\n", `work.yaml:4: branch "a..b": is not a valid git branch name`},
		{"branch in full", "name: x\ntasks:\n  - id: a\n    branch: refs/heads/main\n    prompt: p\n", `work.yaml:4: branch "refs/heads/main": starts with refs/`},
		{"branch like a tag", "name: x\ntasks:\n  - id: a\n    branch: tags/v1\n    prompt: p\n", `work.yaml:4: branch "tags/v1": starts with tags/`},
		{"branch like a remote", "name: x\ntasks:\n  - id: a\n    branch: remotes/origin/main\n    prompt: p\n", `work.yaml:4: branch "remotes/origin/main": starts with remotes/`},
		{"branch a pseudo-ref", "name: x\ntasks:\n  - id: a\n    branch: FETCH_HEAD\n    prompt: p\n", `work.yaml:4: branch "FETCH_HEAD": is capital letters and '_' alone`},
		{"branch HEAD", "name: x\ntasks:\n  - id: a\n    branch: HEAD\n    prompt: p\n", `work.yaml:4: branch "HEAD": is capital letters and '_' alone`},
		{"branch bidi", "name: x\ntasks:\n  - id: a\n    branch: \"fix/\u202egnp.exe\"\n    prompt: p\n", `work.yaml:4: branch "fix/\u202egnp.exe" has the character '\u202e'`},
		{"branch non-ASCII", "name: x\ntasks:\n  - id: a\n    branch: café\n    prompt: p\n", `work.yaml:4: branch "café": has the character 'é'`},
		{"base branch bidi", "name: x\nbase_branch: \"ma\u202ein\"\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:2: base_branch "ma\u202ein" has the character '\u202e'`},
		{"name bidi", "name: \"x\u202ey\"\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:1: name "x\u202ey" has the character '\u202e'`},
		{"agent escape", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b, agent: \"cl\\e]0;x\\aaude\"}\n", `work.yaml:3: agent "cl\x1b]0;x\aaude" has the character '\x1b'`},
		{"dependency newline", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b}\n  - {id: c, prompt: p, branch: d, depends_on: [\"a\\n\"]}\n", `work.yaml:4: a dependency "a\n" has the character '\n'`},
		{"dup key in a task", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b, id: c}\n", `work.yaml:3: key "id" is given twice in this mapping`},
		{"dup key at the top", "name: x\nbase_branch: main\nname: y\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:3: key "name" is given twice in this mapping (first at line 1)`},
		{"dup key in defaults", "name: x\ndefaults:\n  agent: a\n  agent: b\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:4: key "agent" is given twice in this mapping (first at line 3)`},
		{"dup id", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b1}\n  - {id: a, prompt: p, branch: b2}\n", `work.yaml:4: task id "a" is used twice (first at line 3)`},
		{"dup branch", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b}\n  - {id: c, prompt: p, branch: b}\n", `work.yaml:4: branch "b" of task "c" is task "a"'s too (line 3)`},
		{"base branch", "name: x\ntasks:\n  - {id: a, prompt: p, branch: main}\n", `work.yaml:3: branch "main" of task "a" is the base branch`},
		{"missing dep", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b, depends_on: [z]}\n", `work.yaml:3: task "a" depends on "z", which is no task`},
		{"self dep", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b, depends_on: [a]}\n", `work.yaml:3: task "a" depends on itself`},
		{"cycle", "name: x\ntasks:\n  - {id: a, prompt: p, branch: ba, depends_on: [b]}\n  - {id: b, prompt: p, branch: bb, depends_on: [c]}\n  - {id: c, prompt: p, branch: bc, depends_on: [a]}\n",
			"work.yaml:3: dependency cycle: a -> b -> c -> a"},
		{"cycle inside", "name: x\ntasks:\n  - {id: a, prompt: p, branch: ba, depends_on: [b]}\n  - {id: b, prompt: p, branch: bb, depends_on: [c]}\n  - {id: c, prompt: p, branch: bc, depends_on: [b]}\n",
			"work.yaml:4: dependency cycle: b -> c -> b"},
		{"bad timeout", "name: x\ndefaults: {timeout: soon}\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:2: timeout "soon"`},
		{"bad retries", "name: x\ntasks:\n  - {id: a, prompt: p, branch: b, retries: -1}\n", `work.yaml:3: retries must be a whole number`},
		{"bad max_parallel", "name: x\nmax_parallel: 0\ntasks:\n  - {id: a, prompt: p, branch: b}\n", `work.yaml:2: max_parallel must be a positive integer`},
		{"two problems", "name: x\ntasks:\n  - {id: a, prompt: p}\n  - {id: b, branch: b}\n", `work.yaml:3: task "a" has no branch (and 1 more problems)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("work.yaml", []byte(tt.doc), reader(nil))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want %q...", tt.doc, err, tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Parse(%q): %v is not ErrInvalid", tt.doc, err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse(%q): the error is not one line: %q", tt.doc, err)
			}
		})
	}
}

func TestLoadPromptFileRelative(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tasks"), 0o700)
	os.WriteFile(filepath.Join(dir, "tasks", "b.md"), []byte("Do B"), 0o600)
	path := filepath.Join(dir, "work.yaml")
	os.WriteFile(path, []byte(good), 0o600)
	m, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%q) = %v", path, err)
	}
	if m.Tasks[1].Prompt != "Do B" {
		t.Errorf("Load: task b's prompt = %q, want the file's", m.Tasks[1].Prompt)
	}
	// A prompt file that is a link is not followed.
	os.Remove(filepath.Join(dir, "tasks", "b.md"))
	os.Symlink("/etc/passwd", filepath.Join(dir, "tasks", "b.md"))
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "work.yaml:12: prompt_file") {
		t.Errorf("Load with a linked prompt file = %v, want an error at line 12", err)
	}
}

func TestOrder(t *testing.T) {
	doc := `name: x
tasks:
  - {id: a, prompt: p, branch: a, priority: low}
  - {id: b, prompt: p, branch: b}
  - {id: c, prompt: p, branch: c, priority: high, depends_on: [a]}
  - {id: d, prompt: p, branch: d, priority: high}
`
	m, err := Parse("w.yaml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Order(), []string{"d", "b", "a", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Order() = %v, want %v", got, want)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{"Sprint 47": "sprint-47", "  Bug fixes!! ": "bug-fixes", "ÉtÉ": "t", "a--b": "a-b"} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{"90": 90 * time.Second, "30m": 30 * time.Minute, "1h30m": 90 * time.Minute} {
		if got, err := ParseTimeout(in); err != nil || got != want {
			t.Errorf("ParseTimeout(%q) = %v, %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "1d", "-5", "m"} {
		if _, err := ParseTimeout(in); err == nil {
			t.Errorf("ParseTimeout(%q) = nil error, want one", in)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(good)
	f.Add("name: x\ntasks:\n  - {id: a, prompt: p, branch: ba, depends_on: [a]}\n")
	f.Fuzz(func(t *testing.T, doc string) {
		m, err := Parse("w.yaml", []byte(doc), nil)
		if err == nil && len(m.Order()) != len(m.Tasks) {
			t.Fatalf("Order of a checked manifest misses tasks: %v", m.Order())
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

// TestLoadPromptFileStaysInside: a prompt_file must be inside the repository (Options.Root;
// the manifest's directory by default): "..", an absolute path, or a link that leads out of it
// is refused at its line; a link inside it is followed; Options.AnyPromptFile reads anything
// (issue 27: a manifest from a pull request could send /etc/shadow to the agent).
func TestLoadPromptFileStaysInside(t *testing.T) {
	top := t.TempDir()
	repo := filepath.Join(top, "repo")
	os.MkdirAll(filepath.Join(repo, "sub", "tasks"), 0o700)
	os.WriteFile(filepath.Join(top, "secret.md"), []byte("the secret"), 0o600)
	os.WriteFile(filepath.Join(repo, "sub", "tasks", "in.md"), []byte("inside"), 0o600)
	os.Symlink("sub/tasks", filepath.Join(repo, "linked"))
	os.Symlink(top, filepath.Join(repo, "out"))
	path := filepath.Join(repo, "sub", "work.yaml")
	load := func(promptFile string, o Options) (*Manifest, error) {
		doc := fmt.Sprintf("name: x\ntasks:\n  - id: a\n    branch: b\n    prompt_file: %q\n", promptFile)
		os.WriteFile(path, []byte(doc), 0o600)
		return LoadWith(path, o)
	}
	inRepo := Options{Root: repo}
	for _, tt := range []struct {
		file string
		o    Options
		want string // the prompt, or the error's start
	}{
		{"tasks/in.md", inRepo, "inside"},
		{"../linked/in.md", inRepo, "inside"},
		{filepath.Join(repo, "sub", "tasks", "in.md"), inRepo, "inside"},
		{"../../secret.md", inRepo, "work.yaml:5: prompt_file \"../../secret.md\": is outside"},
		{filepath.Join(top, "secret.md"), inRepo, "work.yaml:5: prompt_file " + fmt.Sprintf("%q", filepath.Join(top, "secret.md")) + ": is outside"},
		{"../out/secret.md", inRepo, "work.yaml:5: prompt_file \"../out/secret.md\": leads out"},
		{"../linked/in.md", Options{}, "work.yaml:5: prompt_file \"../linked/in.md\": is outside"},
		{"../../secret.md", Options{Root: repo, AnyPromptFile: true}, "the secret"},
	} {
		m, err := load(tt.file, tt.o)
		got := ""
		if err != nil {
			got = strings.TrimPrefix(err.Error(), filepath.Dir(path)+"/")
		} else {
			got = m.Tasks[0].Prompt
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("LoadWith(prompt_file %s, %+v) = %q, want %q", tt.file, tt.o, got, tt.want)
		}
	}
	// Load is LoadWith the manifest's own directory as the root.
	if _, err := load("../../secret.md", Options{}); err == nil {
		t.Errorf("Load read a prompt file outside the manifest's directory")
	}
}

// TestLongestTaskIDMakesABead: the longest task id the manifest takes, with the longest
// execution id a manifest's name can make, is a bead the state directory takes; one more
// character would not be (it used to pass the manifest and fail at its first attempt).
func TestLongestTaskIDMakesABead(t *testing.T) {
	longest := ""
	for _, name := range []string{strings.Repeat("a", 100), strings.Repeat("a ", 60), strings.Repeat("ab-", 40), strings.Repeat("a-b", 40)} {
		if s := slug(name); len(s) > len(longest) {
			longest = s
		}
	}
	if len(longest) > maxSlug {
		t.Fatalf("slug %q is %d long, more than maxSlug %d", longest, len(longest), maxSlug)
	}
	exec := "2026-12-07-" + strings.Repeat("a", maxSlug) + "-abcd"
	id := strings.Repeat("t", MaxTaskID)
	if err := statedir.CheckName(statedir.KindBead, exec+"-"+id); err != nil {
		t.Errorf("the longest bead is refused: %v", err)
	}
	if err := statedir.CheckName(statedir.KindBead, exec+"-"+id+"t"); err == nil {
		t.Errorf("a bead one longer is taken: MaxTaskID %d is not the bound", MaxTaskID)
	}
}
