package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/compattest"
	"github.com/agentfleet/fleet/internal/record/hostile"
	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		tool:             func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
		"peakrss-helper": hostile.PeakRSSHelper,
	})
}

func TestScripts(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	// Only the scripts that reach for the corpus need it; they skip where it is absent
	// ([!compat] skip), the others run.
	compat, errCompat := compattest.Find()
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Setup: func(env *testscript.Env) error {
			need.Setup(env)
			env.Setenv("REPO", repo)
			env.Setenv("COMPAT", compat)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "compat" {
				return errCompat == nil, nil
			}
			if cond == "readonlydirs" {
				return readOnlyWorks(), nil
			}
			if cond == "race" {
				return raceEnabled, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: hostile.WithScriptCmds(map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"need": need.Cmd,
			// readonly DIR: no file can be created in DIR any more (chmod, and for root, whom
			// modes do not hold back, the immutable attribute). Guard with [readonlydirs].
			// writable DIR undoes it.
			"readonly": func(ts *testscript.TestScript, neg bool, args []string) {
				dir := ts.MkAbs(args[0])
				ts.Defer(func() { makeWritable(dir) })
				ts.Check(makeReadOnly(dir))
			},
			"writable": func(ts *testscript.TestScript, neg bool, args []string) {
				ts.Check(makeWritable(ts.MkAbs(args[0])))
			},
			// mkfile NAME CONTENT writes CONTENT to the file NAME, both read as the inside of a Go
			// string literal, so that a name can hold a newline or an escape ('a\nb', '\x1b').
			"mkfile": func(ts *testscript.TestScript, neg bool, args []string) {
				name, err := strconv.Unquote(`"` + args[0] + `"`)
				ts.Check(err)
				content, err := strconv.Unquote(`"` + args[1] + `"`)
				ts.Check(err)
				ts.Check(os.WriteFile(ts.MkAbs(name), []byte(content), 0o600))
			},
			// fixkill DIR N runs validate-state --runs DIR --fix N times, each killed (SIGKILL) the
			// moment a backup's name appears in DIR (hidden or not), or failing that after 2 s, and
			// fails if a backup it left is not a whole copy of the record it was made from: the
			// original must be in <file>.bak, or nowhere. Files whose name starts with '.' are
			// temporary, and left for the next run to remove.
			"fixkill": func(ts *testscript.TestScript, neg bool, args []string) {
				dir := ts.MkAbs(args[0])
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				bin := lookPath(ts.Getenv("PATH"), tool)
				originals := map[string][]byte{}
				names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
				for _, name := range names {
					originals[filepath.Base(name)], _ = os.ReadFile(name)
				}
				partial := 0
				for i := 0; i < n; i++ {
					for name, b := range originals {
						ts.Check(os.WriteFile(filepath.Join(dir, name), b, 0o600))
					}
					cmd := exec.Command(bin, "--runs", dir, "--fix")
					cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "HOME=" + ts.Getenv("HOME")}
					ts.Check(cmd.Start())
					for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
						if matches, _ := filepath.Glob(filepath.Join(dir, "*.bak*")); len(matches) > 0 {
							break
						}
						if matches, _ := filepath.Glob(filepath.Join(dir, ".*.bak*")); len(matches) > 0 {
							break
						}
						time.Sleep(20 * time.Microsecond)
					}
					cmd.Process.Kill()
					cmd.Wait()
					baks, _ := filepath.Glob(filepath.Join(dir, "*.bak*"))
					for _, bak := range baks {
						if strings.HasPrefix(filepath.Base(bak), ".") {
							continue // a temporary file, for the next run to remove
						}
						b, _ := os.ReadFile(bak)
						orig := originals[strings.SplitN(filepath.Base(bak), ".bak", 2)[0]]
						if !bytes.Equal(b, orig) {
							partial++
							ts.Logf("kill %d left %s with %d of the original's %d bytes", i, filepath.Base(bak), len(b), len(orig))
						}
						os.Remove(bak)
					}
				}
				if partial > 0 {
					ts.Fatalf("%d of %d killed runs left a backup that is not a whole copy of its record", partial, n)
				}
			},
			// mkbig FILE MB writes a JSON record padded to MB megabytes.
			"mkbig": func(ts *testscript.TestScript, neg bool, args []string) {
				f, err := os.Create(ts.MkAbs(args[0]))
				ts.Check(err)
				defer f.Close()
				f.WriteString(`{"bead": "bd-big", "prompt": "`)
				chunk := bytes.Repeat([]byte("x"), 1<<20)
				n, err := strconv.Atoi(args[1])
				ts.Check(err)
				for i := 0; i < n; i++ {
					f.Write(chunk)
				}
				f.WriteString(`"}`)
			},
		}),
	})
}

// TestVerdictsMatchAjv runs the binary's engine on the whole compat corpus with the users'
// schemas and checks every file's verdict against ajv-cli's.
func TestVerdictsMatchAjv(t *testing.T) {
	dir := compattest.Dir(t)
	b, err := os.ReadFile(filepath.Join(dir, "validate-state", "verdicts-ajv.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "validate-state", "state")
	var stdout, stderr bytes.Buffer
	code := run([]string{tool, "--all", "--json", "--state-dir", state, "--schema-dir", filepath.Join(dir, "schemas")}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit code = %d, want 1 (the corpus has invalid files); stderr:\n%s", code, stderr.String())
	}
	var doc struct {
		Files []struct {
			Path  string `json:"path"`
			Valid bool   `json:"valid"`
		} `json:"files"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout.String())
	}
	if len(doc.Files) != len(want) {
		t.Errorf("checked %d files, ajv-cli judged %d", len(doc.Files), len(want))
	}
	for _, f := range doc.Files {
		rel := "state/" + strings.TrimPrefix(filepath.ToSlash(f.Path), filepath.ToSlash(state)+"/")
		got := map[bool]string{true: "valid", false: "invalid"}[f.Valid]
		if want[rel] != got {
			t.Errorf("%s: %s, ajv-cli says %q", rel, got, want[rel])
		}
	}
}

// lookPath finds file in the directories of path, as the shell would.
func lookPath(path, file string) string {
	for _, dir := range filepath.SplitList(path) {
		if fi, err := os.Stat(filepath.Join(dir, file)); err == nil && !fi.IsDir() {
			return filepath.Join(dir, file)
		}
	}
	return file
}

// makeReadOnly keeps anyone from creating files in dir: its mode, and for root the immutable
// attribute (chattr +i), since modes do not stop root.
func makeReadOnly(dir string) error {
	if err := os.Chmod(dir, 0o555); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			return fmt.Errorf("chattr +i %s: %v %s", dir, err, out)
		}
	}
	return nil
}

func makeWritable(dir string) error {
	if os.Geteuid() == 0 {
		exec.Command("chattr", "-i", dir).Run()
	}
	return os.Chmod(dir, 0o755)
}

// readOnlyWorks reports whether makeReadOnly really stops file creation here (chattr needs a
// file system that has the attribute, ext4 say, not tmpfs).
func readOnlyWorks() bool {
	dir, err := os.MkdirTemp("", "ro")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	defer makeWritable(dir)
	if makeReadOnly(dir) != nil {
		return false
	}
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err == nil {
		f.Close()
		return false
	}
	return true
}
