package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agentfleet/fleet/internal/fsx"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xeipuuv/gojsonschema"
)

// slowValid is the reference verdict: what Validate says without the fast path.
func slowValid(t testing.TB, s *Schema, doc []byte) bool {
	t.Helper()
	if !json.Valid(doc) {
		return false
	}
	res, err := s.compiled.Validate(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		t.Fatalf("gojsonschema on a well-formed document: %v", err)
	}
	return res.Valid()
}

// checkSound fails when the fast path says valid and the reference does not: the one thing the
// fast path must never do. It reports whether the fast path said valid.
func checkSound(t testing.TB, name string, s *Schema, doc []byte) bool {
	t.Helper()
	if !s.fast.valid(doc) {
		return false
	}
	if !slowValid(t, s, doc) {
		t.Errorf("%s: fast path says valid, gojsonschema/json.Valid say invalid: %q", name, doc)
	}
	return true
}

// kitchenSink uses every supported keyword, in the forms the real schemas do not.
const kitchenSink = `{
  "$comment": "every keyword the fast path supports",
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-zé]+$"},
    "n": {"type": "integer", "minimum": -3, "maximum": 7},
    "x": {"type": "number", "maximum": 10},
    "num": {"type": "number"},
    "any": true,
    "never": false,
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "é", "éx", "\u2028"]}, "minItems": 1, "maxItems": 3},
    "k": {"enum": [1, "1", true, null, -2]},
    "c": {"const": "a\"b<"},
    "z": {"const": 0},
    "big": {"type": "integer"},
    "nested": {"type": ["object", "null"],
      "properties": {"deep": {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}}},
      "additionalProperties": {"type": "boolean"}},
    "na": {"type": "array", "items": false},
    "empty": {"title": "annotations only"},
    "a/b": {"type": "null"}
  },
  "required": ["name", "req_only"],
  "additionalProperties": {"type": ["string", "integer"], "maxLength": 3}
}`

// kitchenDocs are documents for kitchenSink, valid and not.
var kitchenDocs = []string{
	`{"name":"abc","req_only":"x","n":3,"x":2,"num":2.5e3,"any":[{"a":1}],"tags":["a","é"],"k":1,"c":"a\"b<","z":0,"big":123456789012345678901234,"nested":{"deep":[[1,2],[]],"flag":true},"na":[],"extra":7,"empty":{"q":[1.5]},"a/b":null}`,
	`{"name":"ab","req_only":"xyz"}`,
	`{"name":"\u0061b","req_only":"x","tags":["\u00e9x","\u2028"],"k":"1","c":"a\u0022b\u003c"}`,
	`{"name":"ab","req_only":"x","k":null,"nested":null}`,
	`{"name":"ab","req_only":"x","k":true,"tags":["b","b","b"]}`,
	`{"name":"ab","req_only":"x","k":-2,"n":-3}`,
	`{"name":"ab","req_only":"x","x":10,"n":7}`,
	`{"name":"ab","req_only":"x","x":10.0,"n":7.0,"z":-0,"k":1.0}`,
	`{"name":"ab","req_only":"x","n":1e0}`,
	`{"name":"a","req_only":"x"}`,
	`{"name":"abcdef","req_only":"x"}`,
	`{"name":"ab","req_only":"xyzw"}`,
	`{"name":"ab"}`,
	`{"name":"ab","req_only":"x","never":null}`,
	`{"name":"ab","req_only":"x","na":[1]}`,
	`{"name":"ab","req_only":"x","tags":[]}`,
	`{"name":"ab","req_only":"x","nested":{"deep":[[-1]]}}`,
	`{"name":"ab","req_only":"x","nested":{"other":"s"}}`,
	`{"name":"ab","req_only":"x","n":99999999999999999999}`,
	`{"name":"ab","req_only":"x","n":-0}`,
	`{"name":"AB","req_only":"x"}`,
	`{"name":"ab","req_only":"x","extra":1.5}`,
	`{"name":"ab","req_only":"x","k":2}`,
	`{"name":"ab","req_only":"x","k":"2"}`,
	`{"name":"ab","req_only":"x","c":"a\"b\u003C"}`,
	`{"name":"ab","req_only":"x","\u006e":9}`,
	`{"name":"ab","req_only":"x","tags":["\ud800"]}`,
	`{"name":"ab","req_only":"x","tags":["\uDBFF\uDFFF"]}`,
	`{"name":"\u00e9\u00e9","req_only":"x"}`,
	`{"name":"ab","req_only":"x","extra":"\ud83d\ude00ab"}`,
	`{"name":"ab","req_only":"x","extra":"\ud83d\ude00abc"}`,
}

type schemaCase struct {
	name   string
	s      *Schema
	subdir string // the corpus directory of its records ("" for none)
}

// fastSchemas loads the four real schemas (the embedded ones and the users' copies in the
// compat corpus) and kitchenSink. The users' copies are skipped when the corpus is absent.
func fastSchemas(t testing.TB) []schemaCase {
	t.Helper()
	var out []schemaCase
	for _, kind := range []string{"run", "result"} {
		s, err := Load(kind, "")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, schemaCase{"embedded " + kind, s, kind + "s"})
		dir := filepath.Join(compatDir, "schemas")
		if _, err := os.Stat(filepath.Join(dir, kind+".schema.json")); err == nil {
			s, err := Load(kind, dir)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, schemaCase{"compat " + kind, s, kind + "s"})
		}
	}
	s, err := Compile("kitchen", "kitchen.schema.json", []byte(kitchenSink))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, schemaCase{"kitchen sink", s, ""})
}

// corpusFile is one record of the compat corpus with ajv-cli's verdict.
type corpusFile struct {
	path   string // relative to validate-state, e.g. state/runs/bd-000001.json
	subdir string // runs or results
	doc    []byte // BOM stripped, as Validate hands it to the fast path
	ajv    string
}

func loadCorpus(t testing.TB) []corpusFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(compatDir, "validate-state", "verdicts-ajv.json"))
	if err != nil {
		t.Skipf("compat corpus not found: %v", err)
	}
	var verdicts map[string]string
	if err := json.Unmarshal(b, &verdicts); err != nil {
		t.Fatal(err)
	}
	var files []corpusFile
	for path, v := range verdicts {
		doc, err := os.ReadFile(filepath.Join(compatDir, "validate-state", path))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, corpusFile{path, filepath.Base(filepath.Dir(path)), fsx.StripBOM(doc), v})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

func TestCompileFastSupportedSet(t *testing.T) {
	for _, c := range fastSchemas(t) {
		if c.s.fast == nil {
			t.Errorf("%s: no fast path", c.name)
		}
	}
	// Each of these uses something outside the supported set, at the root or deep inside, and
	// must get no fast path.
	none := []string{
		`{"format": "date-time"}`,
		`{"properties": {"a": {"type": "string", "format": "email"}}}`,
		`{"$ref": "#/definitions/a", "type": "object", "definitions": {"a": {}}}`,
		`{"$ref": "other.json#/definitions/a"}`, `{"$ref": "#/definitions/a~1b", "definitions": {"a/b": {}}}`,
		`{"$ref": "#/$defs/missing", "$defs": {}}`,
		`{"$ref": "#/$defs/a", "$defs": {"a": {"properties": {"b": {"$ref": "#/$defs/a"}}}}}`,
		`{"$defs": {"a": {"format": "email"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`,
		`{"oneOf": [{}]}`, `{"oneOf": [{"type": "null"}, {"type": "object"}], "type": "object"}`,
		`{"oneOf": [{"type": "null"}, {}]}`, `{"oneOf": [{"type": "null"}, {"type": ["object", "null"]}]}`,
		`{"oneOf": [{"type": "null"}, {"type": "string", "enum": ["a"]}]}`,
		`{"oneOf": [{"type": "string"}, {"type": "object"}]}`,
		`{"oneOf": [{"type": "null"}, {"type": "object"}, {"type": "string"}]}`, `{"anyOf": [{}]}`, `{"allOf": [{}]}`, `{"not": {}}`,
		`{"if": {}, "then": {}}`,
		`{"patternProperties": {"^a": {}}}`,
		`{"dependencies": {"a": ["b"]}}`,
		`{"uniqueItems": true}`, `{"multipleOf": 2}`,
		`{"exclusiveMinimum": 0}`, `{"exclusiveMaximum": 0}`,
		`{"minProperties": 1}`, `{"propertyNames": {}}`, `{"contains": {}}`,
		`{"items": [{}]}`, `{"additionalItems": false}`,
		`{"minimum": 0.5}`, `{"maximum": 1e300}`,
		`{"const": 1.5}`, `{"const": {"a": 1}}`, `{"const": [1]}`, `{"const": -0.0}`,
		`{"enum": ["a", {"b": 1}]}`, `{"enum": []}`,
		`{"items": {"additionalProperties": {"not": {}}}}`,
		`{"properties": {"v": {"properties": {"w": {"unevaluatedProperties": false}}}}}`,
		`{"type": "any"}`, `{"pattern": "("}`, `{"minLength": -1}`, `{"maxItems": 1.5}`,
		`{"id": "draft 4 spelling"}`,
	}
	for _, doc := range none {
		var tree any
		if err := json.Unmarshal([]byte(doc), &tree); err != nil {
			t.Fatal(err)
		}
		if compileFast(tree) != nil {
			t.Errorf("compileFast(%s) built a fast path", doc)
		}
	}
	// Definitions used through a $ref, alone, and a oneOf of null and a schema that rejects
	// null by its type, alone, have a path (the execution state's schema is made of them).
	for _, doc := range []string{
		`{"$ref": "#/definitions/a", "definitions": {"a": {}}}`, `{"$defs": {"a": {}}}`,
		`{"$defs": {"a": {"type": "object"}}, "properties": {"x": {"oneOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}}`,
	} {
		var tree any
		if err := json.Unmarshal([]byte(doc), &tree); err != nil {
			t.Fatal(err)
		}
		if compileFast(tree) == nil {
			t.Errorf("compileFast(%s) built no fast path", doc)
		}
	}
	// An empty schema, or one of annotations only, accepts everything but still has a path.
	for _, doc := range []string{`{}`, `true`, `{"title": "t", "$schema": "x", "examples": [1], "nullable": true}`} {
		var tree any
		_ = json.Unmarshal([]byte(doc), &tree)
		if n := compileFast(tree); n == nil || !n.valid([]byte(`[1, {"a": null}]`)) {
			t.Errorf("compileFast(%s) = %v, want a path accepting everything", doc, n)
		}
	}
}

// TestFastCorpus runs the fast path over the compat corpus. Records ajv-cli calls valid must
// take it (95% at least); with the users' schemas, which ajv-cli judged by, no record it calls
// invalid may; and with every schema a fast "valid" must be gojsonschema's verdict too. (The
// embedded schemas accept any agent name, so there an ajv-invalid record may be valid.)
func TestFastCorpus(t *testing.T) {
	files := loadCorpus(t)
	for _, c := range fastSchemas(t) {
		if c.subdir == "" {
			continue
		}
		compat := strings.HasPrefix(c.name, "compat")
		var valid, fast int
		var fellBack []string
		for _, f := range files {
			if f.subdir != c.subdir {
				continue
			}
			took := checkSound(t, c.name+" "+f.path, c.s, f.doc)
			switch {
			case f.ajv == "invalid" && took && compat:
				t.Errorf("%s: %s is invalid for ajv-cli, the fast path says valid", c.name, f.path)
			case f.ajv == "valid":
				valid++
				if took {
					fast++
				} else {
					fellBack = append(fellBack, f.path)
				}
			}
		}
		t.Logf("%s: %d of %d valid records take the fast path; fall back: %v", c.name, fast, valid, fellBack)
		if fast*100 < valid*95 {
			t.Errorf("%s: only %d of %d valid records take the fast path", c.name, fast, valid)
		}
	}
}

// TestFastTraps pins the cases the fast path must leave to gojsonschema, and a few it must take.
func TestFastTraps(t *testing.T) {
	run := mustLoad(t, "run", "")
	// with replaces the text of field k's value in fullRun.
	with := func(k, v string) string {
		i := strings.Index(fullRun, `"`+k+`": `)
		j := i + len(k) + 4
		end := j + strings.IndexAny(fullRun[j:], ",}")
		if fullRun[j] == '"' {
			end = j + 1 + strings.IndexByte(fullRun[j+1:], '"') + 1
		}
		return fullRun[:j] + v + fullRun[end:]
	}
	tests := []struct {
		name string
		doc  string
		want bool
	}{
		{"plain", fullRun, true},
		{"whitespace around", " \t\r\n" + fullRun + "\n\n", true},
		{"big exit code", with("exit_code", "12345678901234567890"), true}, // integer, no bound
		{"exit code -0", with("exit_code", "-0"), true},
		{"escaped unconstrained", with("prompt", `"\u00e9\ud83d\ude00\n\"\\\/\b\f\r\t"`), true},
		{"escaped bead", with("bead", `"\u0062d-1"`), true},
		{"escaped key", strings.Replace(fullRun, `"bead"`, `"\u0062ead"`, 1), true},
		{"escaped pattern ok", with("agent", `"cl\u0061ude"`), true},
		{"escaped hash", with("prompt_hash", `"\u0031`+strings.Repeat("a", 63)+`"`), true},
		{"verification", strings.TrimSuffix(fullRun, "}") + `, "verification": {"lint": "pass", "x": [1, {"y": 2.5e-3}], "lint_details": [{"a": [], "a": {}}]}}`, true},

		{"duplicate key", strings.Replace(fullRun, `"attempt": 1,`, `"attempt": 1, "attempt": 1,`, 1), false},
		{"duplicate key via escape", strings.Replace(fullRun, `"attempt": 1,`, `"attempt": 1, "\u0061ttempt": 1,`, 1), false},
		{"attempt 1.0", with("attempt", "1.0"), false},
		{"attempt 1e0", with("attempt", "1e0"), false},
		{"duration overflows int64", with("duration_seconds", "99999999999999999999"), false},
		{"duration 19 digits", with("duration_seconds", "1000000000000000000"), false},
		{"lone surrogate", with("bead", `"\ud800"`), false},
		{"invalid UTF-8 in key", strings.Replace(fullRun, `"bead"`, "\"b\xffead\"", 1), false},
		{"invalid UTF-8 in value", with("model", "\"op\xc3\""), false},
		{"raw control char", with("prompt", "\"a\tb\""), false},
		{"bad escape", with("prompt", `"\x41"`), false},
		{"short unicode escape", with("prompt", `"\u00e"`), false},
		{"leading zero", with("attempt", "01"), false},
		{"bare minus", with("exit_code", "-"), false},
		{"dot without digits", with("exit_code", "1."), false},
		{"exponent without digits", with("exit_code", "1e+"), false},
		{"trailing garbage", fullRun + "x", false},
		{"second value", fullRun + " {}", false},
		{"trailing comma", strings.TrimSuffix(fullRun, "}") + ",}", false},
		{"missing colon", strings.Replace(fullRun, `"bead": `, `"bead" `, 1), false},
		{"truncated", fullRun[:len(fullRun)-1], false},
		{"unknown key", strings.TrimSuffix(fullRun, "}") + `, "zz": 1}`, false},
		{"missing required", strings.Replace(fullRun, `"status": "running",`, ``, 1), false},
		{"enum miss", with("status", `"RUNNING"`), false},
		{"const miss", with("schema_version", "2"), false},
		{"const as 1.0", with("schema_version", "1.0"), false},
		{"minLength", with("bead", `""`), false},
		{"minimum", with("attempt", "0"), false},
		{"pattern", with("prompt_hash", `"abc"`), false},
		{"escape breaks pattern", with("agent", `"\u002dclaude"`), false},
		{"null for string", with("bead", "null"), false},
		{"array root", `[1]`, false},
		{"null root", `null`, false},
		{"literal typo", with("finished_at", "nul"), false},
		{"too deep", strings.TrimSuffix(fullRun, "}") + `, "verification": {"lint_details": ` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`, false},
	}
	for _, tt := range tests {
		got := run.fast.valid([]byte(tt.doc))
		if got != tt.want {
			t.Errorf("%s: fast.valid = %v, want %v\n%s", tt.name, got, tt.want, tt.doc)
		}
		checkSound(t, tt.name, run, []byte(tt.doc))
	}
}

func TestFastKitchenSink(t *testing.T) {
	s, err := Compile("kitchen", "kitchen.schema.json", []byte(kitchenSink))
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, doc := range kitchenDocs {
		fast := checkSound(t, "kitchen", s, []byte(doc))
		if fast == slowValid(t, s, []byte(doc)) {
			agree++
		}
	}
	t.Logf("kitchen sink: the fast path agrees with gojsonschema on %d of %d documents", agree, len(kitchenDocs))
	if !s.fast.valid([]byte(kitchenDocs[0])) || !s.fast.valid([]byte(kitchenDocs[2])) {
		t.Error("the kitchen sink's valid examples do not take the fast path")
	}
}

// mutations returns variants of doc, a valid record: each member dropped, each member set to
// other values, members duplicated, an unknown member added, the text truncated, garbage
// appended, characters escaped. Members of nested objects are varied too.
func mutations(doc []byte) [][]byte {
	var rec map[string]any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&rec); err != nil {
		return nil
	}
	out := [][]byte{doc}
	add := func(v any) {
		b, err := json.Marshal(v)
		if err == nil {
			out = append(out, b)
		}
	}
	values := []any{nil, "", json.Number("0"), json.Number("-1"), json.Number("1.5"), "x", true, []any{}, map[string]any{},
		json.Number("1"), json.Number("2"), json.Number("-0"), json.Number("1.0"), json.Number("1e0"), json.Number("1E+2"),
		json.Number("12345678901234567890"), json.Number("-9223372036854775809"), "DONE", "done", "pass", "claude",
		"é", "\u2028", strings.Repeat("a", 64), map[string]any{"lint": "pass"}, []any{nil, 1, "a"}}
	// vary sets, in a copy of rec, each member of the object at path (nil: the root).
	var vary func(obj map[string]any, set func(map[string]any))
	vary = func(obj map[string]any, set func(map[string]any)) {
		for k, v := range obj {
			clone := func() map[string]any {
				c := make(map[string]any, len(obj))
				for k2, v2 := range obj {
					c[k2] = v2
				}
				return c
			}
			c := clone()
			delete(c, k)
			set(c)
			for _, nv := range values {
				c := clone()
				c[k] = nv
				set(c)
			}
			if s, ok := v.(string); ok && s != "" {
				// Escape the first and the last character of the string.
				m, _ := json.Marshal(s)
				for _, at := range []int{1, len(m) - 2} {
					if m[at] < 0x80 && m[at] != '\\' && m[at] != '"' {
						esc := fmt.Sprintf(`%s\u%04x%s`, m[:at], m[at], m[at+1:])
						c := clone()
						c[k] = json.RawMessage(esc)
						set(c)
					}
				}
			}
			if sub, ok := v.(map[string]any); ok {
				vary(sub, func(nsub map[string]any) {
					c := clone()
					c[k] = nsub
					set(c)
				})
			}
		}
		c := clone0(obj)
		c["zz_unknown"] = json.Number("1")
		set(c)
	}
	vary(rec, func(m map[string]any) { add(m) })

	base, _ := json.Marshal(rec)
	for k := range rec {
		// A duplicate of each member, with the same value and with another.
		for _, v := range []string{"", `"x"`} {
			val := v
			if val == "" {
				b, _ := json.Marshal(rec[k])
				val = string(b)
			}
			out = append(out, []byte(fmt.Sprintf(`{%q:%s,%s`, k, val, base[1:])))
		}
		// Its name with a character escaped.
		name, _ := json.Marshal(k)
		esc := fmt.Sprintf(`"\u%04x%s:`, name[1], name[2:])
		out = append(out, bytes.Replace(base, append(name, ':'), []byte(esc), 1))
	}
	for i := 7; i < len(doc); i += 7 {
		out = append(out, doc[:i])
	}
	for _, g := range []string{"x", " }", "\x00", " {}", ",", " 1", "\"", "\n\t "} {
		out = append(out, append(append([]byte{}, doc...), g...))
	}
	return out
}

func clone0(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestFastDifferential checks, over the whole corpus and mutations of its valid records, that
// a fast "valid" always means gojsonschema says valid and json.Valid holds.
func TestFastDifferential(t *testing.T) {
	files := loadCorpus(t)
	schemas := fastSchemas(t)
	docs := map[string][][]byte{}
	for i, f := range files {
		docs[f.subdir] = append(docs[f.subdir], f.doc)
		// The records are much alike; in short mode a fifth of them is enough.
		if f.ajv == "valid" && (!testing.Short() || i%5 == 0 || strings.Contains(f.path, "edge")) {
			docs[f.subdir] = append(docs[f.subdir], mutations(f.doc)...)
		}
	}
	for _, d := range kitchenDocs {
		docs[""] = append(docs[""], mutations([]byte(d))...)
	}
	for _, c := range schemas {
		var n, fast int
		// Every schema sees its own records; the run and result schemas also see each other's.
		for subdir, list := range docs {
			if (c.subdir == "") != (subdir == "") {
				continue
			}
			for _, d := range list {
				n++
				if checkSound(t, c.name, c.s, d) {
					fast++
				}
			}
		}
		t.Logf("%s: %d documents, %d take the fast path", c.name, n, fast)
	}
}

// TestFastEmbeddedExamples runs the fast path over the examples of every other embedded schema
// that gets one, and over mutations of the valid examples.
func TestFastEmbeddedExamples(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "state", "schemas", "testdata", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no schema examples found: %v", err)
	}
	for _, dir := range dirs {
		kind := filepath.Base(dir)
		s, err := Load(kind, "")
		if err != nil {
			t.Fatal(err)
		}
		if s.fast == nil {
			t.Logf("%s: no fast path", kind)
			continue
		}
		for _, sub := range []string{"valid", "invalid"} {
			files, _ := filepath.Glob(filepath.Join(dir, sub, "*.json"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				doc := fsx.StripBOM(b)
				took := checkSound(t, f, s, doc)
				if sub == "valid" && !took {
					t.Logf("%s: falls back", f)
				}
				if sub == "invalid" && took {
					t.Errorf("%s: an invalid example takes the fast path", f)
				}
				if sub == "valid" {
					for _, m := range mutations(doc) {
						checkSound(t, f+" (mutated)", s, m)
					}
				}
			}
		}
	}
}

// TestFastConcurrent runs the fast path from many goroutines; the race detector checks that the
// compiled nodes and the pool of unescaping buffers are shared safely.
func TestFastConcurrent(t *testing.T) {
	s, err := Compile("kitchen", "kitchen.schema.json", []byte(kitchenSink))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]bool, len(kitchenDocs))
	for i, d := range kitchenDocs {
		want[i] = s.fast.valid([]byte(d))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				for i, d := range kitchenDocs {
					if got := s.fast.valid([]byte(d)); got != want[i] {
						t.Errorf("concurrent fast.valid(%s) = %v, want %v", d, got, want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// dfaPatterns exercise the automaton: anchors anywhere, alternation, repetition, case folding,
// patterns matching the empty text.
var dfaPatterns = []string{
	"^[a-f0-9]{64}$", "^[A-Za-z0-9][A-Za-z0-9._-]*$",
	"", "a", "^a", "a$", "^$", "$^", "^a*$", "a|^b", "b$|^a", "(?i)ab", "(?s)a.b", "a.b", "[^a-c]+",
	"^(ab)+$", `\Aa\z`, "a{2,3}", "^a{2,3}$", "x*", "(a|b)*a(a|b){3}", `^\d+$`, `\$`, `^-?(0|[1-9][0-9]*)$`,
	"(?:^|-)a", "a(?:$|b)", "^$|a", "(^)*a", "a($)*", `^\n?$`, "(?U)a+?b", "(?i)^[k-m]+$", "^.{2}$",
	"^(a|ab)(c|bcd)$", "-$", "^ ", "(?i)ſ",
}

func TestASCIIDFAAgreesWithRegexp(t *testing.T) {
	for _, p := range []string{`\bfoo`, `(?m)^a$`, `\B`, `(?m)a$`, "a{1000}"} {
		if compileASCIIDFA(p) != nil {
			t.Errorf("compileASCIIDFA(%q) built an automaton", p)
		}
	}
	// Every text of up to four bytes over an alphabet that the patterns care about, then
	// random ASCII texts.
	alphabet := []byte("ab-0K\n S$")
	texts := [][]byte{{}, []byte("147bbc4bc5f743ace9903957ddfa3c547dc863068c151917b50cf093095f41a3"),
		[]byte("147bbc4bc5f743ace9903957ddfa3c547dc863068c151917b50cf093095f41a"), []byte("claude"), []byte("gpt-5.3-codex")}
	var grow func(prefix []byte)
	grow = func(prefix []byte) {
		if len(prefix) == 4 {
			return
		}
		for _, c := range alphabet {
			text := append(append([]byte{}, prefix...), c)
			texts = append(texts, text)
			grow(text)
		}
	}
	grow(nil)
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		text := make([]byte, r.Intn(70))
		for j := range text {
			text[j] = byte(r.Intn(128))
		}
		texts = append(texts, text)
	}
	for _, p := range dfaPatterns {
		re := regexp.MustCompile(p)
		d := compileASCIIDFA(p)
		if d == nil {
			t.Errorf("compileASCIIDFA(%q) = nil", p)
			continue
		}
		for _, text := range texts {
			got, decided := d.match(text)
			if !decided {
				t.Fatalf("%q on ASCII %q: undecided", p, text)
			}
			if want := re.Match(text); got != want {
				t.Errorf("%q on %q: automaton %v, regexp %v", p, text, got, want)
			}
		}
		if _, decided := d.match([]byte("é")); decided {
			t.Errorf("%q: decided on non-ASCII text", p)
		}
	}
}

func FuzzASCIIDFA(f *testing.F) {
	for _, p := range dfaPatterns {
		f.Add(p, "ab-0")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		d := compileASCIIDFA(pattern)
		if got, decided := d.match([]byte(text)); decided && got != re.MatchString(text) {
			t.Errorf("%q on %q: automaton %v, regexp %v", pattern, text, got, !got)
		}
	})
}

func FuzzFastAgreesWithGojsonschema(f *testing.F) {
	if files, err := os.ReadDir(filepath.Join(compatDir, "validate-state", "state", "runs")); err == nil {
		for _, sub := range []string{"runs", "results"} {
			dir := filepath.Join(compatDir, "validate-state", "state", sub)
			files, _ = os.ReadDir(dir)
			for _, e := range files {
				if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
					f.Add(fsx.StripBOM(b))
				}
			}
		}
	}
	f.Add([]byte(fullRun))
	for _, d := range kitchenDocs {
		f.Add([]byte(d))
	}
	schemas := fastSchemas(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, c := range schemas {
			checkSound(t, c.name, c.s, doc)
		}
	})
}

// benchRecord is a typical finished run record: every field, with verification.
var benchRecord = []byte(`{
  "schema_version": 1,
  "bead": "bd-000037",
  "agent": "claude",
  "model": "sonnet",
  "repo": "/srv/repo",
  "prompt": "Implement component 55 of the service: add the retry budget to the dispatcher",
  "prompt_hash": "147bbc4bc5f743ace9903957ddfa3c547dc863068c151917b50cf093095f41a3",
  "started_at": "2026-01-02T21:50:00Z",
  "finished_at": "2026-01-02T22:15:57Z",
  "duration_seconds": 1557,
  "status": "done",
  "attempt": 1,
  "max_retries": 2,
  "session_name": "agent-bd-000037",
  "result_file": "state/results/bd-000037.json",
  "exit_code": 0,
  "output_summary": "Added the retry budget and its tests; all green.",
  "failure_reason": null,
  "template_name": "refactor",
  "prompt_full": "Implement component 55 of the service: add the retry budget to the dispatcher. Keep the public API unchanged and cover the new paths with tests.",
  "verification": {"lint": "pass", "tests": "pass", "ubs": "clean", "lint_details": [], "overall": "pass"}
}`)

// BenchmarkValidateFast is Validate on a valid record, which the fast path decides.
func BenchmarkValidateFast(b *testing.B) {
	s, err := Load("run", "")
	if err != nil {
		b.Fatal(err)
	}
	if s.fast == nil || !s.fast.valid(benchRecord) {
		b.Fatal("the benchmark record does not take the fast path")
	}
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		if p, err := s.Validate(benchRecord); err != nil || p != nil {
			b.Fatal(p, err)
		}
	}
}

// BenchmarkValidateSlow is Validate on the same record without the fast path: json.Valid and
// gojsonschema, as before.
func BenchmarkValidateSlow(b *testing.B) {
	loaded, err := Load("run", "")
	if err != nil {
		b.Fatal(err)
	}
	s := *loaded
	s.fast = nil
	b.SetBytes(int64(len(benchRecord)))
	b.ReportAllocs()
	for b.Loop() {
		if p, err := s.Validate(benchRecord); err != nil || p != nil {
			b.Fatal(p, err)
		}
	}
}

// TestFastRefsNullableAndFractions covers what the execution state's schema needs of the fast
// path: definitions through $ref, a oneOf of null and a definition, and numbers with a
// fraction against an integer bound. Every document is also given to gojsonschema: the fast
// path takes exactly the valid ones here except where a fraction rounds onto a bound.
func TestFastRefsNullableAndFractions(t *testing.T) {
	s, err := Compile("refs", "refs.schema.json", []byte(`{
  "type": "object", "required": ["tasks"],
  "properties": {
    "tasks": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Task"}},
    "summary": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/Summary"}]}
  },
  "$defs": {
    "Task": {"type": "object", "required": ["id"], "properties": {
      "id": {"type": "string", "minLength": 1},
      "trace": {"oneOf": [{"$ref": "#/$defs/Trace"}, {"type": "null"}]}}},
    "Trace": {"type": "object", "properties": {
      "duration": {"type": ["number", "null"], "minimum": 0},
      "share": {"type": "number", "minimum": 0, "maximum": 1}}},
    "Summary": {"type": "object", "required": ["total"], "properties": {"total": {"type": "integer", "minimum": 0}}}
  }
}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.fast == nil {
		t.Fatal("no fast path")
	}
	cases := []struct {
		doc       string
		valid     bool
		wantsFast bool // valid and decided by the fast path
	}{
		{`{"tasks": {}}`, true, true},
		{`{"tasks": {"a": {"id": "a"}}, "summary": null}`, true, true},
		{`{"tasks": {"a": {"id": "a", "trace": null}}, "summary": {"total": 1}}`, true, true},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": 0.25, "share": 0.5}}}}`, true, true},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": 1e-7, "share": 9.99e-1}}}}`, true, true},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": null}}}}`, true, true},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": 0.0}}}}`, true, false}, // onto the bound
		{`{"tasks": {"a": {"id": "a", "trace": {"share": 1.0}}}}`, true, false},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": -0.5}}}}`, false, false},
		{`{"tasks": {"a": {"id": "a", "trace": {"share": 1.5}}}}`, false, false},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": -1e-400}}}}`, false, false},
		{`{"tasks": {"a": {"id": "a", "trace": {"duration": 1e400}}}}`, true, false},
		{`{"tasks": {"a": {"id": "a", "trace": "x"}}}`, false, false},
		{`{"tasks": {"a": {"id": ""}}}`, false, false},
		{`{"tasks": {"a": {}}}`, false, false},
		{`{"tasks": {"a": null}}`, false, false},
		{`{"tasks": {}, "summary": {}}`, false, false},
		{`{"tasks": {}, "summary": {"total": -1}}`, false, false},
		{`{"tasks": {}, "summary": 3}`, false, false},
	}
	for _, c := range cases {
		if got := slowValid(t, s, []byte(c.doc)); got != c.valid {
			t.Errorf("gojsonschema says %v for %s, the case says %v", got, c.doc, c.valid)
		}
		took := checkSound(t, "refs", s, []byte(c.doc))
		if took != c.wantsFast {
			t.Errorf("fast path took %s: %v, want %v", c.doc, took, c.wantsFast)
		}
		for _, m := range mutations([]byte(c.doc)) {
			checkSound(t, "refs (mutated)", s, m)
		}
	}
	// The execution state's own schema gets a fast path.
	exec, err := Load("execution", "")
	if err != nil {
		t.Fatal(err)
	}
	if exec.fast == nil {
		t.Error("the execution schema has no fast path: every state write runs gojsonschema")
	}
}
