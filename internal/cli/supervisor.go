package cli

import (
	"errors"
	"flag"
	"io"
)

// SupervisorArgs are the arguments of the hidden supervisor verb (supervise.SuperviseVerb), as
// its starters append them to the verb: attempt.Launch "--state-dir DIR --handoff PATH BEAD"
// (the --state-dir is the tool's, in its Self), swarm's Spawn "--swarm-dir DIR --handoff PATH
// NAME". The verb is started by a program, never by hand, so they are read in one place
// (ParseSupervisorArgs), by every binary's verb and by the test binaries that stand in for
// them.
type SupervisorArgs struct {
	StateDir string // --state-dir: an attempt's state directory
	SwarmDir string // --swarm-dir: a swarm worker's swarm directory
	Handoff  string // --handoff: the starter's handoff socket
	Name     string // the operand: the bead, task or worker supervised
}

// errSupervisorArgs is any command line the verb's starters do not write; the verb says who
// starts it.
var errSupervisorArgs = errors.New("not the supervisor verb's arguments")

// ParseSupervisorArgs reads the supervisor verb's arguments (after the verb): the flags, each
// as "--flag VALUE" or "--flag=VALUE", then exactly one operand. It checks only the
// form; which flags a supervisor needs is its verb's to say.
func ParseSupervisorArgs(args []string) (SupervisorArgs, error) {
	var a SupervisorArgs
	fs := flag.NewFlagSet("supervisor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.StateDir, "state-dir", "", "")
	fs.StringVar(&a.SwarmDir, "swarm-dir", "", "")
	fs.StringVar(&a.Handoff, "handoff", "", "")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		return SupervisorArgs{}, errSupervisorArgs
	}
	a.Name = fs.Arg(0)
	return a, nil
}
