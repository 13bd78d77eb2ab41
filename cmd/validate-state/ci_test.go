package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/fleet/internal/testenv/need"
	"github.com/xeipuuv/gojsonschema"
	"gopkg.in/yaml.v3"

	gitx "github.com/agentfleet/fleet/internal/git"
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
		for _, w := range sarifValidatorWarnings(t, out) {
			t.Errorf("validate-state %v: the SARIF validator would warn: %s", args, w)
		}
	}
}

// TestSARIFToolVersion checks the driver's version for SARIF2005 (it starts with an integer)
// for the versions a build can have: a release's tag, a pseudo-version, none.
func TestSARIFToolVersion(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"v1.2.3", "1.2.3"},
		{"v0.0.0-20261207142512-eaf8ce8a1b2c+dirty", "0.0.0-20261207142512-eaf8ce8a1b2c+dirty"},
		{"1.2.3", "1.2.3"},
		{"devel", "0.0.0-devel"},
		{"", "0.0.0-devel"},
	} {
		if got := sarifToolVersion(tc.in); got != tc.want {
			t.Errorf("sarifToolVersion(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// sarifValidatorWarnings are the warnings Microsoft's SARIF validator (sarif-sdk's `Sarif.Multitool
// validate`, its default rules) gives on a log such as ours, checked the way its rules check
// them: the multitool needs .NET, which the test machines do not have.
func sarifValidatorWarnings(t *testing.T, doc []byte) []string {
	t.Helper()
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Name           string `json:"name"`
					Version        string `json:"version"`
					InformationURI string `json:"informationUri"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				Locations []struct {
					PhysicalLocation *struct {
						Region *struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(doc, &log); err != nil {
		t.Fatalf("the SARIF log is not JSON: %v", err)
	}
	var warnings []string
	for i, run := range log.Runs {
		d := run.Tool.Driver
		// SARIF2005 ProvideToolProperties: an informationUri, and a version that starts with
		// an integer (its pattern ^\d+), so that versions compare.
		if u, err := url.Parse(d.InformationURI); err != nil || !u.IsAbs() {
			warnings = append(warnings, fmt.Sprintf("SARIF2005 runs[%d]: the tool %q provides no absolute informationUri (%q)", i, d.Name, d.InformationURI))
		}
		if !regexp.MustCompile(`^\d+`).MatchString(d.Version) {
			warnings = append(warnings, fmt.Sprintf("SARIF2005 runs[%d]: the tool's version %q does not start with an integer", i, d.Version))
		}
		// SARIF2017 ProvideRequiredRegionProperties: every physical location has a region
		// with a startLine (code-scanning views place a result by it).
		for j, res := range run.Results {
			for k, loc := range res.Locations {
				if pl := loc.PhysicalLocation; pl != nil && (pl.Region == nil || pl.Region.StartLine < 1) {
					warnings = append(warnings, fmt.Sprintf("SARIF2017 runs[%d].results[%d].locations[%d]: no region with a startLine", i, j, k))
				}
			}
		}
	}
	return warnings
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
// this repository's action.yml (the workflow's "agentfleet/fleet@TAG" made "./"), and on the
// action's own steps: actionlint reads an action.yml's inputs but not its steps, so they are
// linted as the job of a reusable workflow whose inputs are the action's (actionSteps).
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
		// One line: go's last, which says why (no network, no proxy, no such version).
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Skipf("actionlint %s cannot be built here (%v: %s): action.yml is not linted", actionlintVersion, err, lines[len(lines)-1])
	}
	dir := t.TempDir()
	if _, err := gitx.Run(context.Background(), "", "", "init", "-q", dir); err != nil {
		t.Fatal(err)
	}
	action, err := os.ReadFile(filepath.Join(repo, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	local := regexp.MustCompile(`agentfleet/fleet@v[0-9.]+`).ReplaceAllString(workflow, "./")
	for name, content := range map[string]string{
		"action.yml":                   string(action),
		".github/workflows/state.yml":  local,
		".github/workflows/action.yml": actionSteps(t, action),
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lint := exec.Command(filepath.Join(bin, "actionlint"), "-color=false", ".github/workflows/state.yml", ".github/workflows/action.yml")
	lint.Dir = dir
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s\nworkflow:\n%s\naction's steps:\n%s", err, out, local, actionSteps(t, action))
	}
}

// actionSteps makes a composite action's steps a workflow that actionlint checks: a reusable
// workflow (workflow_call) with the action's inputs as string inputs, so that inputs.* are
// known, and one job of the action's steps, whose expressions (steps.*, runner.*,
// github.action_path) mean there what they mean in the action.
func actionSteps(t *testing.T, action []byte) string {
	t.Helper()
	var meta struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
		Runs struct {
			Using string `yaml:"using"`
			Steps []any  `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(action, &meta); err != nil || meta.Runs.Using != "composite" || len(meta.Runs.Steps) == 0 {
		t.Fatalf("action.yml is not a composite action with steps (%v)", err)
	}
	inputs := map[string]any{}
	for name, in := range meta.Inputs {
		inputs[name] = map[string]any{"type": "string", "required": false, "default": in.Default}
	}
	workflow := map[string]any{
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-latest", "steps": meta.Runs.Steps}},
	}
	out, err := yaml.Marshal(workflow)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
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
