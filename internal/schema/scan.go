package schema

import (
	"math"
	"strconv"

	"github.com/agentfleet/fleet/internal/jsonscan"
)

// Stats is what one pass over a well-formed JSON document finds, without decoding it: what
// checking it with gojsonschema will cost, and whether it holds what gojsonschema cannot take.
type Stats struct {
	// Values counts the JSON values: every object, array, string (not the keys), number,
	// true, false and null, at any depth. gojsonschema builds a Go value for each.
	Values int
	// Overflow is set when a number is beyond the range of a double (1e400): ajv reads it as
	// Infinity, gojsonschema panics on it wherever const, enum or uniqueItems applies.
	Overflow bool
}

// Measure scans doc, allocating nothing. Its figures are exact for a well-formed document
// (json.Valid) and bounded for anything else.
func Measure(doc []byte) Stats {
	var st Stats
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			i = jsonscan.String(doc, i)
			// A string followed by ':' is a key, not a value.
			j := i
			for j < len(doc) && jsonscan.IsSpace(doc[j]) {
				j++
			}
			if j == len(doc) || doc[j] != ':' {
				st.Values++
			}
		case c == '-' || c >= '0' && c <= '9':
			j := jsonscan.Number(doc, i)
			st.Values++
			if numberOverflows(doc[i:j]) {
				st.Overflow = true
			}
			i = j
		case c == '{' || c == '[' || c == 't' || c == 'f' || c == 'n':
			st.Values++
			switch c {
			case 't', 'n':
				i += 4
			case 'f':
				i += 5
			default:
				i++
			}
		default: // whitespace, ':', ',', '}', ']'
			i++
		}
	}
	return st
}

// maxDouble is the number an overflowing literal stands for once clamped: the largest double,
// which is still an integer, still above every minimum and below no maximum a schema can
// state, and equal to another overflowing literal of its sign, as Infinity is in ajv.
const maxDouble = "1.7976931348623157e308"

// clampNumbers returns doc with every number beyond the range of a double replaced by
// ±maxDouble, so that gojsonschema can decode it. doc must be well-formed.
func clampNumbers(doc []byte) []byte {
	out := make([]byte, 0, len(doc))
	last := 0
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			i = jsonscan.String(doc, i)
		case c == '-' || c >= '0' && c <= '9':
			j := jsonscan.Number(doc, i)
			if numberOverflows(doc[i:j]) {
				out = append(out, doc[last:i]...)
				if c == '-' {
					out = append(out, '-')
				}
				out = append(out, maxDouble...)
				last = j
			}
			i = j
		default:
			i++
		}
	}
	return append(out, doc[last:]...)
}

// numberOverflows reports whether the number literal n is beyond a double's range. Only a
// literal with an exponent or over 308 digits can be, so the rest are not parsed.
func numberOverflows(n []byte) bool {
	if len(n) <= 308 {
		exp := false
		for _, c := range n {
			if c == 'e' || c == 'E' {
				exp = true
				break
			}
		}
		if !exp {
			return false
		}
	}
	f, err := strconv.ParseFloat(string(n), 64)
	return err != nil && math.IsInf(f, 0)
}
