package swarm

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A line over the terminal's canonical limit (4,095 bytes) sent to an agent that reads lines in
// cooked mode arrives whole (issue 17: it was cut at 4,095 while send reported success).
func TestSendLongLineToCookedAgent(t *testing.T) {
	ctx := context.Background()
	l := newLab(t)
	// A shell's read: the terminal in canonical mode, as the kernel's line discipline keeps it.
	agent := `echo agent ready; n=0; while IFS= read -r line; do n=$((n+1)); ` +
		`printf 'reply %d: %d bytes, ends %s\n' "$n" "${#line}" "${line##*x}"; done`
	w, err := l.sw.Spawn(ctx, Spec{Name: "cooked", Cmd: []string{"sh", "-c", agent}})
	if err != nil {
		l.fatalf("cooked", "Spawn = %v", err)
	}
	l.waitScreen(w, "agent ready")
	for i, n := range []int{5000, 10000, 10} {
		line := strings.Repeat("x", n) + "END"
		if err := l.sw.Send(ctx, w, line, SendOptions{}); err != nil {
			l.fatalf("cooked", "Send(%d bytes) = %v", len(line), err)
		}
		reply := regexp.MustCompile(fmt.Sprintf(`reply %d: (\d+) bytes, ends (\S*)`, i+1))
		l.waitScreen(w, reply.String())
		scr, _ := l.sw.Screen(ctx, w, 5)
		if m := reply.FindStringSubmatch(scr); m == nil || m[1] != fmt.Sprint(len(line)) || m[2] != "END" {
			l.fatalf("cooked", "after Send of a %d-byte line the agent says %q, want %d bytes ending END", len(line), m, len(line))
		}
	}
}
