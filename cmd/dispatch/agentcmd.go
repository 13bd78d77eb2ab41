package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/fleet/internal/agent"
)

// The agent's command, found before anything is started: dispatch.sh (and dispatch until now)
// said "Agent dispatched" for a command that does not exist, and the failure showed only in the
// records (agent-start-failed, 127) after it had used an attempt.

// envPath is the PATH of an environment list, and whether it has one.
func envPath(env []string) (string, bool) {
	path, ok := "", false
	for _, kv := range env {
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true // the last one counts, as for getenv
		}
	}
	return path, ok
}

// findCommand returns where cmd is found as the agent's process would find it: a name with a
// slash is a path (relative to dir, where the agent starts), a bare name is looked for in each
// of the PATHs given (the agent's environment's, and the supervisor's, which starts it).
func findCommand(cmd, dir string, paths ...string) (string, error) {
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

// checkAgentCommand says, in one line, why profile's command cannot be started in dir with the
// environment env (or dispatch's own PATH, ownPath), and what to do; nil when it can.
func checkAgentCommand(profile *agent.Profile, cfg *agent.Config, env []string, ownPath, dir string) error {
	if problem := commandProblem(profile, cfg, env, ownPath, dir); problem != "" {
		return fmt.Errorf("agent %s: %s; nothing was started and no attempt used", profile.Name, problem)
	}
	return nil
}

// commandProblem is why profile's command cannot be started, and what to do; "" when it can.
func commandProblem(profile *agent.Profile, cfg *agent.Config, env []string, ownPath, dir string) string {
	paths := pathsOf(env, ownPath)
	_, err := findCommand(profile.Command, dir, paths...)
	if err == nil {
		return ""
	}
	fix := "name it in " + agent.ConfigName + " (the built-in agents are in use)"
	if cfg.Path != "" {
		fix = "fix its \"command\" in " + cfg.Path
	}
	return fmt.Sprintf("its command %q cannot be run (%v; PATH=%s); install it, or %s", profile.Command, unwrapPath(err), paths[0], fix)
}

// unwrapPath is a *PathError's reason alone ("no such file or directory"), the path being said
// around it.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
