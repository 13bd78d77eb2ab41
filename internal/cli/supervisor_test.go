package cli

import "testing"

// The supervisor verb's arguments as its starters write them (attempt.Launch after a tool's
// "--state-dir DIR", swarm's Spawn) are read; anything else is refused.
func TestParseSupervisorArgs(t *testing.T) {
	good := []struct {
		args []string
		want SupervisorArgs
	}{
		{[]string{"--state-dir", "/s", "--handoff", "/h", "bd-1"}, SupervisorArgs{StateDir: "/s", Handoff: "/h", Name: "bd-1"}},
		{[]string{"--swarm-dir", "/w", "--handoff", "/h", "w1"}, SupervisorArgs{SwarmDir: "/w", Handoff: "/h", Name: "w1"}},
		{[]string{"--state-dir=/s", "--handoff=/h", "bd-1"}, SupervisorArgs{StateDir: "/s", Handoff: "/h", Name: "bd-1"}},
		{[]string{"--handoff", "/h", "bd-1"}, SupervisorArgs{Handoff: "/h", Name: "bd-1"}}, // the verb says what it needs
	}
	for _, g := range good {
		got, err := ParseSupervisorArgs(g.args)
		if err != nil || got != g.want {
			t.Errorf("ParseSupervisorArgs(%q) = %+v, %v; want %+v", g.args, got, err, g.want)
		}
	}
	bad := [][]string{
		nil,
		{"--state-dir", "/s", "--handoff", "/h"}, // no operand
		{"--state-dir", "/s", "--handoff", "/h", "bd-1", "bd-2"}, // two
		{"--state-dir", "/s", "--handoff", "/h", "bd-1", "--x"},  // a word after the operand
		{"--bogus", "x", "--handoff", "/h", "bd-1"},              // a flag no starter writes
		{"--handoff"}, // a flag without its value
		{"--help"},
	}
	for _, args := range bad {
		if got, err := ParseSupervisorArgs(args); err == nil {
			t.Errorf("ParseSupervisorArgs(%q) = %+v, want an error", args, got)
		}
	}
}
