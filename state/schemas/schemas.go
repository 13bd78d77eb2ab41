// Package schemas embeds the JSON Schemas of the toolkit's state files, so every binary carries
// the schemas it writes against and validate-state works in a workspace that has none of its own.
//
// Each schema is named <kind>.schema.json, where kind is what validate-state's --kind takes:
// run, result, swarm-state, ralph-state, loop-state, loop-analytics, task-queue, retry-queue,
// progress, agent-state, manifest and execution.
package schemas

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.schema.json
var files embed.FS

// Suffix is the file name suffix shared by every schema file, embedded or in a workspace.
const Suffix = ".schema.json"

// FileName returns the file name of kind's schema, as it is embedded and as a workspace keeps it.
func FileName(kind string) string { return kind + Suffix }

// Read returns the embedded schema document for kind.
func Read(kind string) ([]byte, error) {
	b, err := files.ReadFile(FileName(kind))
	if err != nil {
		return nil, fmt.Errorf("no embedded schema for kind %q", kind)
	}
	return b, nil
}

// Kinds lists the kinds that have an embedded schema, sorted.
func Kinds() []string {
	entries, _ := fs.ReadDir(files, ".")
	var kinds []string
	for _, e := range entries {
		kinds = append(kinds, strings.TrimSuffix(e.Name(), Suffix))
	}
	sort.Strings(kinds)
	return kinds
}
