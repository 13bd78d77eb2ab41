package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// fields are the keys a task may have in a YAML or JSON plan.
const fields = "id, description, dependencies"

// parseYAML reads a YAML sequence of task mappings, or a mapping whose "tasks" holds one.
func parseYAML(file string, data []byte) ([]Task, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	list := doc.Content[0]
	if list.Kind == yaml.MappingNode {
		var tasks *yaml.Node
		for i := 0; i+1 < len(list.Content); i += 2 {
			if list.Content[i].Value == "tasks" {
				tasks = list.Content[i+1]
			}
		}
		if tasks == nil {
			return nil, errorf(file, list.Line, "a plan is a list of tasks, or a mapping with a \"tasks\" list")
		}
		list = tasks
	}
	if list.Kind != yaml.SequenceNode {
		return nil, errorf(file, list.Line, "a plan is a list of tasks {%s}", fields)
	}
	var tasks []Task
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, errorf(file, item.Line, "a task is a mapping {%s}", fields)
		}
		t := Task{Line: item.Line}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k, v := item.Content[i], item.Content[i+1]
			switch k.Value {
			case "id":
				if !isString(v) {
					return nil, errorf(file, v.Line, "id must be a string (quote it: id: \"%s\")", v.Value)
				}
				t.ID = v.Value
			case "description":
				if !isString(v) {
					return nil, errorf(file, v.Line, "description must be a string")
				}
				t.Description = v.Value
			case "dependencies":
				if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
					continue
				}
				if v.Kind != yaml.SequenceNode {
					return nil, errorf(file, v.Line, "dependencies must be a list of task ids, like [t1, t2]")
				}
				for _, d := range v.Content {
					if !isString(d) || d.Value == "" {
						return nil, errorf(file, d.Line, "a dependency must be a task id (a string)")
					}
					t.Dependencies = append(t.Dependencies, d.Value)
				}
			default:
				return nil, errorf(file, k.Line, "unknown key %q in a task; a task has %s", k.Value, fields)
			}
		}
		if err := complete(file, &t); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// isString says whether a YAML node is a string scalar ("1" quoted is one; 1 is not).
func isString(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!str" }

// yamlError turns the YAML decoder's "yaml: line N: msg" into file:N: msg.
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr == nil {
		_, rest, _ := strings.Cut(msg, ":")
		return errorf(file, line, "not valid YAML:%s", rest)
	}
	return errorf(file, 1, "not valid YAML: %s", msg)
}

// complete checks what every task needs.
func complete(file string, t *Task) error {
	if t.ID == "" {
		return errorf(file, t.Line, "a task has no id; give it one (id: t1)")
	}
	if strings.TrimSpace(t.Description) == "" {
		return errorf(file, t.Line, "task %q has no description; say what the agent is to do", t.ID)
	}
	return nil
}

// parseJSON reads a JSON array of task objects, or an object whose "tasks" holds one. JSON is
// read with encoding/json, not as YAML: JSON indented with tabs is not YAML. Each task's line is
// where its object starts.
func parseJSON(file string, data []byte) ([]Task, error) {
	lines := lineCounter{data: data, line: 1}
	var se *json.SyntaxError
	if err := json.Unmarshal(data, new(json.RawMessage)); errors.As(err, &se) {
		return nil, errorf(file, lines.at(se.Offset), "not valid JSON: %v", se)
	}
	start := bytes.TrimLeft(data, " \t\r\n\ufeff")
	offset := int64(len(data) - len(start))
	if len(start) > 0 && start[0] == '{' {
		var top map[string]json.RawMessage
		json.Unmarshal(data, &top) // a valid object: nothing to fail
		raw, ok := top["tasks"]
		if !ok {
			return nil, errorf(file, 1, "a plan is a list of tasks, or an object with a \"tasks\" list")
		}
		offset = int64(bytes.Index(data, raw))
		start = raw
	}
	dec := json.NewDecoder(bytes.NewReader(start))
	if tok, _ := dec.Token(); tok != json.Delim('[') { // nil on an error
		return nil, errorf(file, lines.at(offset), "a plan is a list of tasks {%s}", fields)
	}
	var tasks []Task
	for dec.More() {
		t := Task{Line: lines.at(skipSpace(data, offset+dec.InputOffset()))}
		var item map[string]json.RawMessage
		if err := dec.Decode(&item); err != nil {
			return nil, errorf(file, t.Line, "a task is an object {%s}", fields)
		}
		for _, k := range slices.Sorted(maps.Keys(item)) { // the same error first, every time
			v := item[k]
			var err error
			switch k {
			case "id":
				err = json.Unmarshal(v, &t.ID)
			case "description":
				err = json.Unmarshal(v, &t.Description)
			case "dependencies":
				var deps []string // a null id is decoded as "", refused as an empty one
				if json.Unmarshal(v, &deps) != nil || slices.Contains(deps, "") {
					return nil, errorf(file, t.Line, "dependencies must be a list of task ids, like [\"t1\", \"t2\"]")
				}
				t.Dependencies = append(t.Dependencies, deps...)
			default:
				return nil, errorf(file, t.Line, "unknown key %q in a task; a task has %s", k, fields)
			}
			if err != nil {
				return nil, errorf(file, t.Line, "%s must be a string", k)
			}
		}
		if err := complete(file, &t); err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// skipSpace moves past the separators before a value (the decoder's offset is before them).
func skipSpace(data []byte, at int64) int64 {
	return int64(len(data) - len(bytes.TrimLeft(data[at:], " \t\r\n,")))
}

// lineCounter gives the 1-based lines of increasing offsets, counting each byte once (counting
// from the start for every task of a large plan took time quadratic in its size).
type lineCounter struct {
	data []byte
	off  int64
	line int
}

func (c *lineCounter) at(off int64) int {
	off = min(max(off, c.off), int64(len(c.data)))
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.off = off
	return c.line
}
