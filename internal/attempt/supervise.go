package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/agentfleet/fleet/internal/supervise"
)

// Supervise is the work of a tool's hidden supervisor verb for a dispatched attempt: take the
// spec from the starter's handoff socket, run the attempt on the shared supervisor, and record
// it. console is the pane (the verb's stdout), input its keyboard (nil when stdin is not a
// terminal).
func Supervise(ctx context.Context, stateDir, handoff, bead string, console io.Writer, input *os.File) error {
	sigs := supervise.CatchSignals() // before the starter lets go: a stop from then on counts
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
	if f, ok := console.(*os.File); ok {
		console = supervise.ConsoleOf(f)
	}
	s := &supervise.Supervisor{Layout: d.Layout, Tool: Tool, Name: bead, Backend: spec.Backend,
		Socket: spec.Socket, Session: spec.Session, Console: console, Input: input, Once: true, Signals: sigs}
	if err := s.Open(ctx); err != nil {
		return err
	}
	defer s.Close()
	s.Run(ctx, &spec.Attempt, &Recorder{Dir: d, Spec: &spec})
	return nil
}
