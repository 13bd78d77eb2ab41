package top

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/screen"
	"github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/worker"
)

// The actions on a worker's work: its changes against its base (Diff), where a shell opens on
// it (WorkDir), and a new worker like it (SpawnLike). A swarm loop's row acts on its current
// iteration's worker.

// Bounds on what Diff reads: the diff is the agent's text, and may be a vendored tree.
const (
	maxDiffBytes = 4 << 20
	maxDiffFiles = 2000
	// maxUntrackedShown: new files whose text the diff shows (a git diff each).
	maxUntrackedShown = 100
	diffTimeout       = 20 * time.Second
)

// Diff is a worker's changes against its base: Files as git's name-status says them (the
// untracked files last, "?" before each), Lines the diff itself (text only: a line's terminal
// controls are removed); Truncated when it was longer than the bound.
type Diff struct {
	Dir       string
	Base      string // the commit the changes are against
	Files     []string
	Lines     []string
	Truncated bool
}

// workerOf is the worker a row's actions on its work go to: a worker's, or a swarm loop's
// current one.
func (m *Model) workerOf(r *Row) (*worker.Worker, error) {
	if r.Host != "" {
		return nil, fmt.Errorf("%s runs on host %s: its work is there", r.Name, r.Host)
	}
	if r.worker == nil || m.sw == nil || r.aiwg {
		return nil, fmt.Errorf("%s is not a swarm worker: its work is its tool's (select a worker or a swarm loop)", r.Name)
	}
	return r.worker, nil
}

// WorkDir is where r's worker works: its worktree, else its working directory.
//
// A host's row's is the host's (ShellArgs opens a shell there).
func (m *Model) WorkDir(r *Row) (string, error) {
	w, err := m.workerOf(r)
	if err != nil {
		return "", err
	}
	if w.Worktree != nil && w.Worktree.Path != "" {
		return w.Worktree.Path, nil
	}
	if w.Cwd == "" {
		return "", fmt.Errorf("%s has no working directory recorded", r.Name)
	}
	return w.Cwd, nil
}

// Diff reads r's worker's changes against its base: in its worktree, everything since the
// commit where its branch left the base repository's checked-out branch (committed, staged,
// not staged; new files too), as `git diff $(git merge-base HEAD BASE)` says it. A worker
// without a worktree has no base: refused, saying so.
//
// A host's row's diff is read there, by the same method (ActVerb).
func (m *Model) Diff(ctx context.Context, r *Row) (*Diff, error) {
	if r.Host != "" {
		a, err := m.hostAct(ctx, r, ActRequest{Action: ActDiff})
		if err != nil {
			return nil, err
		}
		return a.Diff, nil
	}
	w, err := m.workerOf(r)
	if err != nil {
		return nil, err
	}
	if w.Worktree == nil || w.Worktree.Path == "" || w.Worktree.BaseRepo == "" {
		return nil, fmt.Errorf("%s has no worktree of its own, so no base to compare with (swarm spawn --worktree makes one)", r.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, diffTimeout)
	defer cancel()
	dir := w.Worktree.Path
	head, _, err := gitBounded(ctx, w.Worktree.BaseRepo, 4096, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("%s: the base repository %s: %w", r.Name, w.Worktree.BaseRepo, err)
	}
	base, _, err := gitBounded(ctx, dir, 4096, "merge-base", "HEAD", strings.TrimSpace(head))
	if err != nil {
		return nil, fmt.Errorf("%s: its worktree %s and its base: %w", r.Name, dir, err)
	}
	d := &Diff{Dir: dir, Base: strings.TrimSpace(base)}
	if !isCommitID(d.Base) {
		return nil, fmt.Errorf("%s: git merge-base said %q, not a commit", r.Name, d.Base)
	}
	// "--" after the commit: a name read back from git is never taken for an option. -z: a
	// file's name may hold a newline.
	names, cut, err := gitBounded(ctx, dir, maxDiffBytes, "diff", "--no-color", "--no-ext-diff", "--no-renames", "--name-status", "-z", d.Base, "--")
	if err != nil {
		return nil, err
	}
	d.Truncated = d.Truncated || cut
	fields := strings.Split(strings.TrimSuffix(names, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		d.Files = append(d.Files, printableLine(fields[i]+" "+fields[i+1]))
	}
	out, cut, err := gitBounded(ctx, dir, maxDiffBytes, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	d.Truncated = d.Truncated || cut
	var untracked []string
	if out != "" {
		untracked = strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	}
	for _, f := range untracked {
		d.Files = append(d.Files, printableLine("? "+f))
	}
	if len(d.Files) > maxDiffFiles {
		d.Files, d.Truncated = d.Files[:maxDiffFiles], true
	}
	text, cut, err := gitBounded(ctx, dir, maxDiffBytes, "diff", "--no-color", "--no-ext-diff", "--no-renames", d.Base, "--")
	if err != nil {
		return nil, err
	}
	d.Truncated = d.Truncated || cut
	d.Lines = textLines(text)
	// The new files' text too, as git diff would show them once added (without adding them:
	// top writes nothing), within what is left of the bound.
	left := maxDiffBytes - int64(len(text))
	for i, f := range untracked {
		if left <= 0 || i >= maxUntrackedShown {
			d.Truncated = true
			break
		}
		// --no-index exits 1 when the files differ, which they do.
		text, cut, _ := gitBounded(ctx, dir, left, "diff", "--no-color", "--no-ext-diff", "--no-index", "--", "/dev/null", f)
		d.Truncated = d.Truncated || cut
		d.Lines = append(d.Lines, textLines(text)...)
		left -= int64(len(text))
	}
	return d, nil
}

// isCommitID: 40 or 64 lowercase hex digits, as git prints a commit's full name.
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// printableLine is one line of git's for a terminal (a file's name: see textLines).
func printableLine(s string) string {
	return strings.Join(textLines(strings.ReplaceAll(s, "\n", " ")), " ")
}

// textLines splits git's output into lines fit for a terminal: a file's text may hold
// escape sequences, which are removed as they are from an agent's screen.
func textLines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Map(func(r rune) rune {
			if r == '\t' {
				return ' '
			}
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, screen.Strip(l))
	}
	return lines
}

// gitBounded runs git in dir and reads at most limit bytes of its output (git.Cmd's
// OutputBounded): past it git is stopped and cut is true. GIT_OPTIONAL_LOCKS=0: git diff and
// status do not refresh the worktree's index, so top writes nothing there and takes no lock
// the agent's own git would meet.
func gitBounded(ctx context.Context, dir string, limit int64, args ...string) (out string, cut bool, err error) {
	b, cut, err := git.Cmd{Dir: dir, Env: []string{"GIT_PAGER=cat", "GIT_OPTIONAL_LOCKS=0"}}.OutputBounded(ctx, limit, args...)
	return string(b), cut, err
}

// ErrNoName is SpawnLike without a name.
var ErrNoName = errors.New("a new worker needs a name: type NAME, then its prompt")

// SpawnLike starts a new worker like r's, as swarm spawn would start it (swarm.Spawn, with
// every check spawn makes: the name, the agent's command, the tmux target): the same command,
// tags and tmux server and session (or a background process), in a new worktree beside r's on
// a branch of its name when r's worker has one (else in its directory); once its agent is
// ready (at most readyWait), prompt, if any, is typed into it as swarm send does.
//
// Like a host's row, the new worker starts on that host (ActVerb; nil worker).
func (m *Model) SpawnLike(ctx context.Context, r *Row, name, prompt string, readyWait time.Duration) (*worker.Worker, error) {
	if r.Host != "" {
		_, err := m.hostAct(ctx, r, ActRequest{Action: ActNew, New: name, Text: prompt})
		return nil, err
	}
	w, err := m.workerOf(r)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, ErrNoName
	}
	sp := swarm.Spec{Name: name, Cmd: w.Cmd, Tags: w.Tags, ReadyWait: prompt != "", ReadyTimeout: readyWait}
	if w.Tmux != nil {
		sp.Tmux = &swarm.TmuxSpec{Session: w.Tmux.Session, Socket: w.Tmux.Socket}
	}
	if err := swarm.CheckName(name, sp.Tmux != nil); err != nil {
		return nil, err
	}
	if wt := w.Worktree; wt != nil && wt.Path != "" && wt.BaseRepo != "" {
		sp.Worktree = &swarm.WorktreeSpec{Repo: wt.BaseRepo, Branch: name, Dir: filepath.Dir(wt.Path)}
	} else {
		sp.Dir = w.Cwd
	}
	nw, err := m.sw.Spawn(ctx, sp)
	if err != nil || nw == nil {
		return nw, err
	}
	if prompt != "" {
		if err := m.sw.Send(ctx, nw, prompt, swarm.SendOptions{}); err != nil {
			return nw, fmt.Errorf("%s started, and the prompt was not sent: %w", name, err)
		}
	}
	return nw, nil
}
