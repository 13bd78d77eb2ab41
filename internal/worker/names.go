package worker

import (
	"errors"
	"io/fs"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Names are the names of the workers in dir's state.json, in its order, for the shell
// completions (`swarm __complete workers`). It only reads: no lock, no repair of a corrupt
// file, nothing started. state.json is read as every reader reads it (a regular file, never
// through a link, bounded), and a name that CheckName refuses is left out, since it could not
// be typed back as a worker's. No state.json is no workers.
func Names(dir statedir.Swarm) ([]string, error) {
	b, err := statedir.ReadFile(dir.State(), fsx.MaxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s, err := Decode(b)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, w := range s.Workers {
		if statedir.CheckName(statedir.KindWorker, w.Name) == nil {
			names = append(names, w.Name)
		}
	}
	return names, nil
}
