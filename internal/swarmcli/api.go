package swarmcli

import (
	"context"
	"fmt"
	"io"
)

// Home is a swarm directory opened for code outside this package (ralph's loops, tests): the
// same registry, layout and rules the verbs use.
type Home struct {
	h      *home
	stderr io.Writer
}

// OpenHome opens the swarm directory at dir; warnings go to stderr as "swarm: warning: ...".
func OpenHome(dir string, stderr io.Writer) (*Home, error) {
	h, err := openHomeAt(&env{stdout: io.Discard, stderr: stderr}, dir)
	if err != nil {
		return nil, err
	}
	return &Home{h: h, stderr: stderr}, nil
}

// Screen is the worker's screen as peek shows it, with up to lines lines of history.
func (H *Home) Screen(ctx context.Context, name string, lines int) (string, error) {
	s, err := H.h.reg.Load()
	if err != nil {
		return "", err
	}
	w := s.Get(name)
	if w == nil {
		return "", fmt.Errorf("worker '%s' not found", name)
	}
	return screen(ctx, H.h, w, lines)
}
