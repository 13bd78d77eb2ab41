package fsx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// MaxStateFile is the largest state file Update reads. swarm's state.json holds a few
// kilobytes per worker; a file beyond this is not one of ours and is refused, not loaded.
const MaxStateFile = 64 << 20

// ErrUnchanged, returned by the function given to Update, leaves the file as it is; Update then
// returns nil.
var ErrUnchanged = errors.New("state file unchanged")

// Update is a locked read-modify-write of a state file (swarm's state.json, ralph's queues): it
// takes the lock lockPath (waiting until ctx ends), reads path (at most MaxStateFile bytes, a
// regular file only), calls fn with its content (nil when the file does not exist, empty but not nil when it is
// empty) and writes
// what fn returns atomically (temp file in the same directory, fsync, rename, directory fsync),
// mode 0600, since state files hold environments and prompts. Every writer of the file must go
// through Update with the same lockPath; readers need no lock.
//
// A symbolic link at path is refused, never followed: a state directory shared by mistake must
// not let another user point our writes at a file of their choosing. fn's error is returned as
// it is, and nothing is written; ErrUnchanged writes nothing and is not an error.
func Update(ctx context.Context, path, lockPath string, fn func(old []byte) ([]byte, error)) error {
	unlock, err := lockFile(ctx, lockPath, path)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := readFileAt(Cwd, path, MaxStateFile, nil, syscall.O_NOFOLLOW)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", path, err)
	}
	data, err := fn(old)
	if errors.Is(err, ErrUnchanged) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return err
	}
	syncDirOf(path)
	return nil
}

// UpdateJSON is Update for a file holding one JSON document of type T: fn gets the decoded
// value (T's zero value when the file is missing or empty; a UTF-8 BOM is accepted) to change in
// place, and the result is written as jq prints it (two-space indent, final newline). A file
// that does not decode is an error and is left alone. Formats that must match another tool byte
// for byte (swarm's state.json has no final newline) use Update with their own encoder.
func UpdateJSON[T any](ctx context.Context, path, lockPath string, fn func(v *T) error) error {
	return Update(ctx, path, lockPath, func(old []byte) ([]byte, error) {
		var v T
		if doc := bytes.TrimSpace(StripBOM(old)); len(doc) > 0 {
			if err := json.Unmarshal(doc, &v); err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
		}
		if err := fn(&v); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	})
}
