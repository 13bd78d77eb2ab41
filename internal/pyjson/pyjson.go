// Package pyjson writes JSON as Python's json.dump(obj, f, indent=2) writes it, so that a state
// file the Python swarm reads and writes (swarm's state.json and heartbeats, a ralph loop's
// state.json) is the same bytes whichever tool wrote it last: two-space indent, ", " and ": "
// separators (with indent, Python 3 drops the space before a newline: "," at line ends), every
// character outside printable ASCII escaped as \uXXXX (lower-case hex, UTF-16 surrogate pairs
// above the BMP), "/" and "<>&" left alone, empty containers as [] and {}, integers as they
// are, floats as Python's repr, no final newline.
//
// Indent re-writes a whole document; Writer builds one piece by piece, for a writer that keeps
// its keys in an order of its own (internal/worker).
package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Writer is a document being written as json.dump(indent=2) writes it. Its Buffer holds what
// is written so far; the punctuation between the pieces (",", ": ", brackets) is the caller's,
// written to the Buffer.
type Writer struct {
	bytes.Buffer
}

// Newline starts a line indented for depth (two spaces a level).
func (w *Writer) Newline(depth int) {
	w.WriteByte('\n')
	for i := 0; i < depth; i++ {
		w.WriteString("  ")
	}
}

// Raw writes the JSON value v (as read, any layout) re-encoded, its lines indented for depth.
// v must be one JSON value.
func (w *Writer) Raw(v json.RawMessage, depth int) error {
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

func (w *Writer) value(d *json.Decoder, depth int) error {
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
		w.WriteByte(byte(t))
		n := 0
		for d.More() {
			if n > 0 {
				w.WriteByte(',')
			}
			w.Newline(depth + 1)
			if isObj {
				k, err := d.Token()
				if err != nil {
					return err
				}
				w.Quote(k.(string))
				w.WriteString(": ")
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
			w.Newline(depth)
		}
		w.WriteByte(closing)
	case string:
		w.Quote(t)
	case json.Number:
		w.WriteString(Number(string(t)))
	case bool:
		w.WriteString(strconv.FormatBool(t))
	case nil:
		w.WriteString("null")
	}
	return nil
}

// Quote writes s as Python's json.dumps(s, ensure_ascii=True) does. Invalid UTF-8 is written
// as U+FFFD, as Go reads it.
func (w *Writer) Quote(s string) {
	w.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			w.WriteString(`\"`)
		case r == '\\':
			w.WriteString(`\\`)
		case r == '\n':
			w.WriteString(`\n`)
		case r == '\r':
			w.WriteString(`\r`)
		case r == '\t':
			w.WriteString(`\t`)
		case r == '\b':
			w.WriteString(`\b`)
		case r == '\f':
			w.WriteString(`\f`)
		case r >= 0x20 && r < 0x7f:
			w.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(w, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(w, `\u%04x`, r)
		}
	}
	w.WriteByte('"')
}

// Indent re-writes the JSON document doc (one value, any layout) as json.dump(indent=2) writes
// it.
func Indent(doc []byte) ([]byte, error) {
	var w Writer
	if err := w.Raw(doc, 0); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// Number is how Python writes back a number it read: an integer as it is (Python's int has no
// bound; "-0" is 0), anything with a fraction or an exponent as the float's repr (Float).
func Number(lit string) string {
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
	return Float(f)
}

// Float is Python's repr of a float: the shortest digits that read back the same, in fixed
// notation when the decimal exponent is from -4 to 15 (with ".0" for a whole number), else as
// d.ddde+XX; Infinity, -Infinity and NaN as json.dump writes them.
func Float(f float64) string {
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
