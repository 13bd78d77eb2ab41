package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o700)
	os.WriteFile(filepath.Join(bin, "agent"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "plain"), []byte("#!/bin/sh\n"), 0o644)
	os.MkdirAll(filepath.Join(bin, "adir"), 0o700)
	for _, c := range []struct {
		cmd  string
		env  []string
		own  string
		want string // "" for found, else in the error
	}{
		{"agent", []string{"PATH=" + bin}, "/nonexistent", ""},
		{"agent", nil, bin, ""},                       // the starter's own PATH
		{"agent", []string{"PATH=/nowhere"}, bin, ""}, // the agent's, then ours
		{"bin/agent", nil, "", ""},                    // relative to the agent's directory
		{"agent", []string{"PATH=/nowhere"}, "/nowhere2", `command "agent" cannot be run (not found on PATH; PATH=/nowhere)`},
		{"/nonexistent/agent", nil, bin, "(no such file or directory; PATH=" + bin + ")"},
		{"bin/plain", nil, "", "is not executable"},
		{"bin/adir", nil, "", "is a directory"},
		{"", nil, bin, "no command"},
	} {
		err := CheckCommand(c.cmd, dir, c.env, c.own)
		var ce *CommandError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckCommand(%q, %q, %q) = %v, want found", c.cmd, c.env, c.own, err)
		case c.want != "" && (!errors.As(err, &ce) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("CheckCommand(%q, %q, %q) = %v, want a *CommandError with %q", c.cmd, c.env, c.own, err, c.want)
		}
	}
}
