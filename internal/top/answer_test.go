package top

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

// FuzzDecodeAnswer: whatever a host prints, decodeAnswer returns an error or rows that are fit
// to show here: each of a known kind, named after the host, its text free of control
// characters, nothing of the host's to reach, at most MaxHostRows of them.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"rows":[{"host":"x","kind":"worker","name":"w\u001b]0;t\u0007","status":"running","live":true,"control":"/s","tags":["a\nb"]}]}`))
	f.Add([]byte(`{"rows":[{"kind":"boat","name":"n"},null],"truncated":3}`))
	f.Add([]byte(`{"rows":null}`))
	f.Add([]byte(`[`))
	f.Add([]byte(`{"rows":[],"truncated":-4}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAnswer("h1", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "host h1: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line naming the host", err)
			}
			return
		}
		if len(a.Rows) > MaxHostRows || a.Truncated < 0 {
			t.Fatalf("%d rows, %d more", len(a.Rows), a.Truncated)
		}
		for _, r := range a.Rows {
			if r.Host != "h1" || r.Control != "" || r.Tmux != nil || r.Log != "" {
				t.Fatalf("row %+v: want host h1, nothing to reach", r)
			}
			texts := append([]string{r.Name, r.Source, r.Status, r.Reason, r.LastLine, r.ScreenError, r.Activity, string(r.Kind)}, r.Tags...)
			for _, s := range texts {
				if strings.ContainsFunc(s, unicode.IsControl) {
					t.Fatalf("row text %q holds a control character", s)
				}
			}
		}
	})
}

// TestDecodeAnswerBounded: an answer of more rows than MaxHostRows (a host of another version,
// or not ours) keeps MaxHostRows and counts the rest.
func TestDecodeAnswerBounded(t *testing.T) {
	rows := make([]*Row, MaxHostRows+5)
	for i := range rows {
		rows[i] = &Row{Kind: KindDispatch, Name: "b"}
	}
	b, _ := json.Marshal(HostAnswer{Rows: rows, Truncated: 1})
	a, err := decodeAnswer("h", b)
	if err != nil || len(a.Rows) != MaxHostRows || a.Truncated != 6 {
		t.Fatalf("decodeAnswer of %d rows = %d rows, truncated %d, %v; want %d and 6", len(rows), len(a.Rows), a.Truncated, err, MaxHostRows)
	}
}
