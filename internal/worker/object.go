package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentfleet/fleet/internal/jsonscan"
)

// The Python swarm reads its files with json.load, which keeps an object's keys in their order
// (a dict); Object does too, so that a file is written back (internal/pyjson) as it was read.

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
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out Object
	i = jsonscan.Space(b, i+1)
	for i < len(b) && b[i] != '}' {
		if b[i] != '"' {
			return nil, errors.New("malformed JSON object")
		}
		j := jsonscan.String(b, i)
		key, err := unquote(b[i:j])
		if err != nil {
			return nil, err
		}
		i = jsonscan.Space(b, j)
		if i >= len(b) || b[i] != ':' {
			return nil, errors.New("malformed JSON object")
		}
		i = jsonscan.Space(b, i+1)
		j = jsonscan.Value(b, i)
		if j <= i {
			return nil, errors.New("malformed JSON object")
		}
		out = out.Set(key, json.RawMessage(b[i:j]))
		i = jsonscan.Space(b, j)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.Space(b, i+1)
		}
	}
	if i >= len(b) {
		return nil, errors.New("unterminated JSON object")
	}
	return out, nil
}

// splitArray splits the JSON array b (valid JSON) into its elements, raw.
func splitArray(b []byte) ([]json.RawMessage, error) {
	i := jsonscan.Space(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, errors.New("not a JSON array")
	}
	var out []json.RawMessage
	i = jsonscan.Space(b, i+1)
	for i < len(b) && b[i] != ']' {
		j := jsonscan.Value(b, i)
		if j <= i {
			return nil, errors.New("malformed JSON array")
		}
		out = append(out, json.RawMessage(b[i:j]))
		i = jsonscan.Space(b, j)
		if i < len(b) && b[i] == ',' {
			i = jsonscan.Space(b, i+1)
		}
	}
	if i >= len(b) {
		return nil, errors.New("unterminated JSON array")
	}
	return out, nil
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

// validUTF8 reports whether b can be read as Python reads a text file (UTF-8, strictly).
func validUTF8(b []byte) bool { return utf8.Valid(b) }
