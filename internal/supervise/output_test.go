package supervise

import (
	"strings"
	"testing"
)

func TestSummaryAndTail(t *testing.T) {
	var tl tail
	tl.max = 64
	for i := 0; i < 100; i++ {
		tl.Write([]byte("0123456789"))
	}
	if got := len(tl.Bytes()); got != 64 {
		t.Errorf("tail kept %d bytes, want 64", got)
	}
	out := strings.Repeat("é", 600) + "\x1b[32m done \x1b[0m\n"
	got := summarize([]byte(out))
	if n := len([]rune(got)); n != 500 || !strings.HasSuffix(got, "é done") {
		t.Errorf("Summary = %d runes ending %q, want 500 ending in \"é done\"", n, got[len(got)-10:])
	}
}
