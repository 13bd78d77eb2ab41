package top

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
)

// This machine's side of an action on a host's agent: the request checked, run by the host's
// swarm (ActVerb) over the connection its polls use, and the host's answer or refusal made one
// line fit for the view (Act in act.go is the host's side).

// actTimeout bounds an action on a host: the host's own bound on it, and room for the
// connection. A host cut off during an action fails it sooner: its connection closes within
// three keep-alives (HostOptions.Timeout/2 each).
func actTimeout(action string) time.Duration {
	switch action {
	case ActKill, ActStop:
		return 30 * time.Second // the host waits up to 15 s for the agent to be gone
	case ActDiff:
		return diffTimeout + 10*time.Second
	case ActNew:
		return newReadyWait + 30*time.Second
	}
	return 15 * time.Second
}

// hostAct carries out q on r, a host's row, on its host.
func (m *Model) hostAct(ctx context.Context, r *Row, q ActRequest) (*ActAnswer, error) {
	if m.src.Hosts == nil {
		return nil, fmt.Errorf("%s runs on host %s, which this view does not poll", r.Name, r.Host)
	}
	q.Kind, q.Source, q.StateDir, q.Name = r.Kind, r.Source, r.StateDir, r.Name
	return m.src.Hosts.act(ctx, r.Host, q)
}

// hostConn is host's poll and its connection, or why an action cannot go there now: a host
// offline fails an action at once, naming it, rather than waiting on a connection that does
// not answer.
func (h *Hosts) hostConn(host string) (*hostPoll, *remote.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.polls {
		if p.host.Name != host {
			continue
		}
		s := h.statusOf(p)
		switch {
		case !s.Online && s.Error != "":
			return nil, nil, fmt.Errorf("host %s is offline (%s): %s", host, s.Seen(time.Now()), s.Error)
		case !s.Online || p.conn == nil:
			return nil, nil, fmt.Errorf("host %s has not answered yet", host)
		}
		return p, p.conn, nil
	}
	return nil, nil, fmt.Errorf("no host %s in the hosts file", host)
}

// act runs q on host by its swarm's ActVerb; its error is one line naming the host.
func (h *Hosts) act(ctx context.Context, host string, q ActRequest) (*ActAnswer, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	p, c, err := h.hostConn(host)
	if err != nil {
		return nil, err
	}
	cmd := remote.Cmd{Argv: q.Argv(c.Program("swarm"), p.host.StateDir, p.host.Repo), Env: c.Env(),
		Timeout: actTimeout(q.Action)}
	if q.Text != "" {
		// A line or a prompt goes on stdin, never on a command line.
		cmd.Stdin = strings.NewReader(q.Text)
	}
	res, err := c.Run(ctx, cmd)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, fmt.Errorf("host %s: no answer within %s", host, cmd.Timeout)
	case errors.Is(err, remote.ErrNoMaster):
		return nil, fmt.Errorf("host %s stopped answering (its connection closed)", host)
	case err != nil:
		return nil, fmt.Errorf("host %s: %s", host, strings.TrimPrefix(remote.Printable(err.Error()), "host "+host+": "))
	case res.Code == 126 || res.Code == 127:
		return nil, fmt.Errorf("host %s has no swarm (%s): install the toolkit's binaries there", host, c.Program("swarm"))
	case res.Code != 0:
		return nil, fmt.Errorf("host %s: %s", host, hostError(res.Stderr))
	}
	var a ActAnswer
	if err := json.Unmarshal(res.Stdout, &a); err != nil {
		return nil, fmt.Errorf("host %s: reading its answer: %v", host, err)
	}
	if err := a.fit(q.Action); err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	return &a, nil
}

// hostError is the host's swarm's one-line error ("swarm: error: MSG"): MSG, made printable.
// A usage error's hint line after it is left out.
func hostError(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if _, msg, ok := strings.Cut(lines[i], ": error: "); ok {
			return remote.Printable(msg)
		}
	}
	return lastErrLine(stderr)
}

// fit makes the host's answer fit to show, and refuses one that is not what was asked: the
// host's text is hostile (a file's name or a diff's line may hold terminal controls), its
// paths must be clean absolute paths before they reach a command line.
func (a *ActAnswer) fit(action string) error {
	switch action {
	case ActWorkDir:
		if !cleanAbs(a.Dir) {
			return fmt.Errorf("its worktree %q is not a clean absolute path", remote.Printable(a.Dir))
		}
	case ActDiff:
		d := a.Diff
		if d == nil || !isCommitID(d.Base) || !cleanAbs(d.Dir) {
			return errors.New("its diff is not one (no commit, or no clean directory)")
		}
		if len(d.Files) > maxDiffFiles {
			d.Files, d.Truncated = d.Files[:maxDiffFiles], true
		}
		for i, f := range d.Files {
			d.Files[i] = printableLine(f)
		}
		for i, l := range d.Lines {
			d.Lines[i] = printableLine(l)
		}
	}
	return nil
}

// shellArgs is the command line of a person's shell in dir on host (ssh -t, on a connection of
// its own: it outlives this view's); dir is checked, and quoted for the host's shell.
func (h *Hosts) shellArgs(host, dir string) ([]string, error) {
	if !cleanAbs(dir) {
		return nil, fmt.Errorf("host %s: its worktree %q is not a clean absolute path", host, remote.Printable(dir))
	}
	_, c, err := h.hostConn(host)
	if err != nil {
		return nil, err
	}
	return c.TerminalArgs(`cd ` + remote.Quote(dir) + ` && exec "${SHELL:-/bin/sh}" -l`), nil
}

// ShellArgs is the command line of a shell in r's worktree on r's host: ssh -t into it (the
// view's ! on a host's row). A row of this machine's has none (a shell opens in WorkDir).
func (m *Model) ShellArgs(ctx context.Context, r *Row) ([]string, error) {
	if r.Host == "" {
		return nil, fmt.Errorf("%s runs here: its shell opens in its worktree", r.Name)
	}
	a, err := m.hostAct(ctx, r, ActRequest{Action: ActWorkDir})
	if err != nil {
		return nil, err
	}
	return m.src.Hosts.shellArgs(r.Host, a.Dir)
}
