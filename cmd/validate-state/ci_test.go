package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/xeipuuv/gojsonschema"
	"gopkg.in/yaml.v3"
)

// ciState makes a directory of state files that exercises the CI formats: a valid record, an
// invalid one, one that is not JSON, and names that need escaping in a URI or in XML. It
// returns the directory, the current directory for the duration of the test.
func ciState(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	files := map[string]string{
		"state/runs/bd-1.json":               `{"bead": "bd-1"}`,
		"state/results/bd 1:<&>\".json":      "{\n  \"schema_version\": 1, \"bead\": 5\n}",
		"state/results/bd-2.json":            `{"schema_version": `,
		"state/results/bd-\u00e9\u0001.json": `[]`,
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runFormat(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{tool}, args...), &stdout, &stderr); code != 1 {
		t.Fatalf("validate-state %s = exit %d, want 1; stderr:\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.Bytes()
}

// TestSARIFSchema checks --format sarif against the published SARIF 2.1.0 schema (OASIS,
// testdata/consumers/sarif-schema-2.1.0.json), formats such as uri-reference included.
func TestSARIFSchema(t *testing.T) {
	dir := ciState(t)
	schemaDoc, err := os.ReadFile(filepath.Join(testdataDir(t), "consumers", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaDoc))
	if err != nil {
		t.Fatalf("compiling the SARIF schema: %v", err)
	}
	for _, args := range [][]string{
		{"--all", "--format", "sarif"},
		{"--format", "sarif", "--kind", "result", filepath.Join(dir, "state", "results")}, // absolute: file: URIs
	} {
		out := runFormat(t, args...)
		res, err := sch.Validate(gojsonschema.NewBytesLoader(out))
		if err != nil {
			t.Fatalf("validate-state %v: not JSON: %v\n%s", args, err, out)
		}
		for _, e := range res.Errors() {
			t.Errorf("validate-state %v: SARIF schema: %s", args, e)
		}
		for _, want := range []string{`"uri": "state/results/bd%201:%3C&%3E%22.json"`, `"startLine": 2`, `"ruleId": "unreadable-file"`} {
			if args[0] == "--all" && !bytes.Contains(out, []byte(want)) {
				t.Errorf("validate-state %v: no %s in\n%s", args, want, out)
			}
		}
		if args[0] != "--all" && !bytes.Contains(out, []byte(`"uri": "file:///`)) {
			t.Errorf("validate-state %v: no file: URI in\n%s", args, out)
		}
	}
}

// TestJUnitConsumer has a JUnit consumer read --format junit: junitparser (Debian's
// python3-junitparser), which CI test reporters' importers resemble.
func TestJUnitConsumer(t *testing.T) {
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import junitparser").Run(); err != nil {
		need.Missing(t, "junitparser is not installed (apt-get install python3-junitparser): the JUnit XML is not read by a consumer")
	}
	ciState(t)
	if err := os.WriteFile("report.xml", runFormat(t, "--all", "--format", "junit"), 0o600); err != nil {
		t.Fatal(err)
	}
	// One line per testcase: suite, name, then each failure's type and text.
	script := `
import junitparser
xml = junitparser.JUnitXml.fromfile("report.xml")
for suite in xml:
    for case in suite:
        print(suite.name, "|", case.name, "|", case.classname, "|", " ; ".join(r._tag + ":" + (r.type or "") + ":" + (r.text or "") for r in case.result))
print("totals", xml.tests, xml.failures, xml.errors)
`
	out, err := exec.Command(python, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("junitparser: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"Run records | state/runs/bd-1.json | validate-state.run | failure:schema-violation:state/runs/bd-1.json:1:1: /agent: missing required field ; ",
		"Result records | state/results/bd 1:<&>\".json | validate-state.result | failure:schema-violation:state/results/bd 1:<&>\".json:1:1: /agent: missing required field ; ",
		"failure:schema-violation:state/results/bd 1:<&>\".json:2:32: /bead: expected string, got integer",
		"Result records | state/results/bd-2.json | validate-state.result | failure:unreadable-file:state/results/bd-2.json is not valid JSON",
		"Result records | state/results/bd-\u00e9\\x01.json | validate-state.result | failure:schema-violation:state/results/bd-\u00e9\\x01.json:1:1: /: expected object, got array",
		"totals 4 4 0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("junitparser read no %q in:\n%s", want, got)
		}
	}
}

// testdataDir is this package's testdata, found before a test changes directory.
var testdataAbs, _ = filepath.Abs("testdata")

func testdataDir(*testing.T) string { return testdataAbs }

// actionlintVersion is the actionlint TestActionLint builds from the Go module proxy.
const actionlintVersion = "v1.7.12"

// docBlock returns the fenced block of doc whose first line is marker.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n"+marker+"\n")
	if !ok {
		t.Fatalf("%s has no yaml block starting %q", doc, marker)
	}
	block, _, _ := strings.Cut(rest, "```")
	return marker + "\n" + block
}

// TestActionLint runs actionlint on docs/ci.md's workflow, with the action it uses read from
// this repository's action.yml (the workflow's "agentfleet/fleet@TAG" made "./").
func TestActionLint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: actionlint is not built")
	}
	repo, _ := filepath.Abs("../..")
	workflow := docBlock(t, filepath.Join(repo, "docs", "ci.md"), "# .github/workflows/state.yml")
	if !strings.Contains(workflow, "uses: agentfleet/fleet@v") {
		t.Fatalf("docs/ci.md's workflow does not use the action:\n%s", workflow)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: actionlint cannot be built, action.yml is not linted")
	}
	bin := t.TempDir()
	install := exec.Command(goBin, "install", "github.com/rhysd/actionlint/cmd/actionlint@"+actionlintVersion)
	install.Env = append(os.Environ(), "GOBIN="+bin, "GOFLAGS=-mod=mod")
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("actionlint %s cannot be built here (%v): action.yml is not linted\n%s", actionlintVersion, err, out)
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	action, err := os.ReadFile(filepath.Join(repo, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	local := regexp.MustCompile(`agentfleet/fleet@v[0-9.]+`).ReplaceAllString(workflow, "./")
	for name, content := range map[string]string{
		"action.yml":                  string(action),
		".github/workflows/state.yml": local,
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lint := exec.Command(filepath.Join(bin, "actionlint"), "-color=false", ".github/workflows/state.yml")
	lint.Dir = dir
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s\nworkflow:\n%s", err, out, local)
	}
}

// TestGitLabExample checks that docs/ci.md's GitLab job is YAML of the shape GitLab reads: a
// job with a script writing the JUnit report its artifacts name.
func TestGitLabExample(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	block := docBlock(t, filepath.Join(repo, "docs", "ci.md"), "# .gitlab-ci.yml")
	var jobs map[string]struct {
		Image     string   `yaml:"image"`
		Script    []string `yaml:"script"`
		Artifacts struct {
			When    string            `yaml:"when"`
			Reports map[string]string `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	if err := yaml.Unmarshal([]byte(block), &jobs); err != nil {
		t.Fatalf("docs/ci.md's .gitlab-ci.yml: %v", err)
	}
	job, ok := jobs["validate-state"]
	if !ok || len(job.Script) == 0 || job.Artifacts.Reports["junit"] == "" {
		t.Fatalf("docs/ci.md's .gitlab-ci.yml has no validate-state job with a junit report: %+v", jobs)
	}
	if last := job.Script[len(job.Script)-1]; !strings.Contains(last, "--format junit > "+job.Artifacts.Reports["junit"]) {
		t.Errorf("the job's script %q does not write the report %q", last, job.Artifacts.Reports["junit"])
	}
}
