package swarmrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/internal/statedir"
)

// checkWorktreesDir makes .swarm/worktrees, or checks it: a real directory, never a link. A
// repository can commit a link there (git makes it on clone) and an agent can plant one (its
// worktree is two directories below): through it the tasks' worktrees would be made, and an
// earlier attempt's removed, wherever it points. Refused, with what to do.
func checkWorktreesDir(p Paths) error {
	err := dirBeneath(p.Root, p.Worktrees(), true)
	if errors.Is(err, fsx.ErrLinkBeneath) {
		return usagef("%v; swarm run never works through a link under .swarm: remove it (rm %s) and run again", err, p.Worktrees())
	}
	return err
}

// dirBeneath makes (mkdir) or checks the directory dir below root (the repository's top):
// every directory from the top down a real one, never a link (fsx.OpenDirBeneath), so that the
// run's files are not written, its worktrees made, nor an agent started, committed for or a
// pull request opened, through a link an agent or the repository put there (an agent can put
// one in place of its worktree, another task's or .swarm/worktrees between two steps of the
// run).
func dirBeneath(root, dir string, mkdir bool) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s is not below %s", dir, root)
	}
	d, err := fsx.OpenDirBeneath(root, rel, mkdir)
	if err != nil {
		return err
	}
	return d.Close()
}

// checkWorktree returns an error unless the task's worktree at path is a real directory below
// the repository's top, no link on the way (dirBeneath).
func (r *runner) checkWorktree(path string) error {
	if err := dirBeneath(r.cfg.Repo, path, false); err != nil {
		return fmt.Errorf("the task's worktree: %w", err)
	}
	return nil
}

// excludeSwarmDir adds /.swarm/ to the repository's info/exclude (in the common git directory,
// so that every worktree of the repository has it), unless a line there names it already: the
// prompts' and tasks' worktrees under .swarm are never committed by a git add -A in the main
// worktree. The file is read and replaced, never through a link (a link there is left alone);
// a failure is logged, not fatal: the run's own work does not depend on it.
func (r *runner) excludeSwarmDir(ctx context.Context) {
	common, err := gitCmd(ctx, r.cfg.Repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err == nil {
		err = addExclude(filepath.Join(common, "info"), "/.swarm/")
	}
	if err != nil {
		r.logf("not adding .swarm/ to the repository's info/exclude: %v", oneLine(err))
	}
}

// maxExclude bounds the info/exclude read.
const maxExclude = 1 << 20

// addExclude appends the pattern line to info/exclude in dir unless it is there (with or
// without its leading or trailing '/'). dir is made if missing; dir or the file being a link is
// an error.
func addExclude(dir, line string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a real directory", dir)
	}
	path := filepath.Join(dir, "exclude")
	b, err := statedir.ReadFile(path, maxExclude)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	bare := bytes.Trim([]byte(line), "/")
	for l := range bytes.Lines(b) {
		if bytes.Equal(bytes.Trim(bytes.TrimSpace(l), "/"), bare) {
			return nil
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, "# swarm run's tasks, prompts and worktrees\n"+line+"\n"...)
	return fsx.WriteFileAtomic(path, b, 0o644)
}
