package main

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentfleet/fleet/internal/audit"
	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/record"
)

// The CI formats: JUnit XML for test reporters and SARIF 2.1.0 for code-scanning views. Both
// are one document written at the end (JUnit's counts head each suite), from the reports
// collected as they arrive: a report keeps at most audit.MaxProblems problems, so what is held
// grows with the number of files, by a few hundred bytes each.

// finding is one problem of one file, as the CI formats say it.
type finding struct {
	rule      string // schemaRule or unreadableRule
	pointer   string // "" for the whole file
	message   string // printable
	line, col int    // 0 when not known
}

const (
	schemaRule     = "schema-violation"
	unreadableRule = "unreadable-file"
)

// findings are a report's problems, each one line of text, escaped as record.Printable does.
func findings(r audit.Report) []finding {
	if r.Valid {
		return nil
	}
	if r.Error != "" {
		return []finding{{rule: unreadableRule, message: record.Printable(r.Path + " " + r.Error)}}
	}
	var out []finding
	for _, p := range r.Problems {
		out = append(out, finding{rule: schemaRule, pointer: p.Pointer, message: record.Printable(p.String()), line: p.Line, col: p.Col})
	}
	if r.MoreProblems > 0 {
		out = append(out, finding{rule: schemaRule, message: fmt.Sprintf("and %d more problem(s) not listed", r.MoreProblems)})
	}
	return out
}

// ciFile is what a CI format keeps of a report.
type ciFile struct {
	path, kind string
	findings   []finding
}

// junit writes the reports as JUnit XML: a suite per kind, a testcase per file, a failure per
// problem (with its line and column in the failure's text).
func junit(w io.Writer, files []ciFile, t audit.Tally) error {
	type failure struct {
		Type    string `xml:"type,attr"`
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string    `xml:"name,attr"`
		Classname string    `xml:"classname,attr"`
		File      string    `xml:"file,attr"`
		Time      string    `xml:"time,attr"`
		Failures  []failure `xml:"failure"`
	}
	type testsuite struct {
		Name      string     `xml:"name,attr"`
		Tests     int        `xml:"tests,attr"`
		Failures  int        `xml:"failures,attr"`
		Errors    int        `xml:"errors,attr"`
		Skipped   int        `xml:"skipped,attr"`
		Time      string     `xml:"time,attr"`
		Testcases []testcase `xml:"testcase"`
	}
	type testsuites struct {
		XMLName  xml.Name    `xml:"testsuites"`
		Name     string      `xml:"name,attr"`
		Tests    int         `xml:"tests,attr"`
		Failures int         `xml:"failures,attr"`
		Errors   int         `xml:"errors,attr"`
		Time     string      `xml:"time,attr"`
		Suites   []testsuite `xml:"testsuite"`
	}
	doc := testsuites{Name: tool, Time: "0"}
	for _, k := range t.SortedKinds() {
		s := testsuite{Name: audit.KindLabel(k), Time: "0", Testcases: []testcase{}}
		for _, f := range files {
			if f.kind != k {
				continue
			}
			tc := testcase{Name: record.Printable(f.path), Classname: tool + "." + k, File: record.Printable(f.path), Time: "0"}
			for _, fd := range f.findings {
				text := fd.message
				if fd.line > 0 {
					text = fmt.Sprintf("%s:%d:%d: %s", record.Printable(f.path), fd.line, fd.col, fd.message)
				}
				tc.Failures = append(tc.Failures, failure{Type: fd.rule, Message: fd.message, Text: text})
			}
			s.Tests++
			if len(tc.Failures) > 0 {
				s.Failures++
			}
			s.Testcases = append(s.Testcases, tc)
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Suites = append(doc.Suites, s)
	}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", xml.Header, b)
	return err
}

// sarifVersion and sarifSchema name the SARIF standard the document follows (OASIS SARIF
// 2.1.0); testdata/sarif-schema-2.1.0.json is that schema, which the tests check against.
const (
	sarifVersion = "2.1.0"
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
)

// sarif writes the reports as one SARIF 2.1.0 log: a run of validate-state, a result per
// problem, located by line and column (in code points) where known, and by JSON pointer.
func sarif(w io.Writer, files []ciFile) error {
	type message struct {
		Text string `json:"text"`
	}
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn,omitempty"`
	}
	type physicalLocation struct {
		ArtifactLocation struct {
			URI string `json:"uri"`
		} `json:"artifactLocation"`
		Region *region `json:"region,omitempty"`
	}
	type logicalLocation struct {
		FullyQualifiedName string `json:"fullyQualifiedName"`
	}
	type location struct {
		PhysicalLocation physicalLocation  `json:"physicalLocation"`
		LogicalLocations []logicalLocation `json:"logicalLocations,omitempty"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		Level     string     `json:"level"`
		Message   message    `json:"message"`
		Locations []location `json:"locations"`
	}
	type rule struct {
		ID               string  `json:"id"`
		Name             string  `json:"name"`
		ShortDescription message `json:"shortDescription"`
	}
	type driver struct {
		Name           string `json:"name"`
		Version        string `json:"version"`
		InformationURI string `json:"informationUri"`
		Rules          []rule `json:"rules"`
	}
	type run struct {
		Tool struct {
			Driver driver `json:"driver"`
		} `json:"tool"`
		ColumnKind string   `json:"columnKind"`
		Results    []result `json:"results"`
	}
	type log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []run  `json:"runs"`
	}
	var r run
	r.Tool.Driver = driver{Name: tool, Version: sarifToolVersion(cli.Version()), InformationURI: sarifInformationURI, Rules: []rule{
		{ID: schemaRule, Name: "SchemaViolation", ShortDescription: message{"A state file does not follow its JSON Schema."}},
		{ID: unreadableRule, Name: "UnreadableFile", ShortDescription: message{"A state file cannot be read or is not well-formed JSON (or YAML)."}},
	}}
	r.ColumnKind = "unicodeCodePoints"
	r.Results = []result{}
	for _, f := range files {
		for _, fd := range f.findings {
			var loc location
			loc.PhysicalLocation.ArtifactLocation.URI = fileURI(f.path)
			// A finding about the whole file (unreadable, not JSON, the count of problems not
			// listed) is placed on its first line: code-scanning views place a result by its
			// region's startLine and show none without it (the SARIF validator's SARIF2017).
			loc.PhysicalLocation.Region = &region{StartLine: 1}
			if fd.line > 0 {
				loc.PhysicalLocation.Region = &region{StartLine: fd.line, StartColumn: fd.col}
			}
			if fd.rule == schemaRule && fd.pointer != "" {
				loc.LogicalLocations = []logicalLocation{{FullyQualifiedName: record.Printable(fd.pointer)}}
			}
			r.Results = append(r.Results, result{RuleID: fd.rule, Level: "error", Message: message{fd.message}, Locations: []location{loc}})
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // a file name's & or < is the file's name, not markup
	enc.SetIndent("", "  ")
	return enc.Encode(log{Schema: sarifSchema, Version: sarifVersion, Runs: []run{r}})
}

// sarifInformationURI is where a code-scanning view's reader learns about the tool: its manual.
const sarifInformationURI = "https://github.com/agentfleet/fleet/blob/main/docs/validate-state.md"

// sarifToolVersion is the toolkit's version as SARIF consumers compare it: starting with an
// integer (the SARIF validator's SARIF2005), so v1.2.3 is 1.2.3, and a build of no release
// ("devel") is 0.0.0-devel, before every release as Go's own pseudo-versions are.
func sarifToolVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	if v != "" && v[0] >= '0' && v[0] <= '9' {
		return v
	}
	return "0.0.0-" + cmp.Or(v, "devel")
}

// fileURI is a path as a SARIF artifact URI: a relative reference for a relative path (read
// against the repository's root by code-scanning views), a file: URI for an absolute one.
func fileURI(path string) string {
	u := url.URL{Path: filepath.ToSlash(path)}
	if filepath.IsAbs(path) {
		u.Scheme = "file"
	}
	return u.String()
}

// ghPosition is the line= and col= properties of a GitHub annotation, when the place is known.
func ghPosition(line, col int) string {
	if line <= 0 {
		return ""
	}
	s := ",line=" + strconv.Itoa(line)
	if col > 0 {
		s += ",col=" + strconv.Itoa(col)
	}
	return s
}
