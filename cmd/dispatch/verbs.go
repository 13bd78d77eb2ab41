package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agentfleet/fleet/internal/attempt"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// waitFor follows bead's attempt until its result is final. It reconciles now and then, so a
// supervisor that died is noticed instead of waited for forever. On a terminal it keeps a live
// line with the elapsed time on stderr.
func waitFor(ctx context.Context, s *settings, bead string, number int, stderr io.Writer) (*record.Result, error) {
	store := record.Store{Dir: s.stateDir}
	live := isTerminal(stderr) && os.Getenv("NO_COLOR") == ""
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		res, err := record.ReadResult(store.ResultPath(bead))
		if err == nil && res.Status != record.StatusRunning && (number == 0 || res.Attempt >= number) {
			if live {
				fmt.Fprint(stderr, "\r\033[K")
			}
			return res, nil
		}
		if i%20 == 19 { // every 2 s: only this bead's supervisor matters here
			attempt.ReconcileBead(ctx, s.dir(), s.tmux(), bead)
		}
		if live {
			fmt.Fprintf(stderr, "\r\033[K%s running %s", record.SessionName(bead), time.Since(start).Truncate(time.Second))
		}
		select {
		case <-ctx.Done():
			if live {
				fmt.Fprintln(stderr)
			}
			return nil, fmt.Errorf("stopped waiting for %s (the agent goes on; 'dispatch wait %s' to follow it again)", bead, bead)
		case <-tick.C:
		}
	}
}

func outcomeLine(r *record.Result) string {
	exit := "-"
	if r.ExitCode != nil {
		exit = fmt.Sprint(*r.ExitCode)
	}
	dur := "-"
	if r.DurationSeconds != nil {
		dur = (time.Duration(*r.DurationSeconds) * time.Second).String()
	}
	return fmt.Sprintf("%s: %s (exit %s, reason %s, attempt %d/%d, %s)", r.Bead, r.Status, exit, r.Reason, r.Attempt, r.MaxRetries, dur)
}

// exitFor maps an outcome to --wait's exit status: 0 done, 124 timeout (cli.ExitTimeout), 1
// anything else.
func exitFor(r *record.Result) error {
	switch r.Status {
	case record.StatusDone:
		return nil
	case record.StatusTimeout:
		return &cli.ExitError{Code: cli.ExitTimeout}
	}
	return &cli.ExitError{Code: cli.ExitFailure}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// noArgs refuses arguments to a verb that takes none ("dispatch ps repo agent prompt" is not a
// bead named ps).
func noArgs(c *ucli.Context) error {
	if c.NArg() > 0 {
		return cli.Usagef("%s takes no arguments, got %q; a bead may not be named like a verb", strings.TrimPrefix(c.App.Name, tool+" "), c.Args().First())
	}
	return nil
}

// oneBead reads the single BEAD argument of a verb, checked, and the settings o names.
func oneBead(c *ucli.Context, o *verbOptions, verb string) (string, *settings, error) {
	if c.NArg() != 1 {
		return "", nil, cli.Usagef("dispatch %s needs one BEAD", verb)
	}
	bead := c.Args().First()
	if err := record.CheckBead(bead); err != nil {
		return "", nil, cli.Usagef("%v", err)
	}
	s, err := o.settings()
	return bead, s, err
}

func waitCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "wait", Usage: "block until the beads' outcomes are final", UsageText: "dispatch wait BEAD...",
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "every bead done"},
			{Code: cli.ExitFailure, Meaning: "a bead failed or has no run record"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
			{Code: cli.ExitTimeout, Meaning: "a bead timed out (this outranks a failure)"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			stdout, stderr := std.Out, std.Err
			if c.NArg() == 0 {
				return cli.Usagef("dispatch wait needs at least one BEAD")
			}
			s, err := o.settings()
			if err != nil {
				return err
			}
			worst := 0
			for _, bead := range c.Args().Slice() {
				if err := record.CheckBead(bead); err != nil {
					return cli.Usagef("%v", err)
				}
				if _, err := os.Stat(record.Store{Dir: s.stateDir}.RunPath(bead)); err != nil {
					return fmt.Errorf("no run record for %s in %s", bead, s.stateDir)
				}
				res, err := waitFor(c.Context, s, bead, 0, stderr)
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, outcomeLine(res))
				var ee *cli.ExitError
				if errors.As(exitFor(res), &ee) && (worst == 0 || ee.Code == cli.ExitTimeout) {
					worst = ee.Code
				}
			}
			if worst != 0 {
				return &cli.ExitError{Code: worst}
			}
			return nil
		},
	}, o)
}

func killCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "kill", Usage: "stop a bead's agent; its records say killed", UsageText: "dispatch kill BEAD",
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "stopped"},
			{Code: cli.ExitFailure, Meaning: "the bead is not running, or did not stop in time"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			stdout := std.Out
			bead, s, err := oneBead(c, o, "kill")
			if err != nil {
				return err
			}
			d, where := s.dir(), s.where(bead)
			live, entry := attempt.Alive(c.Context, d, where, bead)
			if !live {
				closed, _ := attempt.Reconcile(c.Context, d, s.tmux(), false)
				for _, cl := range closed {
					fmt.Fprintf(stdout, "%s: closed (%s)\n", cl.Name, cl.Reason)
				}
				return fmt.Errorf("%s is not running", bead)
			}
			attempt.Stop(c.Context, s.tmux(), entry, where.Session, supervise.SignalKill)
			if !attempt.WaitGone(c.Context, d, where, bead, s.killGrace+5*time.Second) {
				return fmt.Errorf("%s did not stop within %s", bead, s.killGrace+5*time.Second)
			}
			attempt.Reconcile(c.Context, d, s.tmux(), false)
			if res, err := record.ReadResult(record.Store{Dir: s.stateDir}.ResultPath(bead)); err == nil {
				fmt.Fprintln(stdout, outcomeLine(res))
			}
			return nil
		},
	}, o)
}

func reconcileCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "reconcile", Usage: "close the records of supervisors that died", UsageText: "dispatch reconcile [--all] [--json]",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "print the closed beads as JSON"},
			&ucli.BoolFlag{Name: "all", Destination: &o.all, Usage: "also scan every run record and every archived attempt, not only the registered supervisors (for records other tools, or older versions, left running)"}},
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "the records of dead supervisors closed, or none to close"},
			{Code: cli.ExitFailure, Meaning: "failure"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			stdout, stderr := std.Out, std.Err
			if err := noArgs(c); err != nil {
				return err
			}
			s, err := o.settings()
			if err != nil {
				return err
			}
			// What was closed is reported even when another bead could not be: one bad record
			// must not hide the work done on the others.
			closed, rerr := attempt.Reconcile(c.Context, s.dir(), s.tmux(), o.all)
			if o.json {
				if closed == nil {
					closed = []supervise.Lost{}
				}
				if err := json.NewEncoder(stdout).Encode(map[string]any{"closed": closed}); err != nil {
					return err
				}
				return rerr
			}
			for _, cl := range closed {
				if cl.Attempt > 0 { // --all: an attempt archived while still running
					fmt.Fprintf(stdout, "%s: archived attempt %d closed as failed (%s)\n", cl.Name, cl.Attempt, cl.Reason)
					continue
				}
				fmt.Fprintf(stdout, "%s: closed as failed (%s)\n", cl.Name, cl.Reason)
			}
			if rerr != nil {
				return rerr
			}
			if len(closed) == 0 {
				fmt.Fprintln(stderr, "nothing to reconcile")
			}
			return nil
		},
	}, o)
}

func attachCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "attach", Usage: "watch a bead's agent in its tmux session", UsageText: "dispatch attach BEAD",
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "detached (the status is tmux attach's)"},
			{Code: cli.ExitFailure, Meaning: "no live session, or no terminal"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			bead, s, err := oneBead(c, o, "attach")
			if err != nil {
				return err
			}
			l := s.layout()
			session := attempt.Session(bead)
			if ok, _ := s.tmux().HasSession(c.Context, session); !ok {
				return fmt.Errorf("%s has no live session; its output is in %s", bead, l.LogPath(bead))
			}
			if !term.IsTerminal(int(os.Stdin.Fd())) {
				return fmt.Errorf("attach needs a terminal; the output so far is in %s", l.LogPath(bead))
			}
			args := s.tmux().AttachArgs(session)
			path, err := exec.LookPath(args[0])
			if err != nil {
				return err
			}
			return syscall.Exec(path, args, os.Environ())
		},
	}, o)
}

// psRow is one line of dispatch ps.
type psRow struct {
	Bead     string `json:"bead"`
	State    string `json:"state"`
	Agent    string `json:"agent"`
	Model    string `json:"model"`
	Attempt  int    `json:"attempt"`
	Started  string `json:"started_at"`
	Elapsed  int64  `json:"elapsed_seconds,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Finished string `json:"finished_at,omitempty"`
}

func psCommand() *cli.Command {
	o := &verbOptions{}
	return verbCommand(&cli.Command{
		Name: "ps", Usage: "live agents, stale ones, and the last results", UsageText: "dispatch ps [--json]",
		Flags: []ucli.Flag{&ucli.BoolFlag{Name: "json", Destination: &o.json, Usage: "one JSON document: running, stale, recent"}},
		ExitCodes: []cli.ExitCode{
			{Code: cli.ExitOK, Meaning: "listed"},
			{Code: cli.ExitFailure, Meaning: "the state could not be read"},
			{Code: cli.ExitUsage, Meaning: "usage error"},
		},
		Action: func(_ context.Context, c *ucli.Context, std cli.Streams) error {
			stdout := std.Out
			if err := noArgs(c); err != nil {
				return err
			}
			s, err := o.settings()
			if err != nil {
				return err
			}
			closed, err := attempt.Reconcile(c.Context, s.dir(), s.tmux(), false)
			if err != nil {
				return err
			}
			running, recent := scan(s)
			stale := []psRow{}
			for _, cl := range closed {
				stale = append(stale, psRow{Bead: cl.Name, State: "STALE", Reason: cl.Reason})
			}
			if o.json {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string][]psRow{"running": running, "stale": stale, "recent": recent})
			}
			printTable(stdout, "RUNNING", []string{"BEAD", "AGENT", "MODEL", "ATTEMPT", "ELAPSED"}, running, func(r psRow) []string {
				return []string{r.Bead, r.Agent, r.Model, fmt.Sprint(r.Attempt), (time.Duration(r.Elapsed) * time.Second).String()}
			})
			printTable(stdout, "STALE (closed now)", []string{"BEAD", "REASON"}, stale, func(r psRow) []string {
				return []string{r.Bead, r.Reason}
			})
			printTable(stdout, "RECENT RESULTS", []string{"BEAD", "STATUS", "REASON", "FINISHED"}, recent, func(r psRow) []string {
				finished := r.Finished
				if finished == "" {
					finished = "unknown"
				}
				return []string{r.Bead, r.State, r.Reason, finished}
			})
			return nil
		},
	}, o)
}

// scan reads what ps shows: the registered beads whose records say running, and the five most
// recently finished results. Neither reads the whole history: the registry lists the live beads,
// and results are picked by modification time (a stat each) before the newest are read.
func scan(s *settings) (running, recent []psRow) {
	running, recent = []psRow{}, []psRow{}
	now := time.Now()
	for _, r := range attempt.Running(s.dir()) {
		row := psRow{Bead: r.Bead, State: "RUNNING", Agent: r.Agent, Model: r.Model, Attempt: r.Attempt, Started: r.StartedAt}
		if t, ok := record.ParseTime(r.StartedAt); ok {
			row.Elapsed = int64(now.Sub(t) / time.Second)
		}
		running = append(running, row)
	}
	for _, p := range newestFiles(filepath.Join(s.stateDir, "results"), 50) {
		r, err := record.ReadResult(p)
		if err != nil || r.Status == record.StatusRunning || strings.HasSuffix(p, "-verify.json") {
			continue
		}
		row := psRow{Bead: r.Bead, State: strings.ToUpper(r.Status), Agent: r.Agent, Attempt: r.Attempt,
			Started: r.StartedAt, Reason: r.Reason}
		if r.FinishedAt != nil {
			row.Finished = *r.FinishedAt
		} // else its end is unknown (a lost attempt with no log): ordered by its start
		recent = append(recent, row)
	}
	ended := func(r psRow) string {
		if r.Finished != "" {
			return r.Finished
		}
		return r.Started
	}
	sort.Slice(recent, func(i, j int) bool {
		if a, b := ended(recent[i]), ended(recent[j]); a != b {
			return a > b
		}
		return recent[i].Bead < recent[j].Bead
	})
	if len(recent) > 5 {
		recent = recent[:5]
	}
	return running, recent
}

// newestFiles returns the paths of the n most recently modified *.json files in dir.
func newestFiles(dir string, n int) []string {
	entries, _ := os.ReadDir(dir)
	type file struct {
		path string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{filepath.Join(dir, e.Name()), info.ModTime()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.After(files[j].mod) })
	var paths []string
	for i := 0; i < len(files) && i < n; i++ {
		paths = append(paths, files[i].path)
	}
	return paths
}
