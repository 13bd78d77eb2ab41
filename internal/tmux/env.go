package tmux

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// SpawnEnvironment is the environment a program started on the server by a new-session from a
// client whose environment is client would get, but for the pane's TERM, TMUX and TMUX_PANE:
// the server's global environment (show-environment -g), with the variables the
// update-environment option names taken from the client (and removed when the client has none),
// then the client's PATH, SHELL as default-shell, and TERM_PROGRAM(_VERSION), as tmux 3.3a's
// spawn sets them. With no server running, it is client itself: the server a new-session starts
// takes the client's environment as its global one. running says whether a server answered.
// A server that exits between the three questions (its last session ended) is no server
// either: the new-session after it starts a new one. Every value is the server's byte for byte,
// whatever the caller's locale (rawOutput).
//
// This is what an agent started inside the server (dispatch.sh's tmux new-session) had: under
// cron, the login shell's environment the server was started with, not cron's.
func (c *Client) SpawnEnvironment(ctx context.Context, client []string) (env []string, running bool, err error) {
	// -s prints each variable as a shell assignment, quoted, so that a value with a newline
	// (an exported bash function) is read whole; the plain form is one line per variable.
	noServer := func() ([]string, bool, error) { return append([]string(nil), client...), false, nil }
	out, err := c.query(ctx, rawOutput, "show-environment", "-g", "-s")
	if errors.Is(err, ErrGone) {
		return noServer()
	}
	if err != nil {
		return nil, false, err
	}
	global, err := parseShellEnv(string(out))
	if err != nil {
		return nil, true, fmt.Errorf("reading the tmux server's environment: %w", err)
	}
	// An empty option prints nothing: no variable is updated.
	opt, err := c.run(ctx, rawOutput, "show-options", "-gv", "update-environment")
	if errors.Is(err, ErrGone) {
		return noServer()
	}
	if err != nil {
		return nil, true, err
	}
	env = updateEnvironment(global, client, strings.Fields(string(opt)))
	// Then what tmux's spawn sets itself: PATH from a client that is not attached to a session
	// (one running new-session, as dispatch.sh's was), SHELL as default-shell, TERM_PROGRAM.
	info, err := c.query(ctx, rawOutput, "display-message", "-p", "#{version}\t#{default-shell}")
	if errors.Is(err, ErrGone) {
		return noServer()
	}
	if err != nil {
		return nil, true, err
	}
	version, shell, _ := strings.Cut(strings.TrimRight(string(info), "\n"), "\t")
	var own []string
	for _, kv := range client {
		if strings.HasPrefix(kv, "PATH=") {
			own = append(own, kv)
		}
	}
	own = append(own, "SHELL="+spawnShell(shell))
	own = append(own, "TERM_PROGRAM=tmux", "TERM_PROGRAM_VERSION="+version)
	return updateEnvironment(env, own, []string{"PATH", "SHELL", "TERM_PROGRAM", "TERM_PROGRAM_VERSION"}), true, nil
}

// spawnShell is the SHELL tmux 3.3a's spawn gives a new pane for the default-shell option: the
// option when it names an executable by its absolute path that is not tmux itself, else
// /bin/sh (spawn.c, checkshell).
func spawnShell(shell string) string {
	if !strings.HasPrefix(shell, "/") || path.Base(shell) == "tmux" || unix.Access(shell, unix.X_OK) != nil {
		return "/bin/sh"
	}
	return shell
}

// updateEnvironment is tmux's environ_update for a new session: for each pattern (fnmatch) of
// update-environment, the client's matching variables are set, and with none matching the
// variable of that name is removed.
func updateEnvironment(global, client, patterns []string) []string {
	set := map[string]string{}
	var order []string
	put := func(k, v string) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	for _, kv := range global {
		k, v, _ := strings.Cut(kv, "=")
		put(k, v)
	}
	for _, pat := range patterns {
		found := false
		for _, kv := range client {
			k, v, _ := strings.Cut(kv, "=")
			if ok, _ := path.Match(pat, k); ok {
				put(k, v)
				found = true
			}
		}
		if !found {
			delete(set, pat)
		}
	}
	env := make([]string, 0, len(set))
	for _, k := range order {
		if v, ok := set[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// parseShellEnv reads show-environment -s: `NAME="value"; export NAME;` per variable (in the
// value, $ ` " and \ escaped with a backslash; newlines as they are), `unset NAME;` for one the
// environment removes.
func parseShellEnv(s string) ([]string, error) {
	var env []string
	for len(s) > 0 {
		if rest, ok := strings.CutPrefix(s, "unset "); ok {
			_, after, ok := strings.Cut(rest, ";\n")
			if !ok {
				return nil, fmt.Errorf("unterminated unset: %.40q", s)
			}
			s = after
			continue
		}
		name, rest, ok := strings.Cut(s, "=\"")
		if !ok || name == "" || strings.ContainsAny(name, "\n;\"") {
			return nil, fmt.Errorf("not a variable: %.40q", s)
		}
		var v strings.Builder
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
			}
			v.WriteByte(rest[i])
		}
		if i == len(rest) {
			return nil, fmt.Errorf("unterminated value of %s", name)
		}
		tail := "; export " + name + ";\n"
		if !strings.HasPrefix(rest[i+1:], tail) {
			return nil, fmt.Errorf("not a variable: %.40q", s)
		}
		env = append(env, name+"="+v.String())
		s = rest[i+1+len(tail):]
	}
	return env, nil
}
