package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The Python swarm writes state.json with json.dump(data, f, indent=2): two-space indent, ", "
// and ": " separators (with indent, Python 3 drops the space before a newline: "," at line
// ends), every character outside printable ASCII escaped as \uXXXX (lower-case hex, UTF-16
// surrogate pairs above the BMP), "/" and "<>&" left alone, empty containers as [] and {},
// floats as Python's repr, no final newline. The encoder here writes any JSON value so, so that
// a file either tool wrote last is the same bytes.

// Member is one key of a JSON object, with its value as it was read.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Object is a JSON object whose keys keep their order, as a Python dict does. A key given
// twice keeps its first place and its last value (Python's json.load does the same).
type Object []Member

// UnmarshalJSON reads an object, keeping its keys' order. (encoding/json has checked b.)
func (o *Object) UnmarshalJSON(b []byte) error {
	out, err := parseObject(bytes.Clone(b))
	if err != nil {
		return err
	}
	*o = out
	return nil
}

// parseObject splits the JSON object b into its members, each value the raw bytes of b (no
// copy: b must not change after). b must be valid JSON (json.Valid, or encoding/json's own
// check): this is a split at the delimiters, one pass, not a parse; state.json with 500
// workers was read in 30 ms through json.Decoder's tokens, in a few with this.
func parseObject(b []byte) (Object, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out Object
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		if b[i] != '"' {
			return nil, errors.New("malformed JSON object")
		}
		j := skipString(b, i)
		key, err := unquote(b[i:j])
		if err != nil {
			return nil, err
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, errors.New("malformed JSON object")
		}
		i = skipSpace(b, i+1)
		j = skipValue(b, i)
		if j <= i {
			return nil, errors.New("malformed JSON object")
		}
		out = out.Set(key, json.RawMessage(b[i:j]))
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if i >= len(b) {
		return nil, errors.New("unterminated JSON object")
	}
	return out, nil
}

// splitArray splits the JSON array b (valid JSON) into its elements, raw.
func splitArray(b []byte) ([]json.RawMessage, error) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out []json.RawMessage
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		j := skipValue(b, i)
		if j <= i {
			return nil, errors.New("malformed JSON array")
		}
		out = append(out, json.RawMessage(b[i:j]))
		i = skipSpace(b, j)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if i >= len(b) {
		return nil, errors.New("unterminated JSON array")
	}
	return out, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		switch b[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1
		default:
			i++
		}
	}
	return len(b)
}

// skipValue returns the index after the JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
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
		return len(b)
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// unquote reads the JSON string s (quotes included); one without escapes costs a copy only.
func unquote(s []byte) (string, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && bytes.IndexByte(s, '\\') < 0 {
		return string(s[1 : len(s)-1]), nil
	}
	var v string
	err := json.Unmarshal(s, &v)
	return v, err
}

// Get returns key's value, or nil.
func (o Object) Get(key string) json.RawMessage {
	for _, m := range o {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}

// Has reports whether key is there.
func (o Object) Has(key string) bool { return o.Get(key) != nil }

// Set gives key the value v, in its place if it is there, else at the end.
func (o Object) Set(key string, v json.RawMessage) Object {
	for i := range o {
		if o[i].Key == key {
			o[i].Value = v
			return o
		}
	}
	return append(o, Member{Key: key, Value: v})
}

// SetValue is Set with a Go value, marshalled.
func (o Object) SetValue(key string, v any) Object {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("worker: marshalling %s: %v", key, err)) // only our own plain values come here
	}
	return o.Set(key, b)
}

// Delete removes key.
func (o Object) Delete(key string) Object {
	for i := range o {
		if o[i].Key == key {
			return append(o[:i:i], o[i+1:]...)
		}
	}
	return o
}

// pyWriter writes JSON as Python's json.dump(indent=2) does.
type pyWriter struct {
	buf bytes.Buffer
}

func (w *pyWriter) newline(depth int) {
	w.buf.WriteByte('\n')
	for i := 0; i < depth; i++ {
		w.buf.WriteString("  ")
	}
}

// raw writes the JSON value raw (as read), re-encoded.
func (w *pyWriter) raw(v json.RawMessage, depth int) error {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := w.value(d, depth); err != nil {
		return err
	}
	if _, err := d.Token(); err == nil {
		return errors.New("more than one JSON value")
	}
	return nil
}

func (w *pyWriter) value(d *json.Decoder, depth int) error {
	t, err := d.Token()
	if err != nil {
		return err
	}
	switch t := t.(type) {
	case json.Delim:
		closing, isObj := byte(']'), t == '{'
		if isObj {
			closing = '}'
		}
		w.buf.WriteByte(byte(t))
		n := 0
		for d.More() {
			if n > 0 {
				w.buf.WriteByte(',')
			}
			w.newline(depth + 1)
			if isObj {
				k, err := d.Token()
				if err != nil {
					return err
				}
				w.str(k.(string))
				w.buf.WriteString(": ")
			}
			if err := w.value(d, depth+1); err != nil {
				return err
			}
			n++
		}
		if _, err := d.Token(); err != nil {
			return err
		}
		if n > 0 {
			w.newline(depth)
		}
		w.buf.WriteByte(closing)
	case string:
		w.str(t)
	case json.Number:
		w.buf.WriteString(pyNumber(string(t)))
	case bool:
		w.buf.WriteString(map[bool]string{true: "true", false: "false"}[t])
	case nil:
		w.buf.WriteString("null")
	}
	return nil
}

// str writes s as Python's json.dumps(s, ensure_ascii=True) does.
func (w *pyWriter) str(s string) {
	w.buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			w.buf.WriteString(`\"`)
		case r == '\\':
			w.buf.WriteString(`\\`)
		case r == '\n':
			w.buf.WriteString(`\n`)
		case r == '\r':
			w.buf.WriteString(`\r`)
		case r == '\t':
			w.buf.WriteString(`\t`)
		case r == '\b':
			w.buf.WriteString(`\b`)
		case r == '\f':
			w.buf.WriteString(`\f`)
		case r >= 0x20 && r < 0x7f:
			w.buf.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&w.buf, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&w.buf, `\u%04x`, r)
		}
	}
	w.buf.WriteByte('"')
}

// pyNumber is how Python writes back a number it read: an integer as it is (Python's int has no
// bound; "-0" is 0), anything with a fraction or an exponent as the float's repr.
func pyNumber(lit string) string {
	if !strings.ContainsAny(lit, ".eE") {
		if lit == "-0" {
			return "0"
		}
		return lit
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !math.IsInf(f, 0) {
		return lit
	}
	return pyFloat(f)
}

// pyFloat is Python's repr of a float: the shortest digits that read back the same, in fixed
// notation when the decimal exponent is from -4 to 15 (with ".0" for a whole number), else as
// d.ddde+XX.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.dddde±XX
	mant, exps, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(exps)
	sign := ""
	if strings.HasPrefix(mant, "-") {
		sign, mant = "-", mant[1:]
	}
	digits := strings.Replace(mant, ".", "", 1)
	if -4 <= exp && exp < 16 {
		if exp < 0 {
			return sign + "0." + strings.Repeat("0", -exp-1) + digits
		}
		if len(digits) <= exp+1 {
			return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		}
		return sign + digits[:exp+1] + "." + digits[exp+1:]
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if exp < 0 {
		es, exp = "-", -exp
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, exp)
}

// validUTF8 reports whether b can be read as Python reads a text file (UTF-8, strictly).
func validUTF8(b []byte) bool { return utf8.Valid(b) }
