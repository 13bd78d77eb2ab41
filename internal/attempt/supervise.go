package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/supervise"
	"golang.org/x/sys/unix"
)

// Supervise is the work of a tool's hidden supervisor verb for a dispatched attempt: take the
// spec from the starter's handoff socket, run the attempt on the shared supervisor, and record
// it. With handoff supervise.ServeHandoff it serves a slot instead (serve.go): bead is then the
// slot's name (SlotName), and the attempts come over descriptor 3. console is the pane (the verb's stdout), input its keyboard (nil when stdin is not a
// terminal).
func Supervise(ctx context.Context, stateDir, handoff, bead string, console io.Writer, input *os.File) error {
	sigs := supervise.CatchSignals() // before the starter lets go: a stop from then on counts
	if f, ok := console.(*os.File); ok {
		console = supervise.ConsoleOf(f)
	}
	if handoff == supervise.ServeHandoff {
		// Not passed on to the agents: the runner learns of the supervisor's end by the
		// connection's, which an agent left running would hold open.
		if _, err := unix.FcntlInt(3, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return errors.New("a serving supervisor needs its runner's connection as descriptor 3")
		}
		conn := os.NewFile(3, "runner")
		return serve(ctx, stateDir, bead, conn, sigs, console, input)
	}
	b, err := supervise.TakeHandoff(handoff)
	if err != nil {
		return err
	}
	var spec Spec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("the supervisor's spec: %w", err)
	}
	if spec.Run.Bead != bead || spec.Attempt.Name != bead {
		return fmt.Errorf("the supervisor's spec is for %q, not %q", spec.Run.Bead, bead)
	}
	d := NewDir(stateDir)
	s := &supervise.Supervisor{Layout: d.Layout, Tool: Tool, Name: bead, Backend: spec.Backend,
		Socket: spec.Socket, Session: spec.Session, Console: console, Input: input, Once: true, Signals: sigs}
	if err := s.Open(ctx); err != nil {
		return err
	}
	defer s.Close()
	s.Run(ctx, &spec.Attempt, &Recorder{Dir: d, Spec: &spec})
	return nil
}
