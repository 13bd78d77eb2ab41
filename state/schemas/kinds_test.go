package schemas_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xeipuuv/gojsonschema"
	"gopkg.in/yaml.v3"
)

// kinds lists every state-file kind that has a schema <kind>.schema.json and
// examples under testdata/<kind>/{valid,invalid}. yaml marks kinds whose
// examples are YAML documents, validated after conversion to JSON values.
var kinds = []struct {
	kind string
	yaml bool
}{
	{kind: "swarm-state"},
	{kind: "ralph-state"},
	{kind: "loop-state"},
	{kind: "loop-analytics"},
	{kind: "task-queue"},
	{kind: "retry-queue"},
	{kind: "progress"},
	{kind: "agent-state"},
	{kind: "manifest", yaml: true},
	{kind: "execution"},
}

func compile(t *testing.T, kind string) *gojsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(kind + ".schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s.schema.json: %v", kind, err)
	}
	if got, want := doc["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("%s.schema.json: $schema = %v, want %s", kind, got, want)
	}
	if got, want := doc["$id"], "https://agentfleet.dev/schemas/"+kind+".schema.json"; got != want {
		t.Errorf("%s.schema.json: $id = %v, want %s", kind, got, want)
	}
	for _, key := range []string{"title", "description"} {
		if s, _ := doc[key].(string); s == "" {
			t.Errorf("%s.schema.json: no %s", kind, key)
		}
	}
	l := gojsonschema.NewSchemaLoader()
	l.Draft = gojsonschema.Draft7
	l.AutoDetect = false
	s, err := l.Compile(gojsonschema.NewBytesLoader(b))
	if err != nil {
		t.Fatalf("%s.schema.json: compile: %v", kind, err)
	}
	return s
}

// examples returns the example files of testdata/<kind>/<dir>, sorted.
func examples(t *testing.T, kind, dir string, isYAML bool) []string {
	t.Helper()
	ext := ".json"
	if isYAML {
		ext = ".yaml"
	}
	files, err := filepath.Glob(filepath.Join("testdata", kind, dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// load reads an example and returns a document loader for it.
func load(t *testing.T, file string, isYAML bool) gojsonschema.JSONLoader {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !isYAML {
		if !json.Valid(b) {
			t.Fatalf("%s: not valid JSON", file)
		}
		return gojsonschema.NewBytesLoader(b)
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	jv, err := jsonValue(v)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return gojsonschema.NewGoLoader(jv)
}

// jsonValue converts a value decoded by yaml.v3 into one encoding/json can
// marshal: mappings become map[string]any, timestamps RFC 3339 strings.
func jsonValue(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			m[fmt.Sprint(k)] = c
		}
		return m, nil
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			s[i] = c
		}
		return s, nil
	case time.Time:
		return v.Format(time.RFC3339Nano), nil
	case nil, bool, string, int, int64, uint64, float64:
		return v, nil
	default:
		return nil, fmt.Errorf("unexpected YAML value %T", v)
	}
}

func TestKinds(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			s := compile(t, k.kind)
			valid := examples(t, k.kind, "valid", k.yaml)
			invalid := examples(t, k.kind, "invalid", k.yaml)
			if len(valid) < 2 {
				t.Errorf("testdata/%s/valid: %d examples, want at least 2", k.kind, len(valid))
			}
			if len(invalid) < 3 {
				t.Errorf("testdata/%s/invalid: %d examples, want at least 3", k.kind, len(invalid))
			}
			for _, c := range []struct {
				files []string
				want  bool
			}{{valid, true}, {invalid, false}} {
				for _, f := range c.files {
					r, err := s.Validate(load(t, f, k.yaml))
					if err != nil {
						t.Errorf("%s: %v", f, err)
						continue
					}
					if r.Valid() != c.want {
						var errs []string
						for _, e := range r.Errors() {
							errs = append(errs, e.String())
						}
						t.Errorf("%s: valid = %v, want %v (errors: %s)", f, r.Valid(), c.want, strings.Join(errs, "; "))
					}
				}
			}
		})
	}
}

// TestKindsComplete checks that every schema in the directory, apart from the
// record schemas users already keep (run, result), is covered by TestKinds,
// and that every testdata directory belongs to a kind.
func TestKindsComplete(t *testing.T) {
	known := map[string]bool{}
	for _, k := range kinds {
		known[k.kind] = true
	}
	schemas, err := filepath.Glob("*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range schemas {
		kind := strings.TrimSuffix(f, ".schema.json")
		if kind == "run" || kind == "result" {
			continue
		}
		if !known[kind] {
			t.Errorf("%s: kind %q has no entry in the kinds table", f, kind)
		}
	}
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !known[d.Name()] {
			t.Errorf("testdata/%s: not a known kind", d.Name())
		}
	}
}
