package main

import (
	"testing"

	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestDocs runs testdata/docs.txtar: ralph's man page and completions (issue 20).
func TestDocs(t *testing.T) {
	testscript.Run(t, testscript.Params{Files: []string{"testdata/docs.txtar"},
		Setup: func(env *testscript.Env) error { need.Setup(env); return nil },
		Cmds:  map[string]func(*testscript.TestScript, bool, []string){"need": need.Cmd}})
}
