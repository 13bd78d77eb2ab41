package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// stubhook PATH...: testdata/hook.sh installed at each PATH (executable), as a workspace
	// script or an integration's binary; it acts by the name it is called as.
	scriptCmds["stubhook"] = func(ts *testscript.TestScript, neg bool, args []string) {
		src, err := filepath.Abs(filepath.Join("testdata", "hook.sh"))
		ts.Check(err)
		b, err := os.ReadFile(src)
		ts.Check(err)
		for _, p := range args {
			p = ts.MkAbs(p)
			ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
			// Replaced, never written through: a workspace's script may be a link to the
			// toolkit's own shim.
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				ts.Fatalf("%v", err)
			}
			ts.Check(os.WriteFile(p, b, 0o755))
		}
	}
	// waitline FILE PATTERN [SECONDS]: wait until FILE has a line matching PATTERN (the
	// completion hooks run after the records are final, so after --wait returns).
	scriptCmds["waitline"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitline FILE PATTERN [SECONDS]")
		}
		re, err := regexp.Compile("(?m)" + args[1])
		ts.Check(err)
		limit := 15 * time.Second
		if len(args) > 2 {
			n, _ := strconv.Atoi(args[2])
			limit = time.Duration(n) * time.Second
		}
		path := ts.MkAbs(args[0])
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(path); err == nil && re.Match(b) {
				return
			}
		}
		b, _ := os.ReadFile(path)
		ts.Fatalf("no line matching %q in %s after %s:\n%s", args[1], args[0], limit, b)
	}
}
