package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// shimNames are the workspace scripts the toolkit's shims take the place of.
var shimNames = []string{"dispatch.sh", "validate-state.sh", "analyze-runs.sh"}

func init() {
	// workspace DIR [CONFIG]: a copy of an athena workspace's layout, as the shims meet it:
	// DIR/scripts/ with the toolkit's shims linked in (as the README says to adopt them),
	// DIR/config/agents.json and DIR/state/. The config is CONFIG with $AGENT and $WORK
	// replaced by the stand-in agent's path and the script's directory, or the scripts' own
	// agents.json.
	scriptCmds["workspace"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 1 || len(args) > 2 {
			ts.Fatalf("usage: workspace DIR [CONFIG]")
		}
		dir := ts.MkAbs(args[0])
		for _, sub := range []string{"scripts", "config", "state"} {
			ts.Check(os.MkdirAll(filepath.Join(dir, sub), 0o755))
		}
		toolkit, err := filepath.Abs(filepath.Join("..", "..", "scripts"))
		ts.Check(err)
		for _, name := range shimNames {
			ts.Check(os.Symlink(filepath.Join(toolkit, name), filepath.Join(dir, "scripts", name)))
		}
		config := ts.ReadFile(ts.MkAbs(filepath.Join(ts.Getenv("WORK"), "agents.json")))
		if len(args) == 2 {
			config = strings.NewReplacer("$AGENT", ts.Getenv("AGENT"), "$WORK", ts.Getenv("WORK")).Replace(ts.ReadFile(args[1]))
		}
		ts.Check(os.WriteFile(filepath.Join(dir, "config", "agents.json"), []byte(config), 0o644))
	}
}
