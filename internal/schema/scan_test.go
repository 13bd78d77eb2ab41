package schema

import (
	"errors"
	"strings"
	"testing"
)

func TestMeasure(t *testing.T) {
	tests := []struct {
		doc      string
		values   int
		overflow bool
	}{
		{`1`, 1, false},
		{`{}`, 1, false},
		{`{"a":1}`, 2, false},
		{`{"a" : "b", "c":[true,false,null,-1.5e3]}`, 7, false},
		{`{"a\"b":"c:\\"}`, 2, false},
		{`[1e400]`, 2, true},
		{`[-1E+309]`, 2, true},
		{`[1e308, 1e-400, 0.1]`, 4, false},
		{`[` + strings.Repeat("9", 400) + `]`, 2, true},
		{`[` + strings.Repeat("9", 300) + `]`, 2, false},
		{`"1e400"`, 1, false},
	}
	for _, tt := range tests {
		got := Measure([]byte(tt.doc))
		if got.Values != tt.values || got.Overflow != tt.overflow {
			t.Errorf("Measure(%.40s) = %+v, want %d values, overflow %v", tt.doc, got, tt.values, tt.overflow)
		}
	}
}

func TestClampNumbers(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a":1e400,"b":"1e400","c":-1e400,"d":2}`, `{"a":1.7976931348623157e308,"b":"1e400","c":-1.7976931348623157e308,"d":2}`},
		{`[1e308,9e999]`, `[1e308,1.7976931348623157e308]`},
	}
	for _, tt := range tests {
		if got := string(clampNumbers([]byte(tt.in))); got != tt.want {
			t.Errorf("clampNumbers(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestValidateOverflowingNumbers: a number beyond a double's range where const, enum or
// uniqueItems applies crashed validate-state (a nil pointer in gojsonschema, which cannot decode
// it); it is read as ajv reads it, Infinity: an integer, equal to no constant.
func TestValidateOverflowingNumbers(t *testing.T) {
	run := mustLoad(t, "run", "")
	tests := []struct {
		field, value string
		want         []Problem
	}{
		{`"schema_version": 1`, `"schema_version": 1e400`, []Problem{{Pointer: "/schema_version", Message: "expected 1, got 1.7976931348623157e308"}}},
		{`"status": "running"`, `"status": -1e400`, []Problem{{Pointer: "/status", Message: "expected string, got integer"}}},
		{`"attempt": 1`, `"attempt": 1e400`, nil}, // an integer, as ajv says
		{`"exit_code": null`, `"exit_code": -1e999`, nil},
	}
	for _, tt := range tests {
		doc := strings.Replace(fullRun, tt.field, tt.value, 1)
		got, err := run.Validate([]byte(doc))
		if err != nil || !equalProblems(got, tt.want) {
			t.Errorf("Validate(%s) = %v, %v; want %v", tt.value, got, err, tt.want)
		}
	}
	unique, err := Compile("x", "test", []byte(`{"type":"array","uniqueItems":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := unique.Validate([]byte(`[1e400, 2e400]`)); err != nil || len(got) != 1 {
		t.Errorf("Validate([1e400, 2e400]) against uniqueItems = %v, %v; want one problem (both are Infinity to ajv)", got, err)
	}
	if got, err := unique.Validate([]byte(`[1e400, -1e400]`)); err != nil || len(got) != 0 {
		t.Errorf("Validate([1e400, -1e400]) against uniqueItems = %v, %v; want valid", got, err)
	}
}

func equalProblems(a, b []Problem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestValidateTooComplex: a document the fast path cannot vouch for and that holds more than
// MaxValues values is refused before gojsonschema decodes it (a 16 MiB record of 1.6 million
// unknown keys took 1.5 GB), and admit is told the cost of the others.
func TestValidateTooComplex(t *testing.T) {
	run := mustLoad(t, "run", "")
	var b strings.Builder
	b.WriteString(`{"schema_version":1`)
	for i := 0; i < MaxValues; i++ {
		b.WriteString(`,"x":0`)
	}
	b.WriteString(`}`)
	_, err := run.Validate([]byte(b.String()))
	if !errors.Is(err, ErrTooComplex) {
		t.Errorf("Validate(%d values) = %v, want ErrTooComplex", MaxValues+1, err)
	}
	var admitted int64
	done := false
	_, err = run.ValidateWithin([]byte(`{"schema_version":2}`), func(cost int64) func() {
		admitted = cost
		return func() { done = true }
	})
	if err != nil || admitted != 2*CostPerValue+2*20 || !done {
		t.Errorf("ValidateWithin(2 values) = %v, admitted %d, done %v; want %d admitted, then done", err, admitted, done, 2*CostPerValue+40)
	}
	// A valid record the fast path vouches for costs nothing, whatever its size.
	admitted = 0
	if _, err := run.ValidateWithin([]byte(fullRun), func(cost int64) func() { admitted = cost; return func() {} }); err != nil || admitted != 0 {
		t.Errorf("ValidateWithin(valid record) = %v, admitted %d; want the fast path", err, admitted)
	}
}

// TestLongKeysAreClipped: a key of megabytes is named by its first maxToken bytes.
func TestLongKeysAreClipped(t *testing.T) {
	run := mustLoad(t, "run", "")
	key := strings.Repeat("é", 1<<20)
	doc := strings.Replace(fullRun, `"bead"`, `"`+key+`": 1, "bead"`, 1)
	got, err := run.Validate([]byte(doc))
	if err != nil || len(got) != 1 || len(got[0].Pointer) > maxToken+8 || !strings.HasSuffix(got[0].Pointer, "é…") {
		t.Errorf("Validate(a 2 MB key) = %d problems, %v; want one, its pointer clipped", len(got), err)
	}
}

// FuzzMeasure: Measure and clampNumbers take any bytes (--fix measures a record before it knows
// it is JSON) without a panic.
func FuzzMeasure(f *testing.F) {
	for _, seed := range []string{`{"a":1e400}`, "\ufeff{\"\\", `"`, `[t`, `{"k\`, `-`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		st := Measure(doc)
		if st.Values > len(doc) {
			t.Errorf("Measure(%q) = %d values, more than bytes", doc, st.Values)
		}
		clampNumbers(doc)
	})
}
