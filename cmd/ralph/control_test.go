package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/schema"
	"github.com/agentfleet/fleet/internal/statedir"
	swarmlib "github.com/agentfleet/fleet/internal/swarm"
	"github.com/agentfleet/fleet/internal/testenv/postmortem"
)

// TestControlWins is the test of the Python swarm's worst bugs (kill and pause lost to
// a running monitor, which wrote its stale state over them and started the next iteration):
// trials of pause, ralph stop and swarm kill sent at random moments to loops whose agent exits
// at once (an iteration every ~100 ms), some of them the instant an iteration ends (between two
// iterations). After the command returns: no iteration starts (the START lines stay as they
// were), the state keeps what the command wrote (paused; stopped and killed), and after a kill
// no worker runs.
func TestControlWins(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed")
	}
	if testing.Short() {
		t.Skip("needs tmux") // make test-short leaves out what starts agents in tmux
	}
	trials := 100
	if loopRace {
		trials = 12
	}
	if n := os.Getenv("RALPH_TEST_TRIALS"); n != "" {
		fmt.Sscan(n, &trials)
	}
	work := t.TempDir()
	sockDir, err := os.MkdirTemp("", "rlc")
	if err != nil {
		t.Fatal(err)
	}
	swarmDir := filepath.Join(work, "sd")
	t.Cleanup(func() {
		socks, _ := filepath.Glob(filepath.Join(sockDir, "tmux-*", "*"))
		postmortem.OnFailure(t, work, socks...)
		cleanupSwarm(swarmDir, sockDir)
	})
	t.Setenv("TMUX_TMPDIR", sockDir)
	t.Setenv("TMUX", "")
	t.Setenv("SWARM_DIR", swarmDir)
	t.Setenv("RALPH_TEST_BACKOFF", "10ms")
	t.Setenv("STATE_DIR", "")
	agent, _ := filepath.Abs("testdata/loop-agent.sh")
	plan := filepath.Join(work, "plan")
	os.WriteFile(plan, []byte("exit 0\n"), 0o644)
	prompt := filepath.Join(work, "PROMPT.md")
	os.WriteFile(prompt, []byte("do the next thing\n"), 0o644)
	ralph, err := exec.LookPath("ralph") // the test binary, put on PATH by testscript.Main
	if err != nil {
		t.Fatal(err)
	}
	swarm, _ := exec.LookPath("swarm")
	sd := statedir.Swarm{Root: swarmDir}
	sch, err := schema.Load("ralph-state", "")
	if err != nil {
		t.Fatal(err)
	}
	cmdRun := func(ctx context.Context, bin string, args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		return string(out), err
	}
	starts := func(name string) int {
		b, _ := os.ReadFile(sd.RalphIterations(name))
		return bytes.Count(b, []byte("[START]"))
	}
	ends := func(name string) int {
		b, _ := os.ReadFile(sd.RalphIterations(name))
		return bytes.Count(b, []byte("[END]"))
	}
	state := func(name string) (status, reason string, raw []byte) {
		raw, _ = os.ReadFile(sd.RalphState(name))
		var st struct {
			Status string  `json:"status"`
			Reason *string `json:"exit_reason"`
		}
		json.Unmarshal(raw, &st)
		if st.Reason != nil {
			reason = *st.Reason
		}
		return st.Status, reason, raw
	}

	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	kinds := []string{"pause", "stop", "kill"}
	if swarm == "" {
		kinds = kinds[:2]
	}
	if k := os.Getenv("RALPH_TEST_KINDS"); k != "" {
		kinds = strings.Split(k, ",")
	}
	trial := func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		name := fmt.Sprintf("t%d", i)
		kind := kinds[i%len(kinds)]
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		out, err := cmdRun(ctx, ralph, "spawn", "--name", name, "--session", "s"+name, "--prompt-file", prompt, "--no-worktree",
			// Its agent changes nothing: without --no-progress 0 the breaker would end the loop
			// (no-progress) before the control the trial races against it.
			"--max-iterations", "1000", "--no-progress", "0", "--", "sh", agent, plan, filepath.Join(work, name+".count"))
		if err != nil {
			fail("%s: spawn: %v\n%s", name, err, out)
			return
		}
		// Half the trials at a random moment, half the instant an iteration ends.
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		} else {
			target := 1 + rng.IntN(3)
			for deadline := time.Now().Add(20 * time.Second); ends(name) < target && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		switch kind {
		case "pause":
			out, err = cmdRun(ctx, ralph, "pause", name)
		case "stop":
			out, err = cmdRun(ctx, ralph, "stop", name)
		case "kill":
			out, err = cmdRun(ctx, swarm, "kill", name)
		}
		if err != nil {
			fail("%s: %s: %v\n%s", name, kind, err, out)
			return
		}
		n0 := starts(name)
		s0, r0, _ := state(name)
		// Long enough for several iterations of this agent to start, had one been allowed to.
		time.Sleep(500 * time.Millisecond)
		n1 := starts(name)
		s1, r1, raw := state(name)
		log, _ := os.ReadFile(sd.RalphIterations(name))
		switch {
		case n1 != n0:
			fail("%s (%s): %d iteration(s) started after the command returned:\n%s", name, kind, n1-n0, log)
		case kind == "pause" && (s0 != "paused" || s1 != "paused"):
			fail("%s (pause): status %q then %q, want paused:\n%s", name, s0, s1, raw)
		case kind != "pause" && (s1 != "stopped" || r1 != "killed" || s0 != s1 || r0 != r1):
			fail("%s (%s): status %q/%q then %q/%q, want stopped/killed:\n%s", name, kind, s0, r0, s1, r1, raw)
		}
		if problems, err := sch.Validate(raw); err != nil || len(problems) > 0 {
			fail("%s: state does not validate: %v %v", name, err, problems)
		}
		if kind != "pause" {
			// Every iteration's run record is closed.
			runs, _ := filepath.Glob(filepath.Join(swarmDir, "state", "runs", name+"-*.json"))
			for _, r := range runs {
				if b, _ := os.ReadFile(r); bytes.Contains(b, []byte(`"status":"running"`)) {
					fail("%s (%s): %s is still running after the command returned:\n%s\niterations.log:\n%s", name, kind, filepath.Base(r), b, log)
				}
			}
			h, err := swarmlib.Open(swarmDir, swarmlib.Options{Warnings: os.Stderr})
			if err == nil {
				if w, _ := h.Worker(name); w != nil && h.Live(ctx, w).Running {
					fail("%s (%s): its worker still runs after the command returned", name, kind)
				}
			}
		} else {
			cmdRun(ctx, ralph, "stop", name)
		}
	}
	parallel := 10
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < trials; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			trial(i)
		}()
	}
	wg.Wait()
	t.Logf("%d trials (%s) in %s", trials, strings.Join(kinds, ", "), time.Since(start).Round(time.Millisecond))
	for _, f := range failures {
		t.Error(f)
	}
}
