package record

import (
	"encoding/json"
	"unicode/utf8"
)

// The fast path of DecodeRun and DecodeResult: a reader of the records' known shape that gives
// exactly what encoding/json gives (the Run or Result of decode), in a fifth of its time. It
// handles what dispatch and the originals write: an object of the records' own lower-case keys,
// each at most once, with string, null, number, boolean or verification values of the expected
// types, and keys it does not know (skipped, checked as JSON). Anything else, a key that
// differs from a field's only by case or is not ASCII, a value of another type, a key given
// twice, a document that is not JSON, makes it give up (ok false) and the record is read by
// encoding/json, which says what is wrong. FuzzFastDecode compares the two on every input.

// Field numbers of the fast path: one bit each in a record's seen-set.
const (
	fSchemaVersion = iota
	fBead
	fAgent
	fModel
	fRepo
	fPrompt
	fPromptHash
	fStartedAt
	fFinishedAt
	fDurationSeconds
	fStatus
	fAttempt
	fMaxRetries
	fSessionName
	fResultFile
	fExitCode
	fOutputSummary
	fFailureReason
	fTemplateName
	fPromptFull
	fVerification
	fReason
	fWillRetry
	fUnknown
)

// runKeys and resultKeys are the records' keys, as encoding/json names their fields.
var (
	runKeys = map[string]int{
		"schema_version": fSchemaVersion, "bead": fBead, "agent": fAgent, "model": fModel, "repo": fRepo,
		"prompt": fPrompt, "prompt_hash": fPromptHash, "started_at": fStartedAt, "finished_at": fFinishedAt,
		"duration_seconds": fDurationSeconds, "status": fStatus, "attempt": fAttempt, "max_retries": fMaxRetries,
		"session_name": fSessionName, "result_file": fResultFile, "exit_code": fExitCode,
		"output_summary": fOutputSummary, "failure_reason": fFailureReason, "template_name": fTemplateName,
		"prompt_full": fPromptFull, "verification": fVerification,
	}
	resultKeys = map[string]int{
		"schema_version": fSchemaVersion, "bead": fBead, "agent": fAgent, "status": fStatus, "reason": fReason,
		"started_at": fStartedAt, "finished_at": fFinishedAt, "duration_seconds": fDurationSeconds,
		"attempt": fAttempt, "max_retries": fMaxRetries, "will_retry": fWillRetry, "exit_code": fExitCode,
		"session_name": fSessionName, "output_summary": fOutputSummary, "verification": fVerification,
	}
)

// fastRun reads b as a run record by the fast path; ok is false when it cannot.
func fastRun(b []byte) (*Run, bool) {
	var r Run
	var ints integerFields
	ok := fastObject(b, runKeys, func(f int, s *scanner) bool {
		switch f {
		case fBead:
			return s.plainString(&r.Bead)
		case fAgent:
			return s.plainString(&r.Agent)
		case fModel:
			return s.plainString(&r.Model)
		case fRepo:
			return s.plainString(&r.Repo)
		case fPrompt:
			return s.plainString(&r.Prompt)
		case fPromptHash:
			return s.plainString(&r.PromptHash)
		case fStartedAt:
			return s.plainString(&r.StartedAt)
		case fStatus:
			return s.plainString(&r.Status)
		case fSessionName:
			return s.plainString(&r.SessionName)
		case fResultFile:
			return s.plainString(&r.ResultFile)
		case fPromptFull:
			return s.plainString(&r.PromptFull)
		case fFinishedAt:
			return s.nullableString(&r.FinishedAt)
		case fOutputSummary:
			return s.nullableString(&r.OutputSummary)
		case fFailureReason:
			return s.nullableString(&r.FailureReason)
		case fTemplateName:
			return s.nullableString(&r.TemplateName)
		case fVerification:
			return s.verification(&r.Verification)
		}
		return s.integer(f, &ints)
	})
	if !ok || ints.fill(&r.SchemaVersion, &r.Attempt, &r.MaxRetries, &r.DurationSeconds, &r.ExitCode) != nil {
		return nil, false
	}
	return &r, true
}

// fastResult reads b as a result record by the fast path; ok is false when it cannot.
func fastResult(b []byte) (*Result, bool) {
	var r Result
	var ints integerFields
	ok := fastObject(b, resultKeys, func(f int, s *scanner) bool {
		switch f {
		case fBead:
			return s.plainString(&r.Bead)
		case fAgent:
			return s.plainString(&r.Agent)
		case fStatus:
			return s.plainString(&r.Status)
		case fReason:
			return s.plainString(&r.Reason)
		case fStartedAt:
			return s.plainString(&r.StartedAt)
		case fSessionName:
			return s.plainString(&r.SessionName)
		case fFinishedAt:
			return s.nullableString(&r.FinishedAt)
		case fOutputSummary:
			return s.nullableString(&r.OutputSummary)
		case fWillRetry:
			return s.boolean(&r.WillRetry)
		case fVerification:
			return s.verification(&r.Verification)
		}
		return s.integer(f, &ints)
	})
	if !ok || ints.fill(&r.SchemaVersion, &r.Attempt, &r.MaxRetries, &r.DurationSeconds, &r.ExitCode) != nil {
		return nil, false
	}
	return &r, true
}

// fastObject reads the document b (after a BOM, if any) as one object with keys, calling field
// with each known key's number and the scanner at its value, which field reads; unknown keys'
// values are skipped. false: not a document the fast path reads.
func fastObject(b []byte, keys map[string]int, field func(f int, s *scanner) bool) bool {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		b = b[3:]
	}
	s := &scanner{b: b}
	s.ws()
	var seen uint64
	whole := s.members(func(key []byte) bool {
		f, known := keys[string(key)]
		if !known {
			return foldFree(key, keys) && s.skip(0)
		}
		if seen&(1<<f) != 0 || !field(f, s) {
			return false
		}
		seen |= 1 << f
		return true
	})
	s.ws()
	return whole && s.i == len(s.b)
}

// members reads the object at s, calling member with each key and the scanner at its value,
// which member reads or skips. false: malformed, or a member said so.
func (s *scanner) members(member func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	s.ws()
	if s.eat('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok {
			return false
		}
		s.ws()
		if !s.eat(':') {
			return false
		}
		s.ws()
		if !member(key) {
			return false
		}
		s.ws()
		if s.eat('}') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// foldFree says whether encoding/json, which matches keys without regard to case, would match
// key with none of keys: an ASCII key whose lower case is none of them.
func foldFree(key []byte, keys map[string]int) bool {
	var buf [32]byte
	lower := buf[:0]
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	_, match := keys[string(lower)]
	return !match
}

// scanner reads JSON from b at i.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// literal reads the literal lit (null, true, false).
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// stringSpan reads a string and returns its content, and whether it has escapes or bytes that
// are not ASCII; ok is false when it is not a valid JSON string.
func (s *scanner) stringSpan() (content []byte, escaped, wide, ok bool) {
	if !s.eat('"') {
		return nil, false, false, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			content = s.b[start:s.i]
			s.i++
			return content, escaped, wide, true
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 || !hex4(s.b[s.i+1:s.i+5]) {
					return nil, false, false, false
				}
				s.i += 5
			default:
				return nil, false, false, false
			}
		case c < 0x20:
			return nil, false, false, false
		default:
			if c >= utf8.RuneSelf {
				wide = true
			}
			s.i++
		}
	}
	return nil, false, false, false
}

func hex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// str reads a string value as encoding/json does: escapes resolved, bytes that are not UTF-8
// replaced (by encoding/json itself, for the rare string that needs either).
func (s *scanner) str() (string, bool) {
	start := s.i
	content, escaped, wide, ok := s.stringSpan()
	if !ok {
		return "", false
	}
	if escaped || (wide && !utf8.Valid(content)) {
		var v string
		if json.Unmarshal(s.b[start:s.i], &v) != nil {
			return "", false
		}
		return v, true
	}
	return string(content), true
}

// key reads an object's key; one with escapes is left to encoding/json.
func (s *scanner) key() ([]byte, bool) {
	content, escaped, _, ok := s.stringSpan()
	if !ok || escaped {
		return nil, false
	}
	return content, true
}

// plainString reads a string field: a string, or null (which leaves it as it is).
func (s *scanner) plainString(dst *string) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	v, ok := s.str()
	*dst = v
	return ok
}

// nullableString reads a nullable string field: a string, or null (nil).
func (s *scanner) nullableString(dst **string) bool {
	if s.peek() == 'n' {
		*dst = nil
		return s.literal("null")
	}
	v, ok := s.str()
	*dst = &v
	return ok
}

// boolean reads a boolean field: true, false, or null (which leaves it as it is).
func (s *scanner) boolean(dst *bool) bool {
	switch s.peek() {
	case 't':
		*dst = true
		return s.literal("true")
	case 'f':
		*dst = false
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return false
}

// integer keeps an integer field's value as it is written, for integerFields.fill.
func (s *scanner) integer(f int, ints *integerFields) bool {
	start := s.i
	if !s.skip(0) {
		return false
	}
	raw := rawInt(s.b[start:s.i])
	switch f {
	case fSchemaVersion:
		ints.SchemaVersion = raw
	case fDurationSeconds:
		ints.DurationSeconds = raw
	case fAttempt:
		ints.Attempt = raw
	case fMaxRetries:
		ints.MaxRetries = raw
	case fExitCode:
		ints.ExitCode = raw
	default:
		return false
	}
	return true
}

// verification reads the verification field: null, or an object of its known string keys
// (lint_details: any value but null, kept as written).
func (s *scanner) verification(dst **Verification) bool {
	if s.peek() == 'n' {
		*dst = nil
		return s.literal("null")
	}
	v := &Verification{}
	var seen uint8
	whole := s.members(func(key []byte) bool {
		var bit uint8
		var dstr *string
		switch string(key) {
		case "lint":
			bit, dstr = 1, &v.Lint
		case "tests":
			bit, dstr = 2, &v.Tests
		case "ubs":
			bit, dstr = 4, &v.UBS
		case "overall":
			bit, dstr = 8, &v.Overall
		case "lint_details":
			bit = 16
		default:
			return foldFree(key, verificationKeys) && s.skip(1)
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if dstr != nil {
			return s.peek() == '"' && s.plainString(dstr)
		}
		start := s.i // lint_details: any value but null, kept as written
		if s.peek() == 'n' || !s.skip(1) {
			return false
		}
		v.LintDetails = append(json.RawMessage(nil), s.b[start:s.i]...)
		return true
	})
	if !whole {
		return false
	}
	*dst = v
	return true
}

var verificationKeys = map[string]int{"lint": 0, "tests": 0, "ubs": 0, "overall": 0, "lint_details": 0}

// maxSkipDepth bounds the nesting of a skipped value; a deeper one is left to encoding/json.
const maxSkipDepth = 64

// skip reads any JSON value, checking it, at nesting depth.
func (s *scanner) skip(depth int) bool {
	if depth > maxSkipDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, _, ok := s.stringSpan()
		return ok
	case c == 'n':
		return s.literal("null")
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == '-' || '0' <= c && c <= '9':
		start := s.i
		for s.i < len(s.b) {
			c := s.b[s.i]
			if c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || '0' <= c && c <= '9' {
				s.i++
				continue
			}
			break
		}
		return isJSONNumber(s.b[start:s.i])
	case c == '[':
		s.i++
		s.ws()
		if s.eat(']') {
			return true
		}
		for {
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat(']') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	case c == '{':
		s.i++
		s.ws()
		if s.eat('}') {
			return true
		}
		for {
			s.ws()
			if _, _, _, ok := s.stringSpan(); !ok {
				return false
			}
			s.ws()
			if !s.eat(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.eat('}') {
				return true
			}
			if !s.eat(',') {
				return false
			}
		}
	}
	return false
}
