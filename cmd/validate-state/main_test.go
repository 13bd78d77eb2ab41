package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/compattest"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		tool: func() { os.Exit(run(os.Args, os.Stdout, os.Stderr)) },
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
			env.Setenv("REPO", repo)
			env.Setenv("COMPAT", compat)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "compat" {
				return errCompat == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
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
		},
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
