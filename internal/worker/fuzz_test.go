package worker

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzDecode: any bytes as state.json never panic Decode; what it reads, Encode writes so that
// Decode reads it back the same; every JSON object's members are split as encoding/json
// reads them.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"workers": [{"name": "w", "status": "running", "cmd": ["a"], "started": "2026-01-01T00:00:00", "cwd": "/", "metadata": {"k": [1, "}"]}}], "x": 1}`))
	f.Add([]byte(`{"workers": [1, {"name": "\u00e9\"", "status": "s", "cmd": [], "started": "", "cwd": "", "tmux": {"session": "s", "window": "w", "z": null}}]}`))
	f.Add([]byte(`{"a": {"b": "c\\"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err == nil {
			enc := Encode(s)
			s2, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode(Encode(s)) = %v\n%s", err, enc)
			}
			if enc2 := Encode(s2); !bytes.Equal(enc, enc2) {
				t.Fatalf("Encode is not stable:\n%s\n%s", enc, enc2)
			}
		}
		if !json.Valid(b) || !utf8.Valid(b) { // Decode refuses what is not UTF-8 first
			return
		}
		o, err := parseObject(b)
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			if err == nil {
				t.Fatalf("parseObject(%s) accepted what is no object", b)
			}
			return
		}
		if err != nil || len(o) != len(m) {
			t.Fatalf("parseObject(%s) = %d members, %v; encoding/json read %d", b, len(o), err, len(m))
		}
		for _, mem := range o {
			if !bytes.Equal(bytes.TrimSpace(m[mem.Key]), mem.Value) {
				t.Fatalf("parseObject(%s)[%q] = %s, encoding/json %s", b, mem.Key, mem.Value, m[mem.Key])
			}
		}
	})
}
