// Package labconn dials the test lab's sshd hosts (internal/testenv/sshlab) from a process a test
// started and will kill: the hosts come in a JSON file the test wrote, and are dialed with the
// lab's short timeouts. It is its own package because internal/remote's tests import sshlab, so
// sshlab cannot import remote.
package labconn

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/agentfleet/fleet/internal/remote"
)

// Dial reads the hosts in the JSON file at path ([]*remote.Host) and dials each: a host that does
// not answer is an error, as for a run's start.
func Dial(path string) ([]*remote.Conn, error) {
	var hosts []*remote.Host
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &hosts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d, err := remote.NewDialer(remote.Options{ConnectTimeout: 2 * time.Second, AliveInterval: time.Second})
	if err != nil {
		return nil, err
	}
	var conns []*remote.Conn
	for _, h := range hosts {
		c, err := d.Dial(context.Background(), h)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	return conns, nil
}
