package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// compatDir is the corpus of real records with ajv-cli's verdicts, shared by the team.
const compatDir = "../../../shared/compat"

func mustLoad(t *testing.T, kind, dir string) *Schema {
	t.Helper()
	s, err := Load(kind, dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const fullRun = `{"schema_version": 1, "bead": "bd-1", "agent": "claude", "model": "opus", "repo": "/r",
 "prompt": "p", "prompt_hash": "18a56f260a753d5ac30274c7d325f5c5ca62579ba8626bac0f04ce920365e905",
 "started_at": "2026-01-01T00:50:00Z", "finished_at": null, "duration_seconds": null, "status": "running",
 "attempt": 1, "max_retries": 2, "session_name": "agent-bd-1", "result_file": "state/results/bd-1.json",
 "exit_code": null, "prompt_full": "p"}`

func TestValidateProblems(t *testing.T) {
	run := mustLoad(t, "run", "")
	tests := []struct {
		name  string
		patch map[string]any // fields to set on fullRun; nil value deletes
		want  []Problem
	}{
		{"valid", nil, nil},
		{"missing", map[string]any{"status": nil}, []Problem{{Pointer: "/status", Message: "missing required field"}}},
		{"type", map[string]any{"attempt": "1"}, []Problem{{Pointer: "/attempt", Message: "expected integer, got string"}}},
		{"float", map[string]any{"attempt": 1.5}, []Problem{{Pointer: "/attempt", Message: "expected integer, got number"}}},
		{"enum", map[string]any{"status": "DONE"}, []Problem{{Pointer: "/status", Message: `expected one of "running", "done", "failed", "timeout", got "DONE"`}}},
		{"nested enum", map[string]any{"verification": map[string]any{"tests": "timeout"}},
			[]Problem{{Pointer: "/verification/tests", Message: `expected one of "pass", "fail", "skipped", got "timeout"`}}},
		{"const", map[string]any{"schema_version": 2}, []Problem{{Pointer: "/schema_version", Message: "expected 1, got 2"}}},
		{"extra", map[string]any{"a/b~c": 1}, []Problem{{Pointer: "/a~1b~0c", Message: "unexpected field: the schema allows no other fields here"}}},
		{"minimum", map[string]any{"duration_seconds": -5}, []Problem{{Pointer: "/duration_seconds", Message: "expected a number >= 0, got -5"}}},
		{"two sorted", map[string]any{"status": nil, "attempt": 0}, []Problem{
			{Pointer: "/attempt", Message: "expected a number >= 1, got 0"}, {Pointer: "/status", Message: "missing required field"}}},
	}
	for _, tt := range tests {
		var doc map[string]any
		if err := json.Unmarshal([]byte(fullRun), &doc); err != nil {
			t.Fatal(err)
		}
		for k, v := range tt.patch {
			if v == nil {
				delete(doc, k)
			} else {
				doc[k] = v
			}
		}
		b, _ := json.Marshal(doc)
		got, err := run.Validate(b)
		if err != nil {
			t.Errorf("%s: Validate = error %v", tt.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Validate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidateMalformed(t *testing.T) {
	run := mustLoad(t, "run", "")
	for _, doc := range []string{"", "  \n", `{"bead": "x"`, `{"a":1} trailing`, "\xef\xbb\xbf"} {
		_, err := run.Validate([]byte(doc))
		if !errors.Is(err, ErrNotJSON) {
			t.Errorf("Validate(%q) = %v, want ErrNotJSON", doc, err)
		}
	}
	if _, err := run.Validate([]byte("\xef\xbb\xbf" + fullRun)); err != nil {
		t.Errorf("Validate(BOM + record) = %v, want no error (JSON.parse accepts a BOM)", err)
	}
	problems, err := run.Validate([]byte(`[1,2]`))
	if err != nil || len(problems) != 1 || problems[0] != (Problem{Pointer: "", Message: "expected object, got array"}) {
		t.Errorf("Validate(array) = %v, %v; want one problem at the root", problems, err)
	}
}

func TestUnsupportedKeywords(t *testing.T) {
	doc := `{"type": "object",
	  "properties": {"prefixItems": {"type": "string"}, "list": {"prefixItems": [{"type": "string"}]}},
	  "$defs": {"d": {"unevaluatedProperties": false, "dependentRequired": {"a": ["b"]}}}}`
	s, err := Compile("run", "test.schema.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dependentRequired", "prefixItems", "unevaluatedProperties"}
	if !reflect.DeepEqual(s.Unsupported, want) {
		t.Errorf("Unsupported = %v, want %v", s.Unsupported, want)
	}
	plain := mustLoad(t, "run", "")
	if len(plain.Unsupported) != 0 {
		t.Errorf("embedded run schema Unsupported = %v, want none", plain.Unsupported)
	}
}

func TestLoadPrefersDirThenEmbedded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run.schema.json"), []byte(`{"type":"array"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := mustLoad(t, "run", dir); s.Source != filepath.Join(dir, "run.schema.json") {
		t.Errorf("Load(run, dir).Source = %q, want the workspace file", s.Source)
	}
	if s := mustLoad(t, "result", dir); s.Source != "embedded:result.schema.json" {
		t.Errorf("Load(result, dir).Source = %q, want the embedded schema", s.Source)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.schema.json"), []byte(`{"type":`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load("result", dir); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("Load(broken schema) = %v, want a not-valid-JSON error", err)
	}
}

// TestCompatVerdicts checks every record of the compatibility corpus against the users' schemas
// and compares the verdict with ajv-cli's.
func TestCompatVerdicts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(compatDir, "validate-state", "verdicts-ajv.json"))
	if err != nil {
		t.Skipf("compat corpus not found: %v", err)
	}
	var verdicts map[string]string
	if err := json.Unmarshal(b, &verdicts); err != nil {
		t.Fatal(err)
	}
	schemaDir := filepath.Join(compatDir, "schemas")
	bySubdir := map[string]*Schema{"runs": mustLoad(t, "run", schemaDir), "results": mustLoad(t, "result", schemaDir)}
	if len(verdicts) < 300 {
		t.Fatalf("verdicts-ajv.json lists %d files, want the whole corpus", len(verdicts))
	}
	for file, want := range verdicts {
		doc, err := os.ReadFile(filepath.Join(compatDir, "validate-state", file))
		if err != nil {
			t.Fatal(err)
		}
		s := bySubdir[filepath.Base(filepath.Dir(file))]
		problems, err := s.Validate(doc)
		got := "valid"
		if err != nil || len(problems) > 0 {
			got = "invalid"
		}
		if got != want {
			t.Errorf("%s: verdict %s (problems %v, err %v), ajv-cli says %s", file, got, problems, err, want)
		}
	}
}
