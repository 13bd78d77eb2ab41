package main

import (
	"os"
	"testing"

	"github.com/agentfleet/fleet/internal/ralph/loop"
	"github.com/agentfleet/fleet/internal/swarmcli"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain registers the test binary as ralph for the testscript files of every kind of work
// (each kind's tests run their own testdata/<kind>-*.txtar with their own setup), and as swarm
// (its `swarm ralph` is the loop verbs, `swarm kill` stops a loop's monitor first), as
// cmd/swarm builds it.
func TestMain(m *testing.M) {
	swarmcli.RalphVerb = loop.Run
	testscript.Main(m, map[string]func(){
		"ralph": func() { os.Exit(run(os.Args)) },
		"swarm": func() { os.Exit(swarmcli.Run(os.Args, os.Stdin, os.Stdout, os.Stderr)) },
	})
}
