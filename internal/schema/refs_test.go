package schema

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noNetwork fails the test if anything makes an HTTP request through the default client (which
// gojsonschema fetches references with) while it runs.
func noNetwork(t *testing.T) {
	t.Helper()
	saved := http.DefaultTransport
	http.DefaultTransport = roundTripper(func(r *http.Request) (*http.Response, error) {
		t.Errorf("an HTTP request was made: %s %s", r.Method, r.URL)
		return nil, errors.New("no network in tests")
	})
	t.Cleanup(func() { http.DefaultTransport = saved })
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRefCycles: a reference cycle that never reaches into the document made gojsonschema
// recurse until the Go stack overflowed (1 GB, exit 2, a dump no recover catches): it is an
// error naming the schema and the cycle. A recursive schema that descends into the document
// (a tree of nodes) is fine (issue 9, item 9).
func TestRefCycles(t *testing.T) {
	for _, doc := range []string{
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#"}]}`,
		`{"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"anyOf":[{"$ref":"#/definitions/a"}]}},"properties":{"x":{"$ref":"#/definitions/a"}}}`,
		`{"dependencies":{"a":{"$ref":"#"}}}`,
		`{"$defs":{"n":{"not":{"$ref":"#/$defs/n"}}}}`,
		`{"definitions":{"a b":{"$ref":"#/definitions/a%20b"}}}`,
	} {
		_, err := Compile("run", "state/schemas/run.schema.json", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "schema state/schemas/run.schema.json: $ref cycle") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%s) = %v, want one line naming the schema and the cycle", doc, err)
		}
	}
	tree, err := Compile("run", "tree", []byte(`{"definitions":{"n":{"type":"object","properties":{"child":{"$ref":"#/definitions/n"}},"additionalProperties":false}},"$ref":"#/definitions/n"}`))
	if err != nil {
		t.Fatalf("Compile(a recursive tree) = %v", err)
	}
	if p, err := tree.Validate([]byte(`{"child":{"child":{"x":1}}}`)); err != nil || len(p) != 1 || p[0].Pointer != "/child/child/x" {
		t.Errorf("Validate(a tree with a stray field) = %v, %v; want /child/child/x", p, err)
	}
}

// TestRefsAreLocalOnly: a $ref to http:// made a request with no time limit, one to file://
// read any file: only files of the schema directory are read, and nothing is fetched.
func TestRefsAreLocalOnly(t *testing.T) {
	noNetwork(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "secret.json"), []byte(`{"type":"string"}`), 0o600)
	os.Mkdir(filepath.Join(dir, "schemas"), 0o700)
	schemas := filepath.Join(dir, "schemas")
	for _, ref := range []string{
		"http://127.0.0.1:9/x.json", "https://example.com/s.json#/definitions/a", "file:///etc/hostname",
		"/etc/hostname", "../secret.json", "sub/../../secret.json", "//example.com/x.json", "urn:x:y",
		"other.json?x=1", "#anchor",
	} {
		doc := `{"properties":{"a":{"$ref":"` + ref + `"}}}`
		os.WriteFile(filepath.Join(schemas, "run.schema.json"), []byte(doc), 0o600)
		_, err := Load("run", schemas)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("Load($ref %s) = %v, want a one-line refusal", ref, err)
		}
	}
	// A relative $ref under an $id on the web is resolved in the schema directory, not fetched.
	os.WriteFile(filepath.Join(schemas, "run.schema.json"), []byte(`{"$id":"https://agentfleet.dev/schemas/run.schema.json","properties":{"a":{"$ref":"missing.json"}}}`), 0o600)
	if _, err := Load("run", schemas); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load($ref missing.json under an https $id) = %v, want the local file missing", err)
	}
	// The built-in schemas refer to no file at all.
	if _, err := Compile("run", "embedded", []byte(`{"$ref":"other.json"}`)); err == nil {
		t.Error("Compile($ref other.json) with no schema directory = nil, want an error")
	}
}

// TestRefsToLocalFiles: references to files beside the schema (relative, or under the root's
// $id) are read from the schema directory, with their own references, and applied.
func TestRefsToLocalFiles(t *testing.T) {
	noNetwork(t)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "common"), 0o700)
	write := func(name, doc string) { os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600) }
	write("run.schema.json", `{"$id":"https://agentfleet.dev/schemas/run.schema.json","type":"object",
		"properties":{"agent":{"$ref":"common/defs.json#/definitions/agent"},
		"model":{"$ref":"https://agentfleet.dev/schemas/common/defs.json#/definitions/name"},
		"self":{"$ref":"run.schema.json#/definitions/flag"}},
		"definitions":{"flag":{"type":"boolean"}}}`)
	write("common/defs.json", `{"$id":"https://elsewhere.example/defs.json","definitions":{
		"agent":{"enum":["claude","codex"]},"name":{"$ref":"#/definitions/str"},"str":{"$ref":"str.json"}}}`)
	write("common/str.json", `{"type":"string","minLength":1}`)
	s, err := Load("run", dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Validate([]byte(`{"agent":"aider","model":"","self":1}`))
	want := []Problem{{Pointer: "/agent", Message: `expected one of "claude", "codex", got "aider"`},
		{Pointer: "/model", Message: `expected at least 1 character(s), got ""`}, {Pointer: "/self", Message: "expected boolean, got integer"}}
	if err != nil || !equalProblems(got, want) {
		t.Errorf("Validate = %v, %v; want %v", got, err, want)
	}
}

// TestSchemaFilesAreStateFiles: a schema file is read as a state file: a link is not followed, a
// named pipe does not hang the load, a huge file is not read.
func TestSchemaFilesAreStateFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "target.json"), []byte(`{}`), 0o600)
	os.Symlink("target.json", filepath.Join(dir, "run.schema.json"))
	if _, err := Load("run", dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Load(a link) = %v, want it refused", err)
	}
	syscall.Mkfifo(filepath.Join(dir, "result.schema.json"), 0o600)
	done := make(chan error, 1)
	go func() { _, err := Load("result", dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(a FIFO) = %v, want it refused", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load(a FIFO) hangs")
	}
	os.WriteFile(filepath.Join(dir, "progress.schema.json"), make([]byte, MaxSchemaSize+1), 0o600)
	if _, err := Load("progress", dir); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("Load(a huge file) = %v, want it refused unread", err)
	}
	// A pulled-in file through a link is refused the same way.
	os.WriteFile(filepath.Join(dir, "task-queue.schema.json"), []byte(`{"$ref":"linked.json"}`), 0o600)
	os.Symlink("target.json", filepath.Join(dir, "linked.json"))
	if _, err := Load("task-queue", dir); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Load($ref to a link) = %v, want it refused", err)
	}
}

// FuzzCompile: whatever a schema file in state/schemas holds (and the files beside it that its
// references reach: a link, a named pipe, a directory, a cycle of files, a huge file), compiling
// it returns a schema or an error, in bounded time and without a network request, and checking
// a document against a schema that compiled returns problems or an error, never a crash (a
// reference cycle overflowed the Go stack, which no recover catches).
func FuzzCompile(f *testing.F) {
	dir := f.TempDir()
	write := func(name, doc string) { os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o600) }
	write("defs.json", `{"definitions":{"a":{"type":"string"},"b":{"$ref":"#/definitions/a"},"c":{"$ref":"loop.json"}}}`)
	write("loop.json", `{"$ref":"loop2.json"}`)
	write("loop2.json", `{"allOf":[{"$ref":"loop.json"}]}`)
	write("big.json", `{"description":"`+strings.Repeat("x", MaxSchemaSize)+`"}`)
	os.Symlink("defs.json", filepath.Join(dir, "link.json"))
	syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600)
	os.Mkdir(filepath.Join(dir, "dir.json"), 0o700)
	for _, seed := range []string{
		`{"$ref":"#"}`, `{"allOf":[{"$ref":"#"}]}`, `{"properties":{"a":{"$ref":"#"}}}`,
		`{"$ref":"defs.json#/definitions/b"}`, `{"$ref":"defs.json#/definitions/c"}`, `{"$ref":"link.json"}`,
		`{"$ref":"fifo.json"}`, `{"$ref":"dir.json"}`, `{"$ref":"big.json"}`, `{"$ref":"loop.json"}`,
		`{"$ref":"http://127.0.0.1:9/"}`, `{"$ref":"file:///etc/hostname"}`, `{"$ref":"../x.json"}`,
		`{"$id":"https://a.dev/s/run.schema.json","properties":{"x":{"$ref":"defs.json#/definitions/a"}}}`,
		`{"definitions":{"a":{"$ref":"#/definitions/b"},"b":{"$ref":"#/definitions/a"}}}`,
		`{"type":"array","uniqueItems":true,"items":{"enum":[1,"a",null]}}`,
		`{"$ref":"#/definitions/missing"}`, `{"$ref":1}`, `true`, `false`, `[]`, `{"$ref":"#/0"}`,
	} {
		f.Add([]byte(seed), []byte(`{"x":[1e400,"a",{"x":null}],"a":"b"}`))
	}
	f.Fuzz(func(t *testing.T, schemaDoc, doc []byte) {
		noNetwork(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err := compile("run", filepath.Join(dir, "run.schema.json"), dir, schemaDoc)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("compile(%q) = an error of several lines: %v", schemaDoc, err)
				}
				return
			}
			s.Validate(doc)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("compile(%q) and Validate(%q) take over 10 s", schemaDoc, doc)
		}
	})
}
