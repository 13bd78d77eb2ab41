package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/tmux"
)

// docBlocks returns the fenced blocks of a doc in the given language, each whole.
func docBlocks(t *testing.T, doc, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(b)
	for {
		_, after, ok := strings.Cut(rest, "```"+lang+"\n")
		if !ok {
			return blocks
		}
		block, tail, _ := strings.Cut(after, "```")
		blocks, rest = append(blocks, block), tail
	}
}

// TestCronAndSystemd runs docs/cron.md as a new user would: make install into a prefix, a
// workspace whose scripts link to the installed shims, then each crontab line's command as
// cron runs it (/bin/sh -c under env -i with cron's PATH, HOME, LOGNAME, SHELL), and the
// systemd units through systemd-analyze verify and the nightly service's command with the user
// manager's PATH. The only stand-in is the agent: the workspace's "claude" is testdata/agent.sh.
func TestCronAndSystemd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install and a dispatch in tmux")
	}
	for _, bin := range []string{"make", "tmux", "git"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: the cron example is not run", bin)
		}
	}
	repo, _ := filepath.Abs("../..")
	agentPath, _ := filepath.Abs("testdata/agent.sh")
	home := t.TempDir()
	prefix := filepath.Join(home, "go") // make install's default, $(go env GOPATH), for this HOME

	install := exec.Command("make", "-C", repo, "install", "PREFIX="+prefix, "GO="+filepath.Join(runtime.GOROOT(), "bin", "go"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, f := range []string{"bin/dispatch", "share/man/man1/dispatch.1", "share/bash-completion/completions/dispatch",
		"share/zsh/site-functions/_dispatch", "share/fish/vendor_completions.d/dispatch.fish", "share/fleet/scripts/dispatch.sh"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("make install did not install %s: %v", f, err)
		}
	}

	// The workspace, set up as docs/cron.md says (its links to the installed shims).
	ws := filepath.Join(home, "athena")
	for _, d := range []string{"scripts", "config", "state"} {
		os.MkdirAll(filepath.Join(ws, d), 0o755)
	}
	for _, s := range []string{"dispatch", "validate-state", "analyze-runs", "score-templates"} {
		if err := os.Symlink(filepath.Join(prefix, "share/fleet/scripts", s+".sh"), filepath.Join(ws, "scripts", s+".sh")); err != nil {
			t.Fatal(err)
		}
	}
	cfg := `{"claude": {"command": "` + agentPath + `", "default_model": "opus"}}`
	if err := os.WriteFile(filepath.Join(ws, "config", "agents.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := gitRepo(filepath.Join(home, "src", "app")); err != nil {
		t.Fatal(err)
	}
	sockDir, err := os.MkdirTemp("", "dspcron")
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(sockDir, "s")
	t.Cleanup(func() {
		(&tmux.Client{Socket: socket}).KillServer(context.Background())
		os.RemoveAll(sockDir)
	})
	// As a crontab's variable lines would set them: a private tmux server for the test, and
	// the disk floor of the other tests.
	jobEnv := func(path string) []string {
		return []string{"PATH=" + path, "HOME=" + home, "LOGNAME=root", "SHELL=/bin/sh",
			"DISPATCH_TMUX_SOCKET=" + socket, "DISPATCH_MIN_FREE_MB=1"}
	}
	runJob := func(what, command, path string, extra ...string) {
		t.Helper()
		env := append(jobEnv(path), extra...)
		cmd := exec.Command("env", append(append([]string{"-i"}, env...), "/bin/sh", "-c", command)...)
		cmd.Dir = "/"
		if out, err := cmd.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(ws, "state", "cron.log"))
			t.Fatalf("%s: %q: %v\n%s\ncron.log:\n%s", what, command, err, out, log)
		}
	}

	// The crontab: each line's command, as cron runs it (a \% is a %).
	blocks := docBlocks(t, filepath.Join(repo, "docs", "cron.md"), "crontab")
	if len(blocks) != 1 {
		t.Fatalf("docs/cron.md has %d crontab blocks, want 1", len(blocks))
	}
	// The nightly line runs on three nights in a row: a bead's attempts are capped (2), so a
	// line that dispatched the same bead every night was refused on the third. The nights are
	// told by a "date" ahead of cron's PATH that answers for the night's date (the clock is
	// the one thing a test cannot wait for); "date -d yesterday" is left to the real one.
	realDate, err := exec.LookPath("date")
	if err != nil {
		t.Fatal(err)
	}
	clock := filepath.Join(home, "clock")
	os.MkdirAll(clock, 0o755)
	clockScript := "#!/bin/sh\nexec " + realDate + " -d \"$NIGHT\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(clock, "date"), []byte(clockScript), 0o755); err != nil {
		t.Fatal(err)
	}
	nights := []string{"2001-01-01", "2001-01-02", "2001-01-03"}
	var dispatched bool
	for _, line := range strings.Split(blocks[0], "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || strings.HasPrefix(f[0], "#") {
			continue
		}
		// The five time fields, then the command, as written.
		command := line
		for i := 0; i < 5; i++ {
			command = strings.TrimLeft(command, " \t")
			command = command[strings.IndexAny(command, " \t"):]
		}
		command = strings.ReplaceAll(strings.TrimSpace(command), `\%`, "%")
		if !strings.Contains(command, "nightly-deps") {
			runJob("crontab line", command, cronPath)
			continue
		}
		dispatched = true
		for i, night := range nights {
			runJob(fmt.Sprintf("crontab's nightly line, night %d (%s)", i+1, night), command, clock+":"+cronPath, "NIGHT="+night)
		}
	}
	if !dispatched {
		t.Fatal("docs/cron.md's crontab dispatches no nightly-deps")
	}
	for _, night := range nights {
		res, err := record.ReadResult(filepath.Join(ws, "state", "results", "nightly-deps-"+night+".json"))
		if err != nil || res.Status != record.StatusDone {
			log, _ := os.ReadFile(filepath.Join(ws, "state", "cron.log"))
			t.Fatalf("after the crontab's dispatch of %s: result %+v, %v\ncron.log:\n%s", night, res, err, log)
		}
	}
	if report, err := os.ReadFile(filepath.Join(ws, "state", "report.md")); err != nil || len(report) == 0 {
		t.Errorf("the crontab's report: %q, %v", report, err)
	}
	runJob("validate-state", filepath.Join(ws, "scripts", "validate-state.sh")+" --all", cronPath)

	// The systemd units: verified, and the nightly service's command run as the user manager
	// runs it.
	units := filepath.Join(home, "units")
	os.MkdirAll(units, 0o755)
	var names []string
	var nightly string
	for _, b := range docBlocks(t, filepath.Join(repo, "docs", "cron.md"), "ini") {
		first, body, _ := strings.Cut(b, "\n")
		name := filepath.Base(strings.TrimPrefix(first, "# "))
		body = strings.ReplaceAll(body, "%h", home)
		if err := os.WriteFile(filepath.Join(units, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Join(units, name))
		if name == "fleet-nightly.service" {
			for _, l := range strings.Split(body, "\n") {
				if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
					nightly = strings.ReplaceAll(v, "%%", "%") // the one specifier left
				}
			}
		}
	}
	if nightly == "" {
		t.Fatal("docs/cron.md has no fleet-nightly.service with an ExecStart")
	}
	// Today's bead, as the service names it: a night after the crontab's three.
	// (The day is read before and after: a run across midnight names either.)
	before := time.Now().Format(time.DateOnly)
	runJob("fleet-nightly.service", nightly, "/usr/local/bin:/usr/bin:/bin")
	res, err := record.ReadResult(filepath.Join(ws, "state", "results", "nightly-deps-"+before+".json"))
	if after := time.Now().Format(time.DateOnly); err != nil && after != before {
		res, err = record.ReadResult(filepath.Join(ws, "state", "results", "nightly-deps-"+after+".json"))
	}
	if err != nil || res.Status != record.StatusDone {
		t.Errorf("after the service's dispatch: result %+v, %v", res, err)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze is not installed: the units are not verified")
		return
	}
	if out, err := exec.Command("systemd-analyze", append([]string{"verify"}, names...)...).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", strings.Join(names, " "), err, out)
	}
}
