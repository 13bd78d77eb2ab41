// Package plan reads a plan for ralph's task queue: a markdown task list
//
//   - [ ] t1: set up the module
//   - [ ] t2: write the parser (after t1)
//   - [x] t0: already done
//
// or a YAML or JSON list of {id, description, dependencies} (also under a top-level "tasks"
// key). Check then holds a plan to the queue's rules: ids that are safe bead names once the plan
// id is put before them, unique ids, dependencies that exist, and no cycle. Every error names
// the file and the line of the task it is about.
package plan

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
	"github.com/agentfleet/fleet/internal/taskgraph"
)

// Task is one task of a plan.
type Task struct {
	ID           string
	Description  string
	Dependencies []string
	// Done is a markdown task already ticked ("- [x]"): queued as done.
	Done bool
	// Line is where the task starts in its file (1-based).
	Line int
}

// Error is a problem in a plan file, at a line (0 when it is about the whole file).
type Error struct {
	File string
	Line int
	Msg  string
}

// Error is one line: a file name with control characters is quoted, and a message (a YAML or
// JSON decoder's may quote the document) has its line breaks folded.
func (e *Error) Error() string {
	file := e.File
	if strings.IndexFunc(file, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		file = strconv.Quote(file)
	}
	msg := strings.Join(strings.Fields(e.Msg), " ")
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, msg)
	}
	return fmt.Sprintf("%s: %s", file, msg)
}

func errorf(file string, line int, format string, args ...any) *Error {
	return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// MaxSize bounds a plan file: thousands of tasks fit in a few megabytes.
const MaxSize = 16 << 20

// parserOf picks the parser of a plan's format from its file name, else from its content: JSON
// starts with '[' or '{', a markdown plan has a task line, anything else is read as YAML.
func parserOf(name string, data []byte) func(file string, data []byte) ([]Task, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".txt":
		return parseMarkdown
	case ".yaml", ".yml":
		return parseYAML
	case ".json":
		return parseJSON
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') {
		return parseJSON
	}
	if slices.ContainsFunc(strings.Split(string(data), "\n"), taskLine.MatchString) {
		return parseMarkdown
	}
	return parseYAML
}

// Parse reads the tasks of the plan file named name (for errors and its format). It checks the
// form of each task; Check holds the plan as a whole to the queue's rules.
func Parse(name string, data []byte) ([]Task, error) {
	data = fsx.StripBOM(data)
	tasks, err := parserOf(name, data)(name, data)
	if err == nil && len(tasks) == 0 { // every parser's tasks are nil with an error, or none
		err = errorf(name, 0, "no tasks found; write them as '- [ ] t1: description (after t0)' or as a YAML/JSON list of {id, description, dependencies}")
	}
	return tasks, err
}

// ID is the plan id of the plan file at path: its name without the extension. It must be a
// safe name (statedir.CheckName's rule for beads), since it starts every bead of the plan and
// names the queue's files.
func ID(path string) (string, error) {
	base := filepath.Base(path)
	if ext := filepath.Ext(base); ext != "" && ext != base {
		base = strings.TrimSuffix(base, ext)
	}
	if err := CheckID(base); err != nil {
		return "", err
	}
	return base, nil
}

// CheckID checks a plan id.
func CheckID(id string) error {
	if err := checkName("plan id", id); err != nil {
		return fmt.Errorf("%v; rename the plan file (letters, digits, '.', '_', '-')", err)
	}
	return nil
}

// checkName holds a plan or task id to the rule of bead ids (statedir.CheckName, which allows
// '.': task ids like 1.2 are common), naming it as what it is.
func checkName(what, name string) error {
	if err := statedir.CheckName(statedir.KindBead, name); err != nil {
		return errors.New(strings.Replace(err.Error(), string(statedir.KindBead), what, 1))
	}
	return nil
}

// Bead is the bead of task in plan: every attempt at it is dispatched, and recorded, under it.
func Bead(plan, task string) string { return plan + "-" + task }

// Check holds tasks to the queue's rules, given the tasks already queued (known: each one's
// dependencies by its id; nil for a new queue): every id a safe task id of plan, unique (among
// tasks and against known), every dependency a task of either, and no cycle through the new
// tasks. Errors carry the file and line of the task.
func Check(file, plan string, tasks []Task, known map[string][]string) error {
	lines := map[string]int{}
	for _, t := range tasks {
		// A safe name of its own, and with the plan id before it a safe bead id.
		if err := checkName("task id", t.ID); err != nil {
			return errorf(file, t.Line, "%v", err)
		}
		if err := statedir.CheckName(statedir.KindBead, Bead(plan, t.ID)); err != nil {
			return errorf(file, t.Line, "task %q makes the bead id %q: %v", t.ID, Bead(plan, t.ID), err)
		}
		if first, ok := lines[t.ID]; ok {
			return errorf(file, t.Line, "task id %q is used twice (first at line %d); give each task its own id", t.ID, first)
		}
		if _, ok := known[t.ID]; ok {
			return errorf(file, t.Line, "task id %q is already in the queue; give the new task another id", t.ID)
		}
		lines[t.ID] = t.Line
	}
	for _, t := range tasks {
		for _, d := range t.Dependencies {
			_, inPlan := lines[d]
			if _, queued := known[d]; !inPlan && !queued {
				return errorf(file, t.Line, "task %q depends on %q, which is not in the plan; add it, or fix the id", t.ID, d)
			}
		}
	}
	// The walk starts from the new tasks and goes on through the known ones: a cycle among the
	// known tasks alone is the queue's, not this plan's.
	nodes := make([]taskgraph.Node, 0, len(tasks)+len(known))
	for _, t := range tasks {
		nodes = append(nodes, taskgraph.Node{ID: t.ID, Deps: t.Dependencies})
	}
	for _, id := range slices.Sorted(maps.Keys(known)) {
		nodes = append(nodes, taskgraph.Node{ID: id, Deps: known[id]})
	}
	if cycle := taskgraph.New(nodes).CycleFrom(len(tasks)); cycle != nil {
		line := lines[cycle[0]]
		for _, id := range cycle {
			if l, ok := lines[id]; ok && (line == 0 || l < line) {
				line = l
			}
		}
		return errorf(file, line, "dependency cycle: %s; remove one of these dependencies", strings.Join(cycle, " -> "))
	}
	return nil
}
