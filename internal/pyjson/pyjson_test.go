package pyjson

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestFloat(t *testing.T) {
	tests := map[float64]string{1.5: "1.5", 1e300: "1e+300", 1e16: "1e+16", 1e15: "1000000000000000.0", 0.0001: "0.0001",
		0.00001: "1e-05", 123.456: "123.456", -2: "-2.0", 0: "0.0", 1.5e-7: "1.5e-07", 12345678901234567890: "1.2345678901234567e+19"}
	for f, want := range tests {
		if got := Float(f); got != want {
			t.Errorf("Float(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "-0": "0", "42": "42", "123456789012345678901234567890": "123456789012345678901234567890",
		"1.50": "1.5", "1e5": "100000.0", "-0.0": "-0.0", "1E400": "Infinity", "2.5e-5": "2.5e-05"} {
		if got := Number(in); got != want {
			t.Errorf("Number(%q) = %q, want %q", in, got, want)
		}
	}
}

// cases are documents, compact, and what Python's json.dumps(json.loads(doc), indent=2) writes.
var cases = []struct{ in, want string }{
	{`{}`, `{}`},
	{`[]`, `[]`},
	{`{"a":[],"b":{},"c":null,"d":true,"e":false}`, "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": null,\n  \"d\": true,\n  \"e\": false\n}"},
	{`{"a": [1, 2.50, {"x": "y"}]}`, "{\n  \"a\": [\n    1,\n    2.5,\n    {\n      \"x\": \"y\"\n    }\n  ]\n}"},
	{`"é/<>&\u2028😀\u0001\"\\\n\t\b\f\r"`, `"\u00e9/<>&\u2028\ud83d\ude00\u0001\"\\\n\t\b\f\r"`},
	{`{"z": 1, "a": 2}`, "{\n  \"z\": 1,\n  \"a\": 2\n}"}, // keys in their order
	{`-0`, `0`},
}

func TestIndent(t *testing.T) {
	for _, c := range cases {
		got, err := Indent([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("Indent(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{``, `{`, `{"a": 1} {"b": 2}`, `[1,]`} {
		if got, err := Indent([]byte(bad)); err == nil {
			t.Errorf("Indent(%s) = %q, nil error", bad, got)
		}
	}
}

// The cases as Python itself writes them, where there is a python3 (one process for all).
func TestIndentAsPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	args := []string{"-c", `import json,sys
sys.stdout.write("\0".join(json.dumps(json.loads(a), indent=2) for a in sys.argv[1:]))`}
	for _, c := range cases {
		args = append(args, c.in)
	}
	cmd := exec.Command(py, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	written := strings.Split(string(out), "\x00")
	if len(written) != len(cases) {
		t.Fatalf("python3 wrote %d documents for %d", len(written), len(cases))
	}
	for i, c := range cases {
		if got, _ := Indent([]byte(c.in)); string(got) != written[i] {
			t.Errorf("Indent(%s) = %q; Python wrote %q", c.in, got, written[i])
		}
	}
}
