package plan

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParseMarkdown(t *testing.T) {
	doc := "# Plan\n\nSome prose.\n\n- [ ] t1: set up the module\n- [x] t0: done already\n" +
		"  - [ ] t2: write the parser (after t1, t0)\n```\n- [ ] t9: not a task, in code\n```\n* [ ] t3: tests (after t2) and docs\n"
	got, err := Parse("p.md", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{
		{ID: "t1", Description: "set up the module", Line: 5},
		{ID: "t0", Description: "done already", Done: true, Line: 6},
		{ID: "t2", Description: "write the parser", Dependencies: []string{"t1", "t0"}, Line: 7},
		{ID: "t3", Description: "tests and docs", Dependencies: []string{"t2"}, Line: 11},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v\nwant %+v", got, want)
	}
	if err := Check("p.md", "p", got, nil); err != nil {
		t.Errorf("Check = %v", err)
	}
}

func TestParseStructured(t *testing.T) {
	want := []Task{
		{ID: "a", Description: "first", Line: 2},
		{ID: "b", Description: "second", Dependencies: []string{"a"}, Line: 3},
	}
	yamlDoc := "tasks:\n  - {id: a, description: first}\n  - id: b\n    description: second\n    dependencies: [a]\n"
	jsonDoc := "[\n\t{\"id\": \"a\", \"description\": \"first\"},\n\t{\"id\": \"b\", \"description\": \"second\", \"dependencies\": [\"a\"]}\n]\n"
	for _, tt := range []struct{ name, doc string }{{"p.yaml", yamlDoc}, {"p.json", jsonDoc}, {"p", jsonDoc}} {
		got, err := Parse(tt.name, []byte(tt.doc))
		if err != nil {
			t.Errorf("Parse(%s) = %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%s) = %+v\nwant %+v", tt.name, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"p.md", "- [ ] t1: a\n- [ ] no id here\n", "p.md:2: task line"},
		{"p.md", "- [ ] t1:   \n", "p.md:1: task \"t1\" has no description"},
		{"p.md", "- [ ] t1: a (after t0, )\n", "p.md:1: task \"t1\" has an empty dependency"},
		{"p.md", "nothing\n", "p.md: no tasks found"},
		{"p.yaml", "- id: a\n  description: x\n  deps: [b]\n", "p.yaml:3: unknown key \"deps\""},
		{"p.yaml", "- id: 1\n  description: x\n", "p.yaml:1: id must be a string"},
		{"p.yaml", "- id: a\n  description: [x\n", "p.yaml:1: not valid YAML"},
		{"p.yaml", "- id: a\n  description: x\n  dependencies: b\n", "p.yaml:3: dependencies must be a list"},
		{"p.yaml", "- id: a\n", "p.yaml:1: task \"a\" has no description"},
		{"p.json", "[\n {\"id\": \"a\", \"description\": \"x\"},\n {\"id\": \"b\" \"description\": \"y\"}\n]", "p.json:3: not valid JSON"},
		{"p.json", "[\n {\"id\": \"a\", \"description\": 3}\n]", "p.json:2: description must be a string"},
		{"p.json", "{\"x\": []}", "p.json:1: a plan is a list of tasks"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.name, []byte(tt.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%s, %q) = %v, want %q...", tt.name, tt.doc, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%s) error is more than one line: %q", tt.name, err)
		}
	}
}

func TestCheck(t *testing.T) {
	task := func(id string, line int, deps ...string) Task {
		return Task{ID: id, Description: "d", Dependencies: deps, Line: line}
	}
	tests := []struct {
		tasks []Task
		known map[string][]string
		want  string
	}{
		{[]Task{task("t1", 1), task("t1", 4)}, nil, "p.md:4: task id \"t1\" is used twice (first at line 1)"},
		{[]Task{task("t1", 1, "t7")}, nil, "p.md:1: task \"t1\" depends on \"t7\", which is not in the plan"},
		{[]Task{task("t1", 1, "t3"), task("t2", 2, "t1"), task("t3", 3, "t2")}, nil, "p.md:1: dependency cycle: t1 -> t3 -> t2 -> t1"},
		{[]Task{task("t1", 5, "t1")}, nil, "p.md:5: dependency cycle: t1 -> t1"},
		{[]Task{task("a/b", 2)}, nil, "p.md:2: task id \"a/b\" has characters"},
		{[]Task{task("x;rm", 2)}, nil, "p.md:2: task id"},
		{[]Task{task("..", 2)}, nil, "p.md:2: task id"},
		{[]Task{task("t-verify", 2)}, nil, "p.md:2: task id \"t-verify\" ends in"},
		{[]Task{task("t1", 3)}, map[string][]string{"t1": nil}, "p.md:3: task id \"t1\" is already in the queue"},
		{[]Task{task("t2", 3, "t1")}, map[string][]string{"t1": nil}, ""},
		{[]Task{task(strings.Repeat("t", 127), 1)}, nil, "p.md:1: task \"ttt"},
	}
	for _, tt := range tests {
		err := Check("p.md", "p", tt.tasks, tt.known)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.HasPrefix(err.Error(), tt.want)) {
			t.Errorf("Check(%v) = %v, want %q", tt.tasks, err, tt.want)
		}
	}
}

func TestCheckLongChain(t *testing.T) {
	const n = 100000
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: fmt.Sprintf("t%d", i), Description: "d", Line: i + 1}
		if i > 0 {
			tasks[i].Dependencies = []string{fmt.Sprintf("t%d", i-1)}
		}
	}
	if err := Check("p.md", "p", tasks, nil); err != nil {
		t.Fatal(err)
	}
	tasks[0].Dependencies = []string{fmt.Sprintf("t%d", n-1)}
	if err := Check("p.md", "p", tasks, nil); err == nil || !strings.Contains(err.Error(), "dependency cycle: t0 -> t99999") {
		t.Errorf("Check(a 100,000-task ring) = %.200v", err)
	}
}

func TestID(t *testing.T) {
	for path, want := range map[string]string{"plans/auth.md": "auth", "x.v2.yaml": "x.v2", "plan": "plan"} {
		if got, err := ID(path); err != nil || got != want {
			t.Errorf("ID(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	for _, path := range []string{"my plan.md", "-x.md", ".md"} {
		if got, err := ID(path); err == nil {
			t.Errorf("ID(%q) = %q, want an error", path, got)
		}
	}
}

// FuzzParse: any plan file, in any format, parses or fails with one line naming the file,
// never a panic; what parses has an id and a description for every task, and Check judges it
// without a panic either.
func FuzzParse(f *testing.F) {
	f.Add("p.md", "- [ ] t1: a\n- [x] t2: b (after t1)\n")
	f.Add("p.yaml", "tasks:\n  - {id: a, description: x, dependencies: [b]}\n  - {id: b, description: y}\n")
	f.Add("p.json", `[{"id": "a", "description": "x", "dependencies": ["a"]}]`)
	f.Add("p", "{\"tasks\": [\n\t{\"id\": \"a\", \"description\": \"x\"}]}")
	f.Fuzz(func(t *testing.T, name, doc string) {
		tasks, err := Parse(name, []byte(doc))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Parse error is more than one line: %q", err)
			}
			return
		}
		for _, task := range tasks {
			if task.ID == "" || strings.TrimSpace(task.Description) == "" {
				t.Errorf("Parse gave a task without an id or description: %+v", task)
			}
		}
		if err := Check(name, "p", tasks, nil); err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Check error is more than one line: %q", err)
		}
	})
}
