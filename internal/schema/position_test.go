package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLocate(t *testing.T) {
	doc := "{\n  \"a\": 1,\n  \"b\": {\"c\": [10, {\"d\": \"x\"}, 30]},\n  \"e/f\": true, \"g~h\": null,\n  \"é\": \"ü\", \"k\": 1, \"k\": [],\n  \"\\u0041\": false\n}"
	tests := []struct {
		pointer   string
		line, col int
	}{
		{"", 1, 1},
		{"/a", 2, 8},
		{"/b", 3, 8},
		{"/b/c", 3, 14},
		{"/b/c/0", 3, 15},
		{"/b/c/1", 3, 19},
		{"/b/c/1/d", 3, 25},
		{"/b/c/2", 3, 31},
		{"/e~1f", 4, 10},
		{"/g~0h", 4, 23},
		{"/é", 5, 8},       // columns count code points, not bytes
		{"/k", 5, 26},      // the last of duplicate keys, as the decoder keeps
		{"/A", 6, 13},      // a key written with an escape
		{"/missing", 1, 1}, // a missing field: its object
		{"/b/c/9", 3, 14},  // past the end: its array
		{"/b/c/01", 3, 14}, // not an index
		{"/a/deeper", 2, 8},
	}
	for _, tt := range tests {
		off, ok := Locate([]byte(doc), tt.pointer)
		line, col := Position([]byte(doc), off)
		if !ok || line != tt.line || col != tt.col {
			t.Errorf("Locate(doc, %q) = line %d col %d (ok %v), want line %d col %d", tt.pointer, line, col, ok, tt.line, tt.col)
		}
	}
	if _, ok := Locate([]byte("  "), ""); ok {
		t.Errorf("Locate(blank, \"\") = ok, want not found")
	}
}

// FuzzLocate checks that the value Locate finds for every pointer into a document is the one
// the decoder sees there.
func FuzzLocate(f *testing.F) {
	f.Add(`{"a":[1,{"b":"c"}],"d":{"e":null}}`)
	f.Add(`[ "x" , {"y\"z": [true, false]} ]`)
	f.Add(`{"k":1,"k":{"l":2}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil || strings.Contains(doc, "\\u0000") {
			return
		}
		var walk func(ptr string, v any)
		walk = func(ptr string, v any) {
			off, ok := Locate([]byte(doc), ptr)
			if !ok {
				t.Fatalf("Locate(%q, %q) = not found", doc, ptr)
			}
			var got any
			dec := json.NewDecoder(strings.NewReader(doc[off:]))
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("Locate(%q, %q) = %d, where no value starts: %v", doc, ptr, off, err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(v)
			if string(a) != string(b) {
				t.Fatalf("Locate(%q, %q) found %s, want %s", doc, ptr, a, b)
			}
			switch v := v.(type) {
			case map[string]any:
				for k, e := range v {
					walk(ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), e)
				}
			case []any:
				for i, e := range v {
					walk(ptr+"/"+itoa(i), e)
				}
			}
		}
		walk("", v)
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
