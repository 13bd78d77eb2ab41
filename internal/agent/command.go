package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An agent's command is found before anything is started: dispatch.sh (and dispatch, swarm
// spawn and swarm run until now) said "Agent dispatched" or "spawned" for a command that does
// not exist, and the failure showed only afterwards (agent-start-failed, 127), an attempt used.

// EnvPath is the PATH of an environment list, and whether it has one.
func EnvPath(env []string) (string, bool) {
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true // the last one counts, as for getenv
		}
	}
	return path, ok
}

// SearchPaths are the PATHs an agent's command is looked for in: its environment's, then
// that of the process that starts it (own), which is the one exec.Command searches.
func SearchPaths(env []string, own string) []string {
	if p, ok := EnvPath(env); ok {
		return []string{p, own}
	}
	return []string{own}
}

// FindCommand returns where cmd is found as the agent's process would find it: a name with a
// slash is a path (relative to dir, where the agent starts), a bare name is looked for in each
// of the PATHs given (SearchPaths).
func FindCommand(cmd, dir string, paths ...string) (string, error) {
	if cmd == "" {
		return "", errors.New("no command")
	}
	if strings.Contains(cmd, "/") {
		p := cmd
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		return p, executableFile(p)
	}
	var last error = errors.New("not found on PATH")
	for _, path := range paths {
		for _, d := range filepath.SplitList(path) {
			if d == "" {
				d = "."
			}
			if !filepath.IsAbs(d) {
				d = filepath.Join(dir, d)
			}
			p := filepath.Join(d, cmd)
			if err := executableFile(p); err == nil {
				return p, nil
			} else if !errors.Is(err, os.ErrNotExist) {
				last = err
			}
		}
	}
	return "", last
}

// executableFile says why path is not a file anyone may execute, or nil.
func executableFile(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// CommandError is an agent's command that cannot be run: its error reads `command "x" cannot
// be run (why; PATH=…)`, for the caller to say whose command it is and what to do.
type CommandError struct {
	Command string
	Reason  error  // a *os.PathError's reason alone: the path is said around it
	Path    string // the first PATH searched
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("command %q cannot be run (%v; PATH=%s)", e.Command, e.Reason, e.Path)
}

// CheckCommand is a *CommandError when cmd cannot be started in dir by a process whose PATH is
// own with the environment env; nil when it can.
func CheckCommand(cmd, dir string, env []string, own string) error {
	paths := SearchPaths(env, own)
	if _, err := FindCommand(cmd, dir, paths...); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &CommandError{Command: cmd, Reason: err, Path: paths[0]}
	}
	return nil
}
