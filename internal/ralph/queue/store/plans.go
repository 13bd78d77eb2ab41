package store

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/agentfleet/fleet/internal/statedir"
)

// Plans are the ids of the plans that have a task queue here (task-queue-<plan>.json), for the
// shell completions (`ralph __complete plans`), in the directory's order. Only regular files
// count (a link is not followed; .claude/ralph itself must be a real directory of the user's);
// the caller checks each id before it trusts it. No directory is no plans.
func (d Dir) Plans() ([]string, error) {
	if err := statedir.CheckDir(d.Root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(d.Root)
	if err != nil {
		return nil, err
	}
	var plans []string
	for _, e := range entries {
		// A plan's id is what a queue's name has between its prefix and its suffix.
		id := strings.TrimSuffix(strings.TrimPrefix(e.Name(), "task-queue-"), ".json")
		if e.Type().IsRegular() && id != "" && e.Name() == "task-queue-"+id+".json" {
			plans = append(plans, id)
		}
	}
	return plans, nil
}
