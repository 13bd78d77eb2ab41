package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds are the testscript commands of the hostile state directory tests, shared by
// validate-state's and analyze-runs' scripts (WithScriptCmds):
//
//	plant DIR SHAPE [N]        N (default 1) entries SHAPE-<i>.json of a Shape in DIR
//	peakrss MB [!] CMD ARGS... runs CMD (from PATH), its output thrown away, and fails if its
//	                           peak RSS is over MB megabytes (or its exit status is not as asked:
//	                           ! for a failure); the figure is logged, and written to
//	                           $WORK/peakrss
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"plant": func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: plant DIR SHAPE [N]")
		}
		dir := ts.MkAbs(args[0])
		ts.Check(os.MkdirAll(dir, 0o700))
		n := 1
		if len(args) > 2 {
			var err error
			n, err = strconv.Atoi(args[2])
			ts.Check(err)
		}
		for i := 0; i < n; i++ {
			ts.Check(Plant(dir, fmt.Sprintf("%s-%d.json", args[1], i), Shape(args[1])))
		}
	},
	"peakrss": func(ts *testscript.TestScript, neg bool, args []string) {
		limit, err := strconv.Atoi(args[0])
		ts.Check(err)
		args = args[1:]
		wantFail := false
		if args[0] == "!" {
			wantFail, args = true, args[1:]
		}
		// The command is started by peakrss-helper, a fresh small process: a child's peak RSS
		// as the kernel counts it includes that of the process it was forked from at the
		// moment of exec, and this test process may hold hundreds of megabytes.
		helper := exec.Command(lookTool(ts.Getenv("PATH"), "peakrss-helper"), append([]string{lookTool(ts.Getenv("PATH"), args[0])}, args[1:]...)...)
		helper.Dir = ts.Getenv("WORK")
		for _, kv := range []string{"PATH", "HOME", "TMPDIR", "STATE_DIR", "SOURCE_DATE_EPOCH"} {
			if v := ts.Getenv(kv); v != "" {
				helper.Env = append(helper.Env, kv+"="+v)
			}
		}
		var stderr strings.Builder
		helper.Stderr = &stderr
		out, err := helper.Output()
		fields := strings.Fields(string(out))
		if len(fields) != 2 {
			ts.Fatalf("peakrss-helper %s: %v\n%.2000s", strings.Join(args, " "), err, stderr.String())
		}
		kb, _ := strconv.ParseInt(fields[0], 10, 64)
		if failed := fields[1] != "0"; failed != wantFail {
			ts.Fatalf("%s: exit %s, want a failure: %v\n%.2000s", strings.Join(args, " "), fields[1], wantFail, stderr.String())
		}
		mb := kb / 1024
		ts.Logf("peak RSS of %s: %d MB (limit %d MB)", strings.Join(args, " "), mb, limit)
		os.WriteFile(filepath.Join(ts.Getenv("WORK"), "peakrss"), []byte(strconv.FormatInt(mb, 10)+"\n"), 0o600)
		if mb > int64(limit) {
			ts.Fatalf("peak RSS %d MB is over the %d MB bound", mb, limit)
		}
	},
}

// PeakRSSHelper is the command peakrss-helper CMD ARGS...: it runs CMD, its output thrown away
// and its stderr passed on, and prints its peak RSS in KiB and its exit status.
func PeakRSSHelper() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kb := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB on Linux
	fmt.Println(kb, cmd.ProcessState.ExitCode())
	os.Exit(0)
}

// lookTool finds file in the directories of path, as the shell would.
func lookTool(path, file string) string {
	for _, dir := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(dir, file)); err == nil && !fi.IsDir() {
			return filepath.Join(dir, file)
		}
	}
	return file
}

// WithScriptCmds adds the hostile state directory commands (plant, peakrss) to cmds.
func WithScriptCmds(cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	for name, cmd := range scriptCmds {
		cmds[name] = cmd
	}
	return cmds
}
