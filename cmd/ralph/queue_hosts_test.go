package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gitx "github.com/agentfleet/fleet/internal/git"
	"github.com/agentfleet/fleet/internal/testenv"
	"github.com/agentfleet/fleet/internal/testenv/labconn"
	"github.com/agentfleet/fleet/internal/testenv/sshlab"
)

// TestQueueRunHosts: `ralph queue run PLAN --hosts hosts.yaml`, the binary as a user runs it,
// on two sshd hosts (internal/testenv/sshlab) whose hosts.yaml names their keys, clones,
// binaries, state directories and agents config: the hosts are checked at this build's
// version, every task is done on a host (its agent's words in the records brought back here,
// cost included), and each task's branch agent/<bead> here holds the file its agent made there.
func TestQueueRunHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sshd hosts in network namespaces")
	}
	lab := sshlab.New(t, 2)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	const version = "sshlab-ralph"
	for _, tool := range []string{"ralph", "dispatch"} {
		if out, err := exec.Command("go", "build", "-ldflags", "-X github.com/agentfleet/fleet/internal/cli.version="+version,
			"-o", filepath.Join(bin, tool), "../"+tool).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v: %s", tool, err, out)
		}
	}
	repo := filepath.Join(tmp, "repo")
	if err := testenv.GitRepo(repo); err != nil {
		t.Fatal(err)
	}
	agentSh, _ := filepath.Abs("testdata/queue-agent.sh")
	config := filepath.Join(tmp, "agents.json")
	os.WriteFile(config, fmt.Appendf(nil, `{"fake": {"command": %q, "terminal": false, "default_model": "m1"}}`, agentSh), 0o644)
	hostsFile := labconn.HostsFile(t, lab, tmp, repo, config, bin)
	planFile := filepath.Join(tmp, "plan.md")
	os.WriteFile(planFile, []byte("- [ ] t1: touch:t1.txt cost:0.25\n- [ ] t2: touch:t2.txt\n- [ ] t3: touch:t3.txt (after t1, t2)\n"), 0o600)
	stateDir := filepath.Join(tmp, "state")
	ralph := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "ralph"), args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "CONFIG_FILE="+config, "STATE_DIR="+stateDir, "HOME="+tmp, "DISPATCH_HOST_OFFLINE=5")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := ralph("queue", "init", planFile); err != nil {
		t.Fatalf("queue init: %v\n%s", err, out)
	}
	out, err := ralph("queue", "run", "plan", "--agent", "fake", "--hosts", hostsFile)
	if err != nil {
		t.Fatalf("queue run --hosts: %v\n%s", err, out)
	}
	// Which agent claims which first is the agents' race; each works on its own host.
	for _, want := range []string{`(?m)^agent-1: started t[12] \(attempt 1\) on h1-1$`, `(?m)^agent-2: started t[12] \(attempt 1\) on h2-1$`,
		`(?m)^agent-[12]: started t3 \(attempt 1\) on h[12]-1$`,
		`(?m)^plan plan: 3 done, 0 failed, 0 blocked, 0 skipped, 0 pending, 0 claimed; cost \$0\.25$`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the run's output has no line matching %q:\n%s", want, out)
		}
	}
	for _, id := range []string{"t1", "t2", "t3"} {
		b, err := os.ReadFile(filepath.Join(stateDir, "results", "plan-"+id+".json"))
		if err != nil || !strings.Contains(string(b), `"status":"done"`) {
			t.Errorf("task %s's result record here: %s, %v", id, b, err)
		}
		tree, err := gitx.Run(context.Background(), repo, "", "ls-tree", "--name-only", "agent/plan-"+id)
		if err != nil || !strings.Contains(string(tree), id+".txt") {
			t.Errorf("branch agent/plan-%s holds %q (%v), want its %s.txt", id, tree, err, id)
		}
	}
}
