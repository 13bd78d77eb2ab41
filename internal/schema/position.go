package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/jsonscan"
)

// Locate returns where in doc the value a JSON pointer names begins, as a byte offset, and
// whether doc holds it. A pointer doc does not hold in full (a missing required field, a key
// cut short in a problem's pointer) is located at its nearest ancestor doc does hold: that is
// where a person goes to mend it. doc must be well-formed JSON; where it is not, Locate returns
// false rather than a wrong place. Of duplicate keys the last counts, as the decoder keeps it.
func Locate(doc []byte, pointer string) (offset int, ok bool) {
	i := jsonscan.Space(doc, 0)
	if i == len(doc) {
		return 0, false
	}
	if pointer == "" {
		return i, true
	}
	if pointer[0] != '/' {
		return 0, false
	}
	for _, token := range strings.Split(pointer[1:], "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		next, found := child(doc, i, token)
		if !found {
			return i, true
		}
		i = next
	}
	return i, true
}

// Position turns a byte offset of doc into a line and a column, both counted from 1, the
// column in Unicode code points (SARIF's "unicodeCodePoints"; an invalid byte counts as one).
func Position(doc []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(doc))
	before := doc[:offset]
	line = bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// child returns the offset of the member token of the object, or the element token of the
// array, whose value begins at doc[i].
func child(doc []byte, i int, token string) (int, bool) {
	if i >= len(doc) {
		return 0, false
	}
	switch doc[i] {
	case '{':
		found := -1
		for i = jsonscan.Space(doc, i+1); i < len(doc) && doc[i] == '"'; {
			end := jsonscan.String(doc, i)
			key := doc[i:end]
			i = jsonscan.Space(doc, end)
			if i >= len(doc) || doc[i] != ':' {
				return 0, false
			}
			v := jsonscan.Space(doc, i+1)
			if keyIs(key, token) {
				found = v
			}
			if i = jsonscan.Space(doc, jsonscan.Value(doc, v)); i < len(doc) && doc[i] == ',' {
				i = jsonscan.Space(doc, i+1)
			}
		}
		return found, found >= 0
	case '[':
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || strconv.Itoa(n) != token { // RFC 6901: no sign, no leading 0
			return 0, false
		}
		k := 0
		for i = jsonscan.Space(doc, i+1); i < len(doc) && doc[i] != ']'; k++ {
			if k == n {
				return i, true
			}
			if i = jsonscan.Space(doc, jsonscan.Value(doc, i)); i < len(doc) && doc[i] == ',' {
				i = jsonscan.Space(doc, i+1)
			}
		}
	}
	return 0, false
}

// keyIs reports whether the quoted key (with its quotes) decodes to token.
func keyIs(key []byte, token string) bool {
	if len(key) < 2 {
		return false
	}
	if bytes.IndexByte(key, '\\') < 0 && utf8.Valid(key) { // else the decoder unescapes, and replaces bad bytes
		return string(key[1:len(key)-1]) == token
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == token
}
