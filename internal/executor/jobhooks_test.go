package executor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/executor"
	"github.com/agentfleet/fleet/internal/record"
)

// TestLocalJobHooks: what a policy asks of a local attempt besides the suite's cases (ralph
// queue run's): the command line Prepare returns is the one run, a Prepare that refuses
// launches nothing, the run record names Job.Repo, an agent silent for Inactivity is stopped,
// and the Outcome carries the record it was judged by.
func TestLocalJobHooks(t *testing.T) {
	w := newLocalWorld(t)
	e, err := w.setup.open()
	if err != nil {
		t.Fatal(err)
	}
	run := func(j executor.Job) executor.Outcome { return e.Run(context.Background(), e.Slots()[0], j) }

	t.Run("prepared command line and repo", func(t *testing.T) {
		args := filepath.Join(t.TempDir(), "args")
		j := w.job(t, "prepared", "args:"+args)
		j.Repo = w.repo
		numbered := 0
		j.Prepare = func(n int, argv []string) ([]string, error) {
			numbered = n
			return append(argv, "--settings", "hooks.json"), nil
		}
		out := run(j)
		if out.Status != record.StatusDone || numbered != 1 || out.Err != nil {
			t.Fatalf("outcome %+v, prepared attempt %d: want attempt 1 done", out, numbered)
		}
		if got := readFile(args); got != "--settings\nhooks.json\n" {
			t.Errorf("the agent's arguments: %q, want those Prepare added", got)
		}
		if out.Run == nil || out.Run.Repo != w.repo || out.Run.Attempt != 1 || out.Run.Status != record.StatusDone {
			t.Errorf("the outcome's run record %+v: want attempt 1's, done, repo %s", out.Run, w.repo)
		}
	})

	t.Run("refused", func(t *testing.T) {
		log := filepath.Join(t.TempDir(), "agents.log")
		j := w.job(t, "refused", "once:"+log)
		taken := errors.New("the task was taken")
		launched := false
		j.Prepare = func(int, []string) ([]string, error) { return nil, taken }
		j.Launched = func(int) { launched = true }
		out := run(j)
		if out.Status != record.StatusFailed || !errors.Is(out.Err, taken) || launched || !strings.Contains(out.Reason, taken.Error()) {
			t.Fatalf("outcome %+v (launched %v): want failed with Prepare's error, nothing launched", out, launched)
		}
		if _, err := os.Stat(log); err == nil {
			t.Fatalf("the agent ran:\n%s", readFile(log))
		}
	})

	t.Run("inactive", func(t *testing.T) {
		pid := filepath.Join(t.TempDir(), "pid")
		j := w.job(t, "inactive", "pid:"+pid+" hang")
		j.Inactivity, j.Timeout = time.Second, time.Minute
		out := run(j)
		if out.Status != record.StatusTimeout || !strings.HasPrefix(out.Reason, "inactivity-timeout") {
			t.Fatalf("outcome %+v, want an inactivity timeout", out)
		}
		gone(t, pid)
	})
}
