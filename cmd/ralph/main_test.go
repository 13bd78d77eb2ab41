package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/agentfleet/fleet/internal/testenv/sweep"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the test binary as ralph for the testscript files of every kind of work
// (each kind's tests run their own testdata/<kind>-*.txtar with their own setup). The loop
// scripts also run swarm (`swarm ralph …`, `swarm kill` of a loop, `swarm ls`): that is
// cmd/swarm itself, built once for the run and put on PATH ahead of the test binary's
// commands, so that what the scripts run is what ships.
func TestMain(m *testing.M) {
	testscript.Main(sweep.Guard(withSwarm{m}), map[string]func(){
		"ralph": func() { os.Exit(run(os.Args)) },
	})
}

// withSwarm runs the tests with cmd/swarm built (in the test binary's race mode, so that the
// build reuses the packages the test's own build compiled) in a directory first on PATH.
type withSwarm struct{ m *testing.M }

func (w withSwarm) Run() int {
	dir, err := os.MkdirTemp("", "ralph-test-swarm")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(goruntime.GOROOT(), "bin", "go")
	}
	args := []string{"build", "-o", filepath.Join(dir, "swarm")}
	if loopRace {
		args = append(args, "-race")
	}
	cmd := exec.Command(goBin, append(args, "github.com/agentfleet/fleet/cmd/swarm")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building cmd/swarm for the loop scripts: %v\n%s", err, out)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return w.m.Run()
}
