package main

import (
	"regexp"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// waitls NAME REGEXP [SECONDS]: wait until the worker's line of `swarm ls` matches.
	scriptCmds["waitls"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: waitls NAME REGEXP [SECONDS]")
		}
		re := regexp.MustCompile(args[1])
		limit := 20 * time.Second
		var last string
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if err := ts.Exec("swarm", "ls"); err != nil {
				continue
			}
			for _, line := range strings.Split(ts.ReadFile("stdout"), "\n") {
				if strings.HasPrefix(line, args[0]+" ") {
					last = line
					if re.MatchString(line) {
						return
					}
				}
			}
		}
		ts.Fatalf("%s's ls line does not match %q after %s: %q", args[0], args[1], limit, last)
	}
	// [!] waitstatus NAME REGEXP: wait until `swarm status NAME --json` matches (with !: no
	// longer matches).
	scriptCmds["waitstatus"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: waitstatus NAME REGEXP")
		}
		re := regexp.MustCompile(args[1])
		limit := 20 * time.Second
		var last string
		for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			ts.Exec("swarm", "status", args[0], "--json") // exit 1 for a stopped worker
			last = ts.ReadFile("stdout")
			if re.MatchString(last) != neg {
				return
			}
		}
		ts.Fatalf("%s's status --json (match %q: %v) after %s:\n%s", args[0], args[1], !neg, limit, last)
	}
}
