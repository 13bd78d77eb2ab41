// Package postmortem is for tests only: what a failed test that ran agents shows, so that a
// failure seen once under load can be read without running it again. It gathers what the tools
// leave in a directory tree (each agent's log, its supervisor's registry entry, loops'
// iteration and controller logs, the records' and loops' states, the scripts' hook logs), says
// of every process an entry or a state names whether it is still alive and what it waits on,
// and captures the panes of the tmux servers the test started (a supervisor's console: its
// warnings, and a Go panic, go there); a supervisor still running in a pane is asked for its
// goroutines (SIGQUIT, its pane kept), so that one that hangs shows where. It imports nothing
// of the toolkit, so any test may use it, internal/supervise's own included.
package postmortem

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TB is what OnFailure needs of a test: testing.TB, and the T of a testscript run with
// testscript.Run (which implements testing.TB).
type TB interface {
	Failed() bool
	Log(args ...any)
}

// OnFailure writes Report into tb's log when tb has failed; it does nothing otherwise. Call it
// from a t.Cleanup or a script's Defer that runs before the test's processes and tmux servers
// are stopped.
func OnFailure(tb TB, root string, sockets ...string) {
	if tb == nil || !tb.Failed() {
		return
	}
	var b bytes.Buffer
	Report(&b, root, sockets...)
	tb.Log("post-mortem (internal/testenv/postmortem):\n" + b.String())
}

// Limits of a report: a log is shown by its end, and the whole report stays readable.
const (
	tailBytes   = 6 << 10
	fileBytes   = 4 << 10
	reportBytes = 96 << 10
	paneLines   = 60
	dumpBytes   = 32 << 10
)

// Report writes to w what the tools left under root and what the tmux servers at sockets (and
// those the registry entries under root name) show.
func Report(w io.Writer, root string, sockets ...string) {
	r := &report{w: w, pids: map[int]string{}, sockets: map[string]bool{}}
	for _, s := range sockets {
		r.sockets[s] = true
	}
	r.printf("at %s, of %s:\n", time.Now().Format("15:04:05.000"), root)
	r.files(root)
	r.processes()
	r.panes()
	if r.cut {
		fmt.Fprintf(w, "(post-mortem cut at %d KB)\n", reportBytes>>10)
	}
}

type report struct {
	w       io.Writer
	n       int
	cut     bool
	pids    map[int]string // pid -> where it was named
	sockets map[string]bool
}

func (r *report) printf(format string, args ...any) {
	if r.cut {
		return
	}
	s := fmt.Sprintf(format, args...)
	if r.n+len(s) > reportBytes {
		r.cut = true
		return
	}
	r.n += len(s)
	io.WriteString(r.w, s)
}

// shown is what a file is, by its name: a log (shown by its end), a small state file (shown
// whole), or nothing of interest.
func shown(path string) (log, state bool) {
	base, dir := filepath.Base(path), filepath.Base(filepath.Dir(path))
	switch {
	case strings.HasSuffix(base, ".log"):
		return true, false
	case dir == "supervisors" && strings.HasSuffix(base, ".json"):
		return false, true
	case dir == "results" && strings.HasSuffix(base, ".json"):
		return false, true
	case base == "state.json", base == "registry.json":
		return false, true
	}
	return false, false
}

func (r *report) files(root string) {
	var logs, states []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if log, state := shown(path); log {
			logs = append(logs, path)
		} else if state {
			states = append(states, path)
		}
		return nil
	})
	if len(logs)+len(states) == 0 {
		r.printf("no logs or state files under %s\n", root)
		return
	}
	// The states first: they are small and say which logs matter.
	for _, p := range states {
		b := readHead(p, fileBytes)
		r.printf("=== %s (%s)\n%s\n", rel(root, p), modTime(p), strings.TrimRight(string(b), "\n"))
		r.notePIDs(p, b)
	}
	for _, p := range logs {
		b, size := readTail(p, tailBytes)
		head := fmt.Sprintf("=== %s (%d bytes, %s)", rel(root, p), size, modTime(p))
		if int64(len(b)) < size {
			head += fmt.Sprintf(", its last %d", len(b))
		}
		r.printf("%s\n%s\n", head, strings.TrimRight(printable(b), "\n"))
	}
}

// pidKeys are the JSON keys under which the tools record the processes of an attempt or a loop.
var pidKeys = regexp.MustCompile(`"(pid|agent_pid|monitor_pid|controller_pid|supervisor_pid)":\s*(\d+)`)

var socketKey = regexp.MustCompile(`"socket":\s*"([^"]+)"`)

func (r *report) notePIDs(path string, b []byte) {
	for _, m := range pidKeys.FindAllSubmatch(b, -1) {
		if pid, _ := strconv.Atoi(string(m[2])); pid > 0 {
			if _, ok := r.pids[pid]; !ok {
				r.pids[pid] = fmt.Sprintf("%s of %s", m[1], filepath.Base(path))
			}
		}
	}
	for _, m := range socketKey.FindAllSubmatch(b, -1) {
		var s string
		if json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &s) == nil && filepath.IsAbs(s) {
			r.sockets[s] = true
		}
	}
}

// processes says, of every process a state names, whether it lives and what it does.
func (r *report) processes() {
	var pids []int
	for pid := range r.pids {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		r.printf("=== process %d (%s): %s\n", pid, r.pids[pid], Process(pid))
	}
}

// Process describes a process for a post-mortem: gone, or its state (R running, S sleeping,
// D in uninterruptible sleep, T stopped, Z zombie), what the kernel has it wait in, and its
// command line; for a process of many threads, how many are in each state.
func Process(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	state := "?"
	if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
		state = string(stat[i+2])
	}
	wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	s := fmt.Sprintf("state %s", state)
	if len(wchan) > 0 && string(wchan) != "0" {
		s += ", waiting in " + string(wchan)
	}
	threads := map[string]int{}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if i := bytes.LastIndexByte(b, ')'); err == nil && i > 0 && i+2 < len(b) {
			threads[string(b[i+2])]++
		}
	}
	if len(tasks) > 1 {
		s += fmt.Sprintf(", threads by state %v", threads)
	}
	return s + ", command " + strings.Join(strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00"), " ")
}

// panes captures the end of every pane of every tmux server named.
func (r *report) panes() {
	var socks []string
	for s := range r.sockets {
		socks = append(socks, s)
	}
	sort.Strings(socks)
	for _, sock := range socks {
		if _, err := os.Stat(sock); err != nil {
			r.printf("=== tmux %s: no server (%v)\n", sock, err)
			continue
		}
		out, err := tmux(sock, "list-panes", "-a", "-F", "#{pane_id} #{session_name}:#{window_name} pid #{pane_pid} dead #{pane_dead} #{pane_dead_status}")
		if err != nil {
			r.printf("=== tmux %s: %v %s\n", sock, err, out)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) == 1 && lines[0] == "" {
			r.printf("=== tmux %s: no panes\n", sock)
			continue
		}
		var supervisors [][2]string // pane id, pid
		for _, line := range lines {
			id, _, _ := strings.Cut(line, " ")
			screen, err := tmux(sock, "capture-pane", "-p", "-J", "-S", "-"+strconv.Itoa(paneLines), "-t", id)
			if err != nil {
				screen = []byte(err.Error())
			}
			r.printf("=== tmux %s pane %s\n%s\n", sock, line, strings.TrimRight(string(screen), "\n"))
			var pid int
			if f := strings.Fields(line); len(f) >= 6 && f[2] == "pid" && f[5] == "0" {
				pid, _ = strconv.Atoi(f[3])
			}
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); pid > 0 && bytes.Contains(cmd, []byte(superviseVerb)) {
				supervisors = append(supervisors, [2]string{id, strconv.Itoa(pid)})
			}
		}
		for _, s := range supervisors {
			r.printf("=== goroutines of the supervisor %s in pane %s\n%s\n", s[1], s[0], goroutines(sock, s[0], s[1]))
		}
	}
}

// superviseVerb is the hidden verb every tool's supervisor runs under (supervise.SuperviseVerb,
// not imported: see the package comment).
const superviseVerb = "__supervise"

// goroutines has the Go program at pid, running in pane id, print its goroutines (SIGQUIT: it
// exits) and returns what its pane then shows; the pane is kept when the process exits
// (remain-on-exit) so that the dump can be read.
func goroutines(sock, id, pid string) string {
	if out, err := tmux(sock, "set-option", "-p", "-t", id, "remain-on-exit", "on"); err != nil {
		return fmt.Sprintf("(not asked: tmux set-option: %v %s)", err, out)
	}
	n, _ := strconv.Atoi(pid)
	if err := syscall.Kill(n, syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("(not asked: %v)", err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if out, err := tmux(sock, "display-message", "-p", "-t", id, "#{pane_dead}"); err != nil || strings.TrimSpace(string(out)) == "1" {
			break
		}
	}
	out, err := tmux(sock, "capture-pane", "-p", "-J", "-S", "-", "-t", id)
	if err != nil {
		return err.Error()
	}
	s := string(out)
	if i := strings.Index(s, "SIGQUIT"); i >= 0 {
		s = s[i:]
	}
	if len(s) > dumpBytes {
		s = s[:dumpBytes] + "\n(cut)"
	}
	return strings.TrimRight(s, "\n")
}

func tmux(sock string, args ...string) ([]byte, error) {
	cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
	cmd.Env = append(os.Environ(), "TMUX=")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
		return out, err
	case <-time.After(10 * time.Second):
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		<-done
		return out, fmt.Errorf("tmux %s: no answer in 10s", args[0])
	}
}

func readHead(path string, max int) []byte {
	f, err := os.Open(path)
	if err != nil {
		return []byte(err.Error())
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, int64(max)))
	return b
}

func readTail(path string, max int64) ([]byte, int64) {
	f, err := os.Open(path)
	if err != nil {
		return []byte(err.Error()), 0
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return []byte(err.Error()), 0
	}
	off := fi.Size() - max
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, off, max))
	if i := bytes.IndexByte(b, '\n'); off > 0 && i >= 0 {
		b = b[i+1:] // from the first whole line
	}
	return b, fi.Size()
}

// printable is a log's text as a test log can show it: carriage returns (a terminal's line
// ends) dropped, other control bytes but tabs and newlines escaped.
func printable(b []byte) string {
	var s strings.Builder
	for _, r := range strings.ToValidUTF8(string(b), "\uFFFD") {
		switch {
		case r == '\r':
		case r == '\n', r == '\t', r >= 0x20 && r != 0x7f:
			s.WriteRune(r)
		default:
			fmt.Fprintf(&s, "\\x%02x", r)
		}
	}
	return s.String()
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

func modTime(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return "written " + fi.ModTime().Format("15:04:05.000")
}
