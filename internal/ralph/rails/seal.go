package rails

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// A seal is the file a loop's controller keeps outside the agent's workspace: the rails as a
// person set them, what was spent, where the working tree started (what abort --revert trusts,
// alone). Each kind of loop has its own seal format and place (a swarm loop's rails.json beside
// its state in $SWARM_DIR, an AIWG loop's <id>.json in $SWARM_DIR/aiwg); they are written and
// read here, and a loop refuses rails that need one when the workspace holds its place
// (Inside).

// sealLimit bounds what is read of a seal: a few hundred bytes in practice.
const sealLimit = 1 << 20

// WriteSeal writes v as the seal at path: indented JSON and a newline, mode 0600, all at once
// (a temporary file renamed over it, never through a link). The directory must exist: each
// loop makes it with an error of its own.
func WriteSeal(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// ReadSeal decodes the seal at path into v, read with a bound and never through a link. found
// is false when there is none (err nil) or it cannot be read (err the read's); found with err
// is a file that is not JSON of v's shape. The caller then checks that it is its loop's.
func ReadSeal(path string, v any) (found bool, err error) {
	b, err := statedir.ReadFile(path, sealLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(b, v)
}

// Inside says whether path is dir or under it, links resolved where they can be, and its path
// relative to dir: a seal (or any file the rails keep) inside the tree the agent works in is
// within its reach.
func Inside(dir, path string) (string, bool) {
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(path)
	if err1 != nil || err2 != nil {
		rd, rp = filepath.Clean(dir), filepath.Clean(path)
	}
	rel, err := filepath.Rel(rd, rp)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}
