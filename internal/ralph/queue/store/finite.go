package store

import (
	"bytes"
	"encoding/json"
	"math"
)

// Costs are figures an agent reports: NaN, an infinity or a negative amount is not a cost, and
// JSON has no way to write the first two (strconv writes NaN and +Inf, which no JSON reader
// reads back, so one such figure once made every later read of the queue fail).

// Cost reports whether v is a cost: finite and not negative.
func Cost(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }

// decodeJSON is json.Unmarshal that also reads a document holding the non-JSON numbers NaN,
// Infinity, Inf (signed or not), as an earlier version wrote them: they are read as null,
// which leaves the figure unknown (0). The fast path is json.Unmarshal alone.
func decodeJSON(doc []byte, v any) error {
	err := json.Unmarshal(doc, v)
	if err == nil {
		return nil
	}
	if fixed, ok := nullNonFinite(doc); ok {
		if json.Unmarshal(fixed, v) == nil {
			return nil
		}
	}
	return err
}

// nonFinite are the spellings of the numbers JSON cannot hold, longest first.
var nonFinite = [][]byte{[]byte("-Infinity"), []byte("+Infinity"), []byte("Infinity"),
	[]byte("-Inf"), []byte("+Inf"), []byte("Inf"), []byte("-NaN"), []byte("+NaN"), []byte("NaN")}

// nullNonFinite replaces each non-JSON number outside strings in doc by null; false when there
// is none.
func nullNonFinite(doc []byte) ([]byte, bool) {
	var out []byte
	last, found := 0, false
	inString := false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			continue
		case '-', '+', 'I', 'N':
		default:
			continue
		}
		for _, tok := range nonFinite {
			if bytes.HasPrefix(doc[i:], tok) {
				out = append(out, doc[last:i]...)
				out = append(out, "null"...)
				i += len(tok) - 1
				last = i + 1
				found = true
				break
			}
		}
	}
	if !found {
		return nil, false
	}
	return append(out, doc[last:]...), true
}
