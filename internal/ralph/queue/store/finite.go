package store

import (
	"encoding/json"
	"math"
	"regexp"
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
	if err != nil && json.Unmarshal(nonFinite.ReplaceAllFunc(doc, nullUnlessString), v) == nil {
		return nil
	}
	return err
}

// nonFinite matches a JSON string (to its end when it has none), or a number JSON cannot hold
// (longest spelling first): the strings are matched so that the numbers are looked for outside
// them only.
var nonFinite = regexp.MustCompile(`(?s)"(?:[^"\\]|\\.)*"?|[-+]?(?:Infinity|Inf|NaN)`)

// nullUnlessString is null for a non-JSON number nonFinite matched, and a string as it is.
func nullUnlessString(m []byte) []byte {
	if m[0] == '"' {
		return m
	}
	return []byte("null")
}
