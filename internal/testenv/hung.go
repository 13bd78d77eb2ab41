package testenv

import (
	"net"
	"os"
	"testing"
)

// HungSocket takes over the control socket at path with a listener that accepts and says
// nothing (a supervisor that hangs), until the test ends: what swarm top must not wait on.
func HungSocket(t testing.TB, path string) {
	t.Helper()
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
}
