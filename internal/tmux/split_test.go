package tmux

import (
	"context"
	"slices"
	"testing"
)

// TestSplitFrom: a pane id is the target, as given; a name (matched by prefix) is refused before
// tmux runs; the server's socket is read from $TMUX's value.
func TestSplitFrom(t *testing.T) {
	var ran [][]string
	c := &Client{Socket: SocketOfEnv("/tmp/tmux-0/top,123,0"), Run: func(_ context.Context, args ...string) ([]byte, error) {
		ran = append(ran, args)
		return nil, nil
	}}
	if err := c.SplitFrom(context.Background(), "%3", "/w/t"); err != nil {
		t.Fatal(err)
	}
	want := []string{"-S", "/tmp/tmux-0/top", "split-window", "-v", "-c", "/w/t", "-t", "%3"}
	if len(ran) != 1 || !slices.Equal(ran[0], want) {
		t.Errorf("SplitFrom ran %q, want %q", ran, want)
	}
	for _, pane := range []string{"top", "%", "%1;kill-server", "=top:"} {
		if err := c.SplitFrom(context.Background(), pane, "/w"); err == nil {
			t.Errorf("SplitFrom(%q) = nil, want it refused", pane)
		}
	}
	if len(ran) != 1 {
		t.Errorf("tmux ran for a refused pane: %q", ran[1:])
	}
}
