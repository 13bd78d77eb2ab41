package mergeback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/statedir"
)

// Record is the merge record of one run (.swarm/history/<ID>.merge.json for swarm run,
// .claude/ralph/merge-<PLAN>.json for the queue): every merge landed, and why the last Merge
// stopped. A later Merge skips what it lists as landed on the same branch.
type Record struct {
	Owner  string   `json:"owner"`
	Merges []Merged `json:"merges"`
	// Stopped is why the last Merge stopped, null when it went to the end.
	Stopped *Stop `json:"stopped"`
}

// Merged is one merge landed.
type Merged struct {
	ID     string `json:"task_id"`
	Branch string `json:"branch"`
	// BranchCommit is the branch's commit that was merged.
	BranchCommit string `json:"branch_commit"`
	// Into is the branch it landed on; Onto that branch's commit before; Commit the merge.
	Into   string `json:"into"`
	Onto   string `json:"onto"`
	Commit string `json:"commit"`
	At     string `json:"at"`
	// Tested says the test command passed on the merge (false: there was none).
	Tested bool `json:"tested"`
	// ResolvedBy names the agent that resolved its conflict, when one did.
	ResolvedBy string `json:"resolved_by,omitempty"`
}

// Stop is why a Merge stopped before the end of its order.
type Stop struct {
	ID     string `json:"task_id"`
	Branch string `json:"branch"`
	Into   string `json:"into"`
	// Reason is StopConflict, StopUnresolved or StopTest.
	Reason string   `json:"reason"`
	Files  []string `json:"files,omitempty"`
	// Detail is the test's or the resolver's failure, one line.
	Detail string `json:"detail,omitempty"`
	// TestTail is the test output's last lines.
	TestTail   []string `json:"test_tail,omitempty"`
	ResolvedBy string   `json:"resolved_by,omitempty"`
	At         string   `json:"at,omitempty"`
}

// landedAt is the last merge commit the record has of task id into branch into ("" : none).
func (r *Record) landedAt(id, into string) string {
	for i := len(r.Merges) - 1; i >= 0; i-- {
		if m := r.Merges[i]; m.ID == id && m.Into == into {
			return m.Commit
		}
	}
	return ""
}

// maxRecord bounds the record read.
const maxRecord = 16 << 20

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// ReadRecord reads the merge record at path (nil, nil when there is none): a regular file,
// never through a link, bounded, every field checked.
func ReadRecord(path string) (*Record, error) {
	b, err := statedir.ReadFile(path, maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(fsx.StripBOM(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s is not a merge record: %v; move it aside to merge afresh", path, err)
	}
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("%s: %v; move it aside to merge afresh", path, err)
	}
	return &r, nil
}

// validate refuses a record whose names or commits are not what Merge writes.
func (r *Record) validate() error {
	if r.Merges == nil {
		return errors.New("merges is missing")
	}
	for i, m := range r.Merges {
		for _, c := range []string{m.BranchCommit, m.Onto, m.Commit} {
			if !commitRE.MatchString(c) {
				return fmt.Errorf("merges[%d]: %q is not a commit id", i, c)
			}
		}
		if err := names(m.ID, m.Branch, m.Into); err != nil {
			return fmt.Errorf("merges[%d]: %v", i, err)
		}
		if _, ok := record.ParseTime(m.At); !ok {
			return fmt.Errorf("merges[%d]: at %q is not a time", i, m.At)
		}
	}
	if s := r.Stopped; s != nil {
		if err := names(s.ID, s.Branch, s.Into); err != nil {
			return fmt.Errorf("stopped: %v", err)
		}
		if s.Reason != StopConflict && s.Reason != StopUnresolved && s.Reason != StopTest {
			return fmt.Errorf("stopped: unknown reason %q", s.Reason)
		}
	}
	return nil
}

// names refuses an empty name, one starting with '-' (an option to git) or holding a control
// character.
func names(ns ...string) error {
	for _, n := range ns {
		if n == "" || strings.HasPrefix(n, "-") || strings.ContainsFunc(n, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("invalid name %q", n)
		}
	}
	return nil
}

// lockRecord takes the record's sidecar lock, its directory made below p.Beneath (never
// through a link): two merges of one run never work at once. It does not wait.
func lockRecord(ctx context.Context, p Plan) (func() error, error) {
	if err := makeDirBeneath(p.Beneath, filepath.Dir(p.Record)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	unlock, err := fsx.Lock(ctx, p.Record)
	if errors.Is(err, fsx.ErrLocked) || errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("another merge of %s is at work (it holds %s); wait for it to end", p.Owner, fsx.LockPath(p.Record))
	}
	return unlock, err
}

// writeRecord replaces the record atomically (a link at its path is replaced, never written
// through), its directory checked below p.Beneath.
func writeRecord(p Plan, r *Record) error {
	if err := makeDirBeneath(p.Beneath, filepath.Dir(p.Record)); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(p.Record, append(b, '\n'), 0o600)
}

// makeDirBeneath makes dir below root, every directory on the way a real one (no link).
func makeDirBeneath(root, dir string) error {
	if root == "" {
		return errors.New("no directory to keep the merge record beneath")
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return fmt.Errorf("%s is not below %s", dir, root)
	}
	d, err := fsx.OpenDirBeneath(root, rel, true)
	if err != nil {
		return err
	}
	return d.Close()
}
