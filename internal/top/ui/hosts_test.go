package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
	"github.com/agentfleet/fleet/internal/top"
)

// TestHostsInTheView: with --hosts, the table has a HOST column (local for this machine's
// rows), and when a host's poll ends the status line says its state: a host that refuses the
// connection is offline, never seen, and the view goes on.
func TestHostsInTheView(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hw, err := top.WatchHosts(ctx, []*remote.Host{{Name: "closed", SSH: "127.0.0.1", Port: 1, Repo: "/srv", StateDir: "s"}},
		top.HostOptions{Every: time.Hour, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	m, err := top.Open(top.Sources{StateDir: t.TempDir(), Hosts: hw})
	if err != nil {
		t.Fatal(err)
	}
	u := newUI(ctx, m, Options{Sort: "kind"})
	u.Update(rowsMsg{rows: []*top.Row{{Kind: top.KindWorker, Name: "here", Status: "running", Live: true}}})
	select {
	case <-m.HostAnswers():
	case <-time.After(20 * time.Second):
		t.Fatalf("the host's poll never ended: %+v", hw.Status())
	}
	u.Update(hostMsg{})
	s := u.render()
	if !strings.Contains(s, "HOST") || !strings.Contains(s, "local") || !strings.Contains(s, "closed offline (never seen)") {
		t.Errorf("the view with a host that refuses:\n%s", s)
	}
}
