package swarmrun

import (
	"bufio"
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
	err := p.makeDir(p.Worktrees())
	if errors.Is(err, fsx.ErrLinkBeneath) {
		return usagef("%v; swarm run never works through a link under .swarm: remove it (rm %s) and run again", err, p.Worktrees())
	}
	return err
}

// makeDir makes the directory dir below the repository's top (.swarm/history,
// .swarm/worktrees), or checks it: every directory from the top down a real one, never a link
// (fsx.OpenDirBeneath), so that the run's files are not written, nor its worktrees made,
// through a link an agent or the repository put under .swarm.
func (p Paths) makeDir(dir string) error {
	rel, err := filepath.Rel(p.Root, dir)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("%s is not below %s", dir, p.Root)
	}
	d, err := fsx.OpenDirBeneath(p.Root, rel, true)
	if err != nil {
		return err
	}
	return d.Close()
}

// checkWorktree returns an error unless the task's worktree at path is a real directory below
// the repository's top, no link on the way (fsx.OpenDirBeneath): an agent can put a link in
// place of its worktree, another task's or .swarm/worktrees between two steps of the run, and
// the agent's start, its commit and its pull request would then work wherever it points.
func (r *runner) checkWorktree(path string) error {
	rel, err := filepath.Rel(r.cfg.Repo, path)
	if err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("the task's worktree %s is not below %s", path, r.cfg.Repo)
	}
	d, err := fsx.OpenDirBeneath(r.cfg.Repo, rel, false)
	if err != nil {
		return fmt.Errorf("the task's worktree: %w", err)
	}
	return d.Close()
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
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxExclude)
	for sc.Scan() {
		if bytes.Equal(bytes.Trim(bytes.TrimSpace(sc.Bytes()), "/"), bare) {
			return nil
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, "# swarm run's tasks, prompts and worktrees\n"+line+"\n"...)
	return fsx.WriteFileAtomic(path, b, 0o644)
}
