package plan

import (
	"regexp"
	"strings"
)

// taskLine is a markdown task list item: "- [ ] rest", "* [x] rest", "1. [ ] rest".
var taskLine = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+\[([ xX])\]\s*(.*)$`)

// after is a dependency clause: "(after t0, t2)"; "depends on" is accepted too.
var after = regexp.MustCompile(`\((?i:after|depends on)\b([^)]*)\)`)

// fence opens or closes a code block, whose lines are never tasks.
var fence = regexp.MustCompile("^\\s*(```|~~~)")

// parseMarkdown reads every task list item outside code blocks as "ID: description", with its
// dependencies in "(after a, b)" clauses, which are taken out of the description. Other lines
// (headings, prose, nested notes) are not tasks and are left alone.
func parseMarkdown(file string, data []byte) ([]Task, error) {
	var tasks []Task
	inCode := false
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if fence.MatchString(line) {
			inCode = !inCode
			continue
		}
		m := taskLine.FindStringSubmatch(line)
		if inCode || m == nil {
			continue
		}
		id, desc, ok := strings.Cut(strings.TrimSpace(m[2]), ":")
		id = strings.TrimSpace(id)
		if !ok || id == "" || strings.ContainsAny(id, " \t") {
			return nil, errorf(file, n, "task line %q has no id; write it as '- [ ] t1: description'", truncate(strings.TrimSpace(line)))
		}
		t := Task{ID: id, Done: m[1] != " ", Line: n}
		for _, dm := range after.FindAllStringSubmatch(desc, -1) {
			for _, d := range strings.Split(dm[1], ",") {
				d = strings.TrimSpace(d)
				if d == "" {
					return nil, errorf(file, n, "task %q has an empty dependency in %q; list ids as '(after t0, t2)'", id, dm[0])
				}
				t.Dependencies = append(t.Dependencies, d)
			}
		}
		t.Description = strings.Join(strings.Fields(after.ReplaceAllString(desc, "")), " ")
		if t.Description == "" {
			return nil, errorf(file, n, "task %q has no description; say what the agent is to do after the id", id)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// truncate shortens a line quoted in an error.
func truncate(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}
