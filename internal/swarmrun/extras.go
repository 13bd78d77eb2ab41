package swarmrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/proc"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/remote"
)

// joblogHeader is GNU parallel's --joblog header (parallel 20221122).
const joblogHeader = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n"

// openJoblog opens the joblog for appending (never through a link), with its header when new.
func openJoblog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--joblog: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == 0 {
		f.WriteString(joblogHeader)
	}
	return f, nil
}

// jobline appends an attempt's line to the joblog: parallel's columns, the command being the
// task id and its attempt; Exitval -1 where no exit code is known (a lost or stopped agent).
func (r *runner) jobline(host, id string, out Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.joblog == nil {
		return
	}
	r.seq++
	code := valueOr(out.ExitCode, -1)
	sig := 0
	if strings.HasPrefix(out.Reason, "agent-signal-") {
		sig = 15
	}
	start := out.Started
	if start.IsZero() {
		start = out.Finished
	}
	fmt.Fprintf(r.joblog, "%d\t%s\t%.3f\t%.3f\t0\t0\t%d\t%d\t%s (attempt %d)\n", r.seq, host,
		float64(start.UnixMilli())/1000, out.Finished.Sub(start).Seconds(), code, sig, id, out.Attempt)
}

// Forge opens pull requests: Argv is run in the task's worktree with the request in its
// environment (SWARM_PR_BRANCH, SWARM_PR_BASE, SWARM_PR_TITLE, SWARM_PR_BODY, SWARM_TASK_ID,
// SWARM_EXECUTION_ID); the last URL it prints is the pull request's, and its number the last
// number of that URL. Push, when set, are the arguments of a git run first, in the same
// directory and environment (git push for gh).
type Forge struct {
	Argv []string
	Push []string
	Env  []string
}

// forgeTimeout bounds each command of a forge.
const forgeTimeout = 2 * time.Minute

// GitHub is the forge of gh: the branch pushed to origin, then gh pr create.
func GitHub(gh string, env []string) *Forge {
	// The branch in full on both sides: git push origin v1 refuses a branch that a tag v1
	// shares ("matches more than one"), or pushes the tag.
	return &Forge{Push: []string{"push", "--quiet", "--set-upstream", "origin", "refs/heads/{branch}:refs/heads/{branch}"},
		Argv: []string{gh, "pr", "create", "--head", "{branch}", "--base", "{base}", "--title", "{title}", "--body", "{body}"}, Env: env}
}

// PRRequest is one pull request to open.
type PRRequest struct {
	Dir, Branch, Base, Title, Body, TaskID, Execution string
}

var urlRE = regexp.MustCompile(`https?://\S+`)
var lastNumberRE = regexp.MustCompile(`(\d+)\D*$`)

// Open opens the pull request of req and returns its number (nil when its URL has none) and URL.
func (f *Forge) Open(ctx context.Context, req PRRequest) (*int, string, error) {
	rep := strings.NewReplacer("{branch}", req.Branch, "{base}", req.Base, "{title}", req.Title, "{body}", req.Body)
	expand := func(argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = rep.Replace(a)
		}
		return out
	}
	env := append(append([]string{}, f.Env...), "SWARM_PR_BRANCH="+req.Branch, "SWARM_PR_BASE="+req.Base, "SWARM_PR_TITLE="+req.Title,
		"SWARM_PR_BODY="+req.Body, "SWARM_TASK_ID="+req.TaskID, "SWARM_EXECUTION_ID="+req.Execution)
	if len(f.Push) > 0 {
		cctx, cancel := context.WithTimeout(ctx, forgeTimeout)
		// The forge's environment is the process's (GitHub): git's is added to the process's.
		_, err := gitx.Cmd{Dir: req.Dir, Env: env}.Run(cctx, expand(f.Push)...)
		cancel()
		if err != nil {
			return nil, "", err
		}
	}
	argv := expand(f.Argv)
	cctx, cancel := context.WithTimeout(ctx, forgeTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		// The first two lines of what it said, on one line.
		said := strings.SplitN(strings.TrimSpace(errb.String()), "\n", 3)
		return nil, "", fmt.Errorf("%s: %v: %s", argv[0], err, strings.Join(said[:min(len(said), 2)], "; "))
	}
	urls := urlRE.FindAllString(out.String(), -1)
	if len(urls) == 0 {
		return nil, "", fmt.Errorf("%s printed no pull request URL", f.Argv[0])
	}
	url := urls[len(urls)-1]
	if m := lastNumberRE.FindStringSubmatch(url); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			return &n, url, nil
		}
	}
	return nil, url, nil
}

// Report is the execution as a markdown report. Every text taken from the state (which is read
// back from the repository, where the agents write) is printed with its control characters
// and bidirectional controls escaped (record.Printable): the report is printed on a terminal
// by swarm run history, and a branch "fix/\u202egnp.exe" must not read as "fix/exe.png".
func Report(st *State) string {
	p := record.Printable
	var b strings.Builder
	fmt.Fprintf(&b, "# Execution %s\n\n", p(st.ExecutionID))
	fmt.Fprintf(&b, "Manifest **%s** (`%s`), base branch `%s`, status **%s**.\n\n", p(st.ManifestName), p(st.ManifestPath), p(st.BaseBranch), p(st.Status))
	if s := st.Summary; s != nil {
		fmt.Fprintf(&b, "| tasks | completed | failed | blocked | skipped | pending | wall time | parallel speedup |\n|---|---|---|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %.0f s | %.2f |\n\n", s.TotalTasks, s.Completed, s.Failed, s.Blocked, s.Skipped, s.Pending, s.TotalDurationSeconds, s.ParallelSpeedup)
	}
	b.WriteString("## Tasks\n\n| task | status | agent | attempt | retries | duration | commit | PR | error |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, id := range st.Order {
		t := st.Tasks[id]
		agentID, attempt, retries, dur, sha, pr := "", "", "", "", "", ""
		if tr := t.Trace; tr != nil {
			agentID, attempt, retries, pr = tr.AgentID, strconv.Itoa(tr.Attempt), strconv.Itoa(tr.RetryCount), valueOr(tr.PRURL, "")
			if tr.DurationSeconds != nil {
				dur = fmt.Sprintf("%.1f s", *tr.DurationSeconds)
			}
			if tr.CommitSHA != nil && len(*tr.CommitSHA) >= 12 {
				sha = "`" + (*tr.CommitSHA)[:12] + "`"
			}
		}
		// A task's error may hold a host's text or an agent's: it is made printable before
		// the markdown (which swarm run history prints on a terminal).
		msg := strings.ReplaceAll(remote.Printable(valueOr(t.Error, TaskError{}).Message), "|", "\\|")
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p(id), p(t.Status), p(agentID), attempt, retries, dur, p(sha), p(pr), p(msg))
	}
	if s := st.Summary; s != nil {
		b.WriteString("\n## Suggested merge order\n\n")
		for i, id := range s.SuggestedMergeOrder {
			// The summary's ids are not checked against the tasks (validate): one that is none
			// has no branch.
			fmt.Fprintf(&b, "%d. `%s` (%s)\n", i+1, p(valueOr(st.Tasks[id], Task{}).Branch), p(id))
		}
		if c := s.MergeConflict; c != nil {
			fmt.Fprintf(&b, "\nThen `%s` (%s) does not merge cleanly: %s.\n", p(c.Branch), p(c.TaskID), p(remote.Printable(c.Message)))
		}
	}
	return b.String()
}

// Abort ends the execution of the repository at p for good: a run at work is stopped (SIGTERM:
// it stops its agents and records them), then every task that did not end is skipped
// (error "aborted"), the summary is made and the state kept in history.
func Abort(ctx context.Context, p Paths, repo string) (*State, error) {
	st, err := ReadState(p.State())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("no execution in %s to abort", p.Dir())
		}
		return nil, err
	}
	if st.Status != ExecRunning && st.Status != ExecPaused {
		return nil, usagef("execution %s is %s already; nothing to abort", st.ExecutionID, st.Status)
	}
	// The pid is read back from a file an agent can write: only a run is signalled (its command
	// line holds "run"; a pid gone or not the user's is none), never whatever process it names.
	if proc.Holds(st.RunnerPID, []string{"run"}) {
		syscall.Kill(st.RunnerPID, syscall.SIGTERM)
	}
	// The run lets go of its lock once its agents are stopped and recorded.
	lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	unlock, err := fsx.LockFile(lctx, p.Lock())
	cancel()
	if err != nil {
		return nil, fmt.Errorf("the run of %s did not stop: %w", st.ExecutionID, err)
	}
	defer unlock()
	if st, err = ReadState(p.State()); err != nil {
		return nil, err
	}
	for _, t := range st.Tasks {
		switch t.Status {
		case Pending, Queued, Assigned, Running:
			t.Status = Skipped
			t.Error = &TaskError{Type: ErrAborted, Message: "the execution was aborted (swarm run --abort)", Timestamp: now()}
		}
	}
	for _, a := range st.Agents {
		a.Status, a.CurrentTask = AgentIdle, nil
	}
	st.RunnerPID = 0
	return st, finalize(ctx, p, repo, st, nil)
}
