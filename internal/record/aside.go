package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentfleet/fleet/internal/statedir"
)

// Aside is a directory a record no reader could read was set aside in (SetAside).
type Aside struct {
	// Dir is attempts/<bead>/unreadable-<stamp>[-N] of the state directory.
	Dir string
	// Path is where the record is now: Dir/run.json or Dir/result.json.
	Path string
}

// AsideName is the name a record of kind gets in its Aside directory: run.json, result.json.
func AsideName(kind Kind) string { return string(kind) + ".json" }

// SetAside moves the record at path (a run or result record of bead, of kind), which no reader
// can read (not JSON, not an object, a field of the wrong type), out of the way into the
// state directory's attempts archive: a new directory attempts/<bead>/unreadable-<UTC time>
// (statedir.Dir.AttemptAside; -2, -3 … when one of that second exists), as run.json or
// result.json. It is renamed, not copied: nothing of it is lost, and no reader of runs/ or
// results/ trips on it again. The caller holds the record's lock, and has checked that path
// is a regular file.
func SetAside(state statedir.Dir, kind Kind, bead, path string, now time.Time) (*Aside, error) {
	dir, err := NewAsideDir(state, bead, now)
	if err != nil {
		return nil, err
	}
	to, err := MoveAside(path, dir, kind)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &Aside{Dir: dir, Path: to}, nil
}

// MoveAside renames the record at path, of kind, into dir (NewAsideDir's) and returns its path
// there.
func MoveAside(path, dir string, kind Kind) (string, error) {
	to := filepath.Join(dir, AsideName(kind))
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("setting aside %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return to, nil
}

// NewAsideDir makes a new directory attempts/<bead>/unreadable-<stamp> in state (0700, never one
// that exists, never through a link) and returns it.
func NewAsideDir(state statedir.Dir, bead string, now time.Time) (string, error) {
	if err := CheckBead(bead); err != nil {
		return "", err
	}
	if err := statedir.Mkdir(state.AttemptDir(bead)); err != nil {
		return "", err
	}
	base := state.AttemptAside(bead, now.UTC().Format("20060102T150405Z"))
	for n := 1; n < 1000; n++ {
		dir := base
		if n > 1 {
			dir = base + "-" + strconv.Itoa(n)
		}
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, os.ErrExist) {
			continue // a link planted there is not followed either: Mkdir never does
		}
		if err != nil {
			return "", fmt.Errorf("setting aside a record of %s: %w", bead, err)
		}
		return dir, nil
	}
	return "", fmt.Errorf("setting aside a record of %s: %s-2 to -999 all exist", bead, base)
}
