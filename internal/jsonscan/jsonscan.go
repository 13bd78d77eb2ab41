// Package jsonscan finds where the parts of a JSON document end, by its delimiters, without
// decoding it: the shared step of the readers that keep a document's bytes (worker.Object keeps
// a Python dict's key order; schema.Locate finds the line of a JSON pointer; schema.Measure
// counts values before gojsonschema builds them; report's raw records split their members).
//
// Every function takes the document and the index where the part begins and returns the index
// just after it. On well-formed JSON (json.Valid) the answer is exact; on anything else it is
// bounded by len(doc) and never panics, so callers that have not validated get a wrong place,
// not a crash.
package jsonscan

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Space returns the index of the first byte at or after i that is not whitespace.
func Space(doc []byte, i int) int {
	for i < len(doc) && IsSpace(doc[i]) {
		i++
	}
	return i
}

// String returns the index just after the string starting at doc[i] (a '"').
func String(doc []byte, i int) int {
	for i++; i < len(doc); i++ {
		switch doc[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(doc) // unterminated (an escape at the very end included)
}

// Number returns the index just after the number starting at doc[i].
func Number(doc []byte, i int) int {
	for i < len(doc) {
		switch c := doc[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// Value returns the index just after the value (object, array, string, number, true, false or
// null) starting at doc[i].
func Value(doc []byte, i int) int {
	if i >= len(doc) {
		return len(doc)
	}
	switch c := doc[i]; {
	case c == '"':
		return String(doc, i)
	case c == '{' || c == '[':
		depth := 0
		for i < len(doc) {
			switch doc[i] {
			case '"':
				i = String(doc, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(doc)
	case c == '-' || c >= '0' && c <= '9':
		return Number(doc, i)
	default: // true, false, null
		for i < len(doc) && doc[i] >= 'a' && doc[i] <= 'z' {
			i++
		}
		return i
	}
}

// AppendCompact appends doc to dst without its whitespace outside strings. On a well-formed
// document (one a decoder has read) it is json.Compact's output, at a fraction of the cost:
// json.Compact steps its validating state machine through every byte, which was a fifth of
// analyze-runs --json's time. On anything else it is bounded, not checked: use json.Compact.
func AppendCompact(dst, doc []byte) []byte {
	start := 0
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			i = String(doc, i)
		case IsSpace(c):
			dst = append(dst, doc[start:i]...)
			i = Space(doc, i)
			start = i
		default:
			i++
		}
	}
	return append(dst, doc[start:]...)
}
