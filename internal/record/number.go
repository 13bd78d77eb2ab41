package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxInteger is the largest magnitude an integer field is read with: 2^53, the largest integer
// up to which every JSON reader of the records agrees (jq and JavaScript hold numbers as IEEE
// doubles). A larger value, 1e400 included (ajv and gojsonschema call it an integer), is read as
// ±MaxInteger, so that arithmetic on it (the next attempt's number) cannot wrap around.
const MaxInteger = 1 << 53

// Integer reads the JSON value raw as an integer field, the way the schemas' "integer" type
// reads it: any JSON number whose value is whole (2, 2.0, 20e-1, 1e400), clamped to
// ±MaxInteger; and, as the reader is tolerant of what older tools wrote, a string holding such
// a number ("2", as dispatchers that quoted their shell variables wrote attempt). ok is false
// for null, an empty string (a shell variable that was not set) and an absent value (raw
// empty): the field is unknown. Anything else (2.5, "two", true) is an error.
func Integer(raw []byte) (n int64, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	text := raw
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false, err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, false, nil
		}
		text = []byte(s)
	}
	if !isJSONNumber(text) {
		return 0, false, fmt.Errorf("%s is not a whole number", clipValue(raw))
	}
	// A plain integer literal is read exactly; the other forms through a double, as every
	// other reader of the records reads them.
	if i, err := strconv.ParseInt(string(text), 10, 64); err == nil {
		return min(max(i, -MaxInteger), MaxInteger), true, nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false, fmt.Errorf("%s is not a whole number", clipValue(raw))
	}
	if f != math.Trunc(f) {
		return 0, false, fmt.Errorf("%s is not a whole number", clipValue(raw))
	}
	return int64(min(max(f, -MaxInteger), MaxInteger)), true, nil
}

// isJSONNumber reports whether b is one JSON number (RFC 8259 §6): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// clipValue renders a value for an error message, cut short when long: a record's field may
// be megabytes.
func clipValue(raw []byte) string {
	const max = 40
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}

// rawInt holds an integer field's JSON as it is, for Integer to read. It is not copied: it
// points into the document being decoded, and is read before the decoding returns.
type rawInt []byte

// UnmarshalJSON keeps b.
func (r *rawInt) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// integerFields are the integer fields of a run or result record, read by Integer rather than
// by encoding/json, which refuses 2.0 and "2". The record is embedded one level deeper than
// these, so encoding/json fills these rather than its fields of the same names.
type integerFields struct {
	SchemaVersion   rawInt `json:"schema_version"`
	DurationSeconds rawInt `json:"duration_seconds"`
	Attempt         rawInt `json:"attempt"`
	MaxRetries      rawInt `json:"max_retries"`
	ExitCode        rawInt `json:"exit_code"`
}

// fill reads the integer fields into their places.
func (in *integerFields) fill(schemaVersion, attempt, maxRetries *int, duration, exitCode **int64) error {
	for _, f := range []struct {
		name string
		raw  rawInt
		dst  *int
		ptr  **int64
	}{
		{"schema_version", in.SchemaVersion, schemaVersion, nil},
		{"duration_seconds", in.DurationSeconds, nil, duration},
		{"attempt", in.Attempt, attempt, nil},
		{"max_retries", in.MaxRetries, maxRetries, nil},
		{"exit_code", in.ExitCode, nil, exitCode},
	} {
		n, ok, err := Integer(f.raw)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		switch {
		case f.dst != nil:
			*f.dst = int(n) // 0 when unknown, as a legacy record without the field reads
		case ok:
			*f.ptr = &n
		default:
			*f.ptr = nil
		}
	}
	return nil
}

// UnmarshalJSON reads a run record as DecodeRun does, its integer fields by Integer.
func (r *Run) UnmarshalJSON(b []byte) error { return r.decode(b) }

func (r *Run) decode(b []byte) error {
	type plain Run               // the fields, without this method
	type deeper struct{ *plain } // its fields one level down, below integerFields'
	aux := struct {
		deeper
		integerFields
	}{deeper: deeper{(*plain)(r)}}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	return aux.fill(&r.SchemaVersion, &r.Attempt, &r.MaxRetries, &r.DurationSeconds, &r.ExitCode)
}

// UnmarshalJSON reads a result record as DecodeResult does, its integer fields by Integer.
func (r *Result) UnmarshalJSON(b []byte) error { return r.decode(b) }

func (r *Result) decode(b []byte) error {
	type plain Result
	type deeper struct{ *plain } // its fields one level down, below integerFields'
	aux := struct {
		deeper
		integerFields
	}{deeper: deeper{(*plain)(r)}}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	return aux.fill(&r.SchemaVersion, &r.Attempt, &r.MaxRetries, &r.DurationSeconds, &r.ExitCode)
}
