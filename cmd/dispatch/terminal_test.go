package main

import (
	"os"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/supervise"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// control BEAD OP [ARG]: a request to the bead's supervisor over its control socket, as
	// swarm and ralph make them; the screen (for OP screen) goes to stdout. ARG is the text of
	// send (with \r for Enter), the keys of keys (comma-separated), or the lines of screen.
	scriptCmds["control"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: control BEAD OP [ARG]")
		}
		l := supervise.Layout{Dir: ts.MkAbs("state")}
		req := supervise.Request{Op: args[1]}
		if len(args) > 2 {
			switch req.Op {
			case supervise.OpSend:
				req.Text = strings.ReplaceAll(args[2], `\r`, "\r")
			case supervise.OpKeys:
				req.Keys = strings.Split(args[2], ",")
			case supervise.OpScreen:
				req.Lines = atoi(ts, args[2])
			case supervise.OpStop:
				req.Reason = args[2]
			}
		}
		c, err := supervise.DialControl(l.SocketPath(args[0]), 5*time.Second)
		if err != nil {
			if neg {
				return
			}
			ts.Fatalf("control %s: %v", args[0], err)
		}
		defer c.Close()
		resp, err := c.Do(req)
		if (err != nil) != neg {
			ts.Fatalf("control %s %s: %v (negated: %v)", args[0], req.Op, err, neg)
		}
		if resp != nil {
			ts.Stdout().Write([]byte(strings.Join(resp.Screen, "\n") + "\n"))
		}
	}
	// gone FILE: wait (up to 15 s) until FILE is gone (a supervisor removes its registry entry
	// just after its final records, so a script that saw them may look a moment too soon).
	scriptCmds["gone"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: gone FILE")
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			if _, err := os.Lstat(ts.MkAbs(args[0])); err != nil {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("%s is still there", args[0])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// waitlog BEAD TEXT: wait (up to 15 s) until the bead's log holds TEXT.
	scriptCmds["waitlog"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: waitlog BEAD TEXT")
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			if b, _ := os.ReadFile(ts.MkAbs("state/logs/" + args[0] + ".log")); strings.Contains(string(b), args[1]) {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("state/logs/%s.log never held %q", args[0], args[1])
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func atoi(ts *testscript.TestScript, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			ts.Fatalf("%q is not a number", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}
