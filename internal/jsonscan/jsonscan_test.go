package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestValueEndsWhereTheDecoderDoes: for each well-formed value followed by more text, Value
// stops where encoding/json's decoder says the value ends.
func TestValueEndsWhereTheDecoderDoes(t *testing.T) {
	for _, v := range []string{
		`"a"`, `"a\"b\\"`, `"é\u00e9"`, `0`, `-1.5e+10`, `true`, `false`, `null`,
		`{}`, `[]`, `{"a":[1,{"b":"}]"}],"c":null}`, `[[[]],"[",{"]":1}]`,
	} {
		doc := []byte(v + ` , 1`)
		dec := json.NewDecoder(bytes.NewReader(doc))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got, want := Value(doc, 0), int(dec.InputOffset()); got != want {
			t.Errorf("Value(%s) = %d, want %d", v, got, want)
		}
	}
}

// TestBoundedOnBadInput: cut-short and malformed documents give an index within the document,
// never a panic.
func TestBoundedOnBadInput(t *testing.T) {
	for _, v := range []string{``, `"`, `"\`, `{`, `[{"a":`, `{"a":"b`, `-`, `tru`, `}`, `]]`} {
		doc := []byte(v)
		for i := 0; i <= len(doc); i++ {
			for _, f := range []func([]byte, int) int{Value, Space} {
				if got := f(doc, i); got < i || got > len(doc) {
					t.Errorf("%q at %d: %d, out of bounds", v, i, got)
				}
			}
		}
	}
	if got := String([]byte(`"abc`), 0); got != 4 {
		t.Errorf("unterminated string: %d, want 4", got)
	}
}

// FuzzValue: whatever the bytes, Value stays within them, and on a valid document it ends where
// the document does (after its trailing space).
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"]"]}`, `"\\"`, `[`, `1e5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		start := Space(doc, 0)
		end := Value(doc, start)
		if end < start || end > len(doc) {
			t.Fatalf("Value = %d, out of [%d, %d]", end, start, len(doc))
		}
		if json.Valid(doc) && Space(doc, end) != len(doc) {
			t.Fatalf("valid %q: Value ends at %d, then %q", doc, end, doc[end:])
		}
	})
}

// TestAppendCompactIsJSONCompact: on well-formed documents, with space around and inside
// strings, escapes and every kind of value, AppendCompact gives json.Compact's bytes.
func TestAppendCompactIsJSONCompact(t *testing.T) {
	for _, v := range []string{
		`{}`, ` { "a" : [ 1 , 2.5e3 , true , null ] , "b c" : " x\t\" \\ y " } `,
		"{\n\t\"prompt\": \"line one\\nline two \\\" }\",\r\n  \"n\": -0.5\n}\n",
		`[ "\u2028 </script> & <" , { } , [ ] ]`, `"  "`, `  7  `,
	} {
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(v)); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := AppendCompact([]byte("prefix:"), []byte(v)); string(got) != "prefix:"+want.String() {
			t.Errorf("AppendCompact(%q) = %q, want %q", v, got[len("prefix:"):], want.Bytes())
		}
	}
}

// FuzzAppendCompact: on any valid document AppendCompact is json.Compact; on anything else it
// stays within its bytes.
func FuzzAppendCompact(f *testing.F) {
	for _, s := range []string{` { "a" : [1, " ] "] } `, `"\\"`, `[`, "{\"a\":\n\"\\\"\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got := AppendCompact(nil, doc)
		if len(got) > len(doc) {
			t.Fatalf("%q: %d bytes out of %d", doc, len(got), len(doc))
		}
		var want bytes.Buffer
		if json.Compact(&want, doc) == nil && json.Valid(doc) && !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("AppendCompact(%q) = %q, json.Compact %q", doc, got, want.Bytes())
		}
	})
}
