// Package schema validates state files against JSON Schemas with gojsonschema. A Schema is
// compiled once and is safe for concurrent use; Validate returns the problems of one document
// sorted by JSON pointer, each saying what was expected, so output is identical from run to run.
//
// gojsonschema implements drafts 4 to 7. The schemas users keep are written for 2020-12 but use
// only keywords the two share; a schema that uses a keyword of the newer drafts that gojsonschema
// does not know is compiled all the same, and Unsupported names those keywords so that callers
// warn instead of passing documents silently.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/fsx"
	"github.com/agentfleet/fleet/state/schemas"
	"github.com/xeipuuv/gojsonschema"
)

// Problem is one reason a document fails its schema.
type Problem struct {
	// Pointer is the RFC 6901 JSON pointer of the offending value ("" for the whole document).
	Pointer string `json:"pointer"`
	// Message says what was expected, and what was found where that helps.
	Message string `json:"message"`
	// Line and Col say where in the file the value Pointer names begins (or, for a field that
	// is missing, its object), both from 1, the column in code points; 0 when not known.
	// Validate leaves them 0: the caller that holds the file's bytes fills them (Locate).
	Line int `json:"line,omitempty"`
	Col  int `json:"col,omitempty"`
}

// String renders the problem as "<pointer>: <message>", with "/" standing for the whole document.
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Message
}

// ErrNotJSON marks documents that are not well-formed JSON; they have no schema problems to list.
var ErrNotJSON = errors.New("not valid JSON")

// Schema is a compiled schema for one kind of state file.
type Schema struct {
	// Kind is the kind of state file the schema describes (run, result, swarm-state, …).
	Kind string
	// Source is the schema's file path, or "embedded:<kind>.schema.json".
	Source string
	// Unsupported lists the keywords the schema uses that gojsonschema does not implement, sorted.
	Unsupported []string

	compiled *gojsonschema.Schema
	// fast decides "valid" without gojsonschema for schemas it fully understands (nil: none).
	fast *fastNode
}

// Compile compiles doc, the schema of kind read from source. Its references ($ref) can only be
// fragments of it: it has no directory to take files from (Load's schemas do).
func Compile(kind, source string, doc []byte) (*Schema, error) {
	return compile(kind, source, "", doc)
}

// compile compiles doc, the schema of kind read from source in the schema directory dir ("" for
// none). Its references are resolved by bundle, never by gojsonschema (see refs.go).
func compile(kind, source, dir string, doc []byte) (s *Schema, err error) {
	doc = fsx.StripBOM(doc)
	var tree any
	if err := json.Unmarshal(doc, &tree); err != nil {
		return nil, fmt.Errorf("schema %s is not valid JSON: %w", source, err)
	}
	if tree, err = bundle(tree, source, dir); err != nil {
		return nil, err
	}
	unsupported := unsupportedKeywords(tree) // the files pulled in included
	loader := gojsonschema.NewSchemaLoader()
	// The users' schemas declare 2020-12, which gojsonschema does not know; draft 7 reads every
	// keyword those schemas use the same way.
	loader.Draft = gojsonschema.Draft7
	loader.AutoDetect = false
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("compiling schema %s: %s: %v", source, ErrValidator, r)
		}
	}()
	compiled, err := loader.Compile(gojsonschema.NewGoLoader(tree))
	if err != nil {
		// One line: gojsonschema's messages may hold several.
		return nil, fmt.Errorf("compiling schema %s: %s", source, strings.Join(strings.Fields(err.Error()), " "))
	}
	return &Schema{Kind: kind, Source: source, Unsupported: unsupported, compiled: compiled,
		fast: compileFast(tree)}, nil
}

// Load compiles the schema of kind from dir/<kind>.schema.json when dir is not empty and the file
// exists there, and from the embedded schemas otherwise. A schema file is read as every state
// file is: a regular file of at most MaxSchemaSize bytes, never through a symbolic link.
func Load(kind, dir string) (*Schema, error) {
	if dir != "" {
		path := filepath.Join(dir, schemas.FileName(kind))
		b, err := readSchemaFile(path)
		if err == nil {
			return compile(kind, path, dir, b)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading schema: %w", err)
		}
	}
	b, err := schemas.Read(kind)
	if err != nil {
		return nil, err
	}
	return Compile(kind, "embedded:"+schemas.FileName(kind), b)
}

// Validate checks doc against the schema. It returns an error wrapping ErrNotJSON when doc is not
// one well-formed JSON value, and otherwise the problems found, sorted (none when doc is valid).
func (s *Schema) Validate(doc []byte) ([]Problem, error) { return s.ValidateWithin(doc, nil) }

// MaxValues is the most JSON values a document may hold for gojsonschema to check it: about
// 80 MB of its memory (CostPerValue), and a swarm of 2,500 workers. A document the fast path
// vouches for has no limit but the file size; a larger one it cannot vouch for is an error
// wrapping ErrTooComplex, never a gigabyte of memory (a 16 MiB record of 1.6 million unknown
// keys took 1.5 GB).
const MaxValues = 50_000

// CostPerValue is, in bytes, the most gojsonschema was measured to allocate per value of a
// document: decoding it (100 to 500) and a problem for it (1,100).
const CostPerValue = 1600

// ErrTooComplex marks a document that holds more than MaxValues values and that the fast path
// could not vouch for.
var ErrTooComplex = errors.New("too many JSON values")

// ErrValidator marks a document on which gojsonschema failed (it panicked).
var ErrValidator = errors.New("the validator failed")

// Admit is called before a document goes to gojsonschema, with what checking it may cost in
// bytes; the function it returns is called when the check is done. Callers that check many
// documents in parallel bound their memory with it.
type Admit func(cost int64) (done func())

// ValidateWithin is Validate, calling admit (when not nil) before the costly check.
func (s *Schema) ValidateWithin(doc []byte, admit Admit) (problems []Problem, err error) {
	doc = fsx.StripBOM(doc)
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotJSON)
	}
	// The fast path proves well-formedness itself; when it is not sure, gojsonschema decides.
	if s.fast != nil && s.fast.valid(doc) {
		return nil, nil
	}
	// gojsonschema reads only the first value and ignores anything after it, so well-formedness
	// is checked here first (json.Valid allocates nothing).
	if !json.Valid(doc) {
		return nil, fmt.Errorf("%w: %s", ErrNotJSON, syntaxError(doc))
	}
	st := Measure(doc)
	if st.Values > MaxValues {
		return nil, fmt.Errorf("%w: %d, over the limit of %d (a state file holds hundreds)", ErrTooComplex, st.Values, MaxValues)
	}
	if admit != nil {
		defer admit(int64(st.Values)*CostPerValue + 2*int64(len(doc)))()
	}
	if st.Overflow {
		doc = clampNumbers(doc)
	}
	defer func() {
		if r := recover(); r != nil {
			problems, err = nil, fmt.Errorf("%w: %v", ErrValidator, r)
		}
	}()
	result, err := s.compiled.Validate(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if result.Valid() {
		return nil, nil
	}
	problems = make([]Problem, 0, len(result.Errors()))
	for _, e := range result.Errors() {
		problems = append(problems, toProblem(e))
	}
	return SortProblems(problems), nil
}

// SortProblems orders problems by pointer, then message, and drops exact duplicates in place.
func SortProblems(ps []Problem) []Problem {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Pointer != ps[j].Pointer {
			return ps[i].Pointer < ps[j].Pointer
		}
		return ps[i].Message < ps[j].Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || p != ps[i-1] {
			out = append(out, p)
		}
	}
	return out
}

// syntaxError describes where doc stops being JSON, e.g. "unexpected end of JSON input at byte 38".
func syntaxError(doc []byte) string {
	var v any
	err := json.Unmarshal(doc, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	if err != nil {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	return "malformed document"
}

// toProblem turns a gojsonschema error into a Problem whose message reads as an expectation.
func toProblem(e gojsonschema.ResultError) Problem {
	ptr := pointer(e.Context())
	d := e.Details()
	switch e.Type() {
	case "required":
		return Problem{Pointer: ptr + "/" + escape(fmt.Sprint(d["property"])), Message: "missing required field"}
	case "additional_property_not_allowed":
		return Problem{Pointer: ptr + "/" + escape(fmt.Sprint(d["property"])), Message: "unexpected field: the schema allows no other fields here"}
	case "invalid_type":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected %s, got %s", d["expected"], d["given"])}
	case "enum":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected one of %s, got %s", d["allowed"], value(e.Value()))}
	case "const":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected %s, got %s", d["allowed"], value(e.Value()))}
	case "pattern":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected a string matching %s, got %s", d["pattern"], value(e.Value()))}
	case "string_gte":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected at least %v character(s), got %s", d["min"], value(e.Value()))}
	case "string_lte":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected at most %v character(s)", d["max"])}
	case "number_gte":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected a number >= %v, got %s", d["min"], value(e.Value()))}
	case "number_lte":
		return Problem{Pointer: ptr, Message: fmt.Sprintf("expected a number <= %v, got %s", d["max"], value(e.Value()))}
	}
	return Problem{Pointer: ptr, Message: e.Description()}
}

// pointer turns gojsonschema's context ("(root).verification.tests") into a JSON pointer
// ("/verification/tests"). The context is rendered with a NUL delimiter rather than the default
// ".", so field names holding dots stay whole.
func pointer(c *gojsonschema.JsonContext) string {
	if c == nil {
		return ""
	}
	parts := strings.Split(c.String("\x00"), "\x00")
	if len(parts) > 0 && parts[0] == gojsonschema.STRING_CONTEXT_ROOT {
		parts = parts[1:]
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(escape(p))
	}
	return b.String()
}

// escape encodes a JSON pointer reference token (RFC 6901 §3), cut short past maxToken bytes:
// a key of megabytes would otherwise be printed whole in every line that names it.
func escape(token string) string {
	if len(token) > maxToken {
		cut := maxToken
		for cut > 0 && !utf8.RuneStart(token[cut]) {
			cut--
		}
		token = token[:cut] + "…"
	}
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// maxToken is the longest key a pointer names in full.
const maxToken = 200

// value renders a JSON value for a message, cut short when long.
func value(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
