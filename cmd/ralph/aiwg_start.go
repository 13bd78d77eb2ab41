package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/fleet/internal/cli"
	"github.com/agentfleet/fleet/internal/ralph/aiwg"
	ucli "github.com/urfave/cli/v2"
)

// Defaults of ralph start: seed 003's max_iterations and checkpoint_interval, AIWG's 60
// minutes.
const (
	defaultMaxIterations = 200
	defaultTimeout       = 60 * time.Minute
	defaultAgent         = "claude"
)

// startCommand is `ralph start "TASK" --completion "CMD"`, and the two hidden forms ralph
// starts itself: `start __run ID` (a background controller) and `start __supervise …` (an
// iteration's supervisor).
func startCommand() *cli.Command {
	var o startOptions
	start := &cli.Command{
		Name: "start", OwnSignals: true,
		Help: `ralph start "TASK" --completion "CMD" [options] - run TASK with an agent until CMD exits 0

Options:
   --completion, -c CMD       the command that exits 0 when the task is done (required); plain
                              words run as they are, shell syntax through /bin/sh -c
   --max-iterations N         at most N iterations (200)
   --timeout DUR              the loop's time: 90s, 30m, 1h30m, bare minutes, or none (60m)
   --checkpoint-interval N    a checkpoint every N iterations (1)
   --no-progress N            end the loop (failed, no-progress) after N iterations in a row
                              that changed no file and made no commit, or failed the same
                              way; 0: never (3)
   --iteration-timeout DUR    stop an iteration's agent after DUR; the iteration fails and
                              the loop goes on (60m; none: only the loop's --timeout)
   --inactivity-timeout S     stop an iteration's agent that printed nothing for S seconds (or
                              a duration); the iteration fails and the loop goes on (0: never)
   --budget USD               start no iteration once the loop's cost reaches USD: the loop
                              pauses (budget); ralph resume ID --budget USD raises it (none)
   --hard-budget              also stop the agent at work once its reported cost reaches it
   --max-calls-per-hour N     start the agent at most N times an hour; the loop waits,
                              paused (calls-per-hour), for the hour to pass (0: no limit)
   --on-event CMD             run CMD (words, no shell) on the loop's start and end, a failed
                              iteration, a limit and the breaker, one JSON event on its
                              stdin; killed after 10 s; its failure changes nothing
   --commit-each              commit the working tree after each iteration (trailers
                              Ralph-Loop and Ralph-Iteration; no change, no commit)
   --interactive              ask on this terminal before each iteration after the first
                              whether to run it (no: the loop pauses); needs --foreground
   --auto-test                run the completion command after every iteration (the default)
   --no-auto-test             run it only after an iteration whose agent exited 0
   --execution-mode MODE      strict, seeded, logged or default: recorded in the loop's
                              configuration (default)
   --agent AGENT[:MODEL]      an agent of the agents config (CONFIG_FILE) (claude)
   --force                    start even with 4 loops active in the workspace
   --foreground               run here until the loop ends; exit 0 only for completed

The loop lives in .aiwg/ralph/loops/<loop_id>/; each iteration's run and result records in
$STATE_DIR, else .aiwg/ralph/state. Exit status: 0 ok, 1 failure, 2 usage error.
`,
		Flags: o.AddFlags(nil),
		Action: func(ctx context.Context, c *ucli.Context, s cli.Streams) error {
			spec, err := startSpec(c.Args().Slice(), &o)
			if err != nil {
				return err
			}
			return runStart(ctx, spec, s)
		},
	}
	return &cli.Command{Name: "start", OwnSignals: true, Raw: func(ctx context.Context, s cli.Streams, args []string) error {
		if len(args) > 0 {
			switch args[0] {
			case controllerVerb:
				return runController(ctx, s, args[1:])
			case supervisorVerb:
				return startSupervisor.Raw(ctx, s, args[1:])
			}
		}
		return cli.Run(ctx, start.App(tool+" start", s), append([]string{tool + " start"}, args...))
	}}
}

// startOptions are ralph start's flags, as typed: startSpec reads them.
type startOptions struct {
	completion, agent, executionMode  string
	maxIterations, timeout            givenString
	checkpointInterval, noProgress    givenString
	interactive, autoTest, noAutoTest bool
	force, foreground                 bool
	rails                             railsOptions
}

// AddFlags appends ralph start's flags, each writing into o, to flags. (Their help is the
// verb's own, written by hand.)
func (o *startOptions) AddFlags(flags []ucli.Flag) []ucli.Flag {
	flags = append(flags,
		&ucli.StringFlag{Name: "completion", Aliases: []string{"c"}, Destination: &o.completion},
		o.maxIterations.flag("max-iterations"),
		o.timeout.flag("timeout"),
		o.checkpointInterval.flag("checkpoint-interval"),
		o.noProgress.flag("no-progress"),
		&ucli.StringFlag{Name: "agent", Value: defaultAgent, Destination: &o.agent},
		&ucli.BoolFlag{Name: "interactive", Destination: &o.interactive},
		&ucli.BoolFlag{Name: "auto-test", Destination: &o.autoTest},
		&ucli.BoolFlag{Name: "no-auto-test", Destination: &o.noAutoTest},
		&ucli.StringFlag{Name: "execution-mode", Value: "default", Destination: &o.executionMode},
		&ucli.BoolFlag{Name: "force", Destination: &o.force},
		&ucli.BoolFlag{Name: "foreground", Destination: &o.foreground})
	return o.rails.AddFlags(flags)
}

// startSpec reads ralph start's operands and flags. The state directory is $STATE_DIR, else
// the workspace's .aiwg/ralph/state.
func startSpec(ops []string, o *startOptions) (aiwg.StartSpec, error) {
	if len(ops) != 1 || strings.TrimSpace(ops[0]) == "" {
		return aiwg.StartSpec{}, cli.Usagef("give the task as one argument: ralph start \"TASK\" --completion \"CMD\"")
	}
	spec := aiwg.StartSpec{Task: ops[0], Completion: o.completion, Timeout: defaultTimeout,
		Agent: o.agent, StateDir: os.Getenv("STATE_DIR"), Force: o.force, Foreground: o.foreground}
	if strings.TrimSpace(spec.Completion) == "" {
		return spec, cli.Usagef("--completion \"CMD\" is required: the command that exits 0 when the task is done")
	}
	var err error
	if spec.MaxIterations, err = positive("max-iterations", o.maxIterations, defaultMaxIterations); err != nil {
		return spec, err
	}
	if spec.CheckpointInterval, err = positive("checkpoint-interval", o.checkpointInterval, 1); err != nil {
		return spec, err
	}
	if o.noProgress.given {
		n, err := strconv.Atoi(strings.TrimSpace(o.noProgress.value))
		if err != nil || n < 0 {
			return spec, cli.Usagef("argument --no-progress: %q is not a whole number of iterations (0 turns the breaker off)", o.noProgress.value)
		}
		spec.NoProgress = &n
	}
	if o.timeout.given {
		if spec.Timeout, err = parseTimeout(o.timeout.value); err != nil {
			return spec, err
		}
	}
	if spec.Agent == "" {
		spec.Agent = defaultAgent
	}
	if spec.Interactive = o.interactive; spec.Interactive && !spec.Foreground {
		return spec, cli.Usagef("--interactive asks before each iteration on this terminal: give --foreground too")
	}
	if o.autoTest && o.noAutoTest {
		return spec, cli.Usagef("--auto-test and --no-auto-test exclude each other: give one")
	}
	spec.NoAutoTest = o.noAutoTest
	spec.ExecutionMode = o.executionMode
	if !slices.Contains(aiwg.ExecutionModes, spec.ExecutionMode) {
		return spec, cli.Usagef("--execution-mode %q: one of %s", spec.ExecutionMode, strings.Join(aiwg.ExecutionModes, ", "))
	}
	if spec.Rails, err = o.rails.rails(); err != nil {
		return spec, err
	}
	return spec, nil
}

// runStart starts the loop spec and says so; with --foreground it is the loop's controller
// until the loop ends, and exits 0 only for completed.
func runStart(ctx context.Context, spec aiwg.StartSpec, s cli.Streams) error {
	ws, err := workspace()
	if err != nil {
		return err
	}
	rt, err := runtime(ws, s.Err, s.Err)
	if err != nil {
		return err
	}
	if spec.Foreground {
		rt.Ask = askOn(s)
	}
	st, err := ws.Start(ctx, spec, rt)
	if err != nil {
		return err
	}
	if spec.Foreground {
		fmt.Fprintf(s.Out, "Ralph loop %s: %s\n", st.LoopID, aiwg.OneLine(st.Task, 60))
		return foregroundResult(ws.RunLoop(ctx, st.LoopID, rt))
	}
	fmt.Fprintf(s.Out, "✓ Ralph loop started (%s). Check status: ralph status %s\n", st.LoopID, st.LoopID)
	fmt.Fprintf(s.Out, "  PID: %d\n", *st.PID)
	fmt.Fprintf(s.Out, "  Loop ID: %s\n", st.LoopID)
	return nil
}

// askOn is a foreground controller's Runtime.Ask: the question on stderr, the answer a line on
// stdin; an empty answer (Enter) is yes, n or no is no. The end of the input is no: no one is
// there to answer.
func askOn(s cli.Streams) func(string) bool {
	in := bufio.NewReader(s.In)
	return func(question string) bool {
		fmt.Fprint(s.Err, question)
		line, err := in.ReadString('\n')
		answer := strings.ToLower(strings.TrimSpace(line))
		if err != nil && answer == "" {
			fmt.Fprintln(s.Err)
			return false
		}
		return answer != "n" && answer != "no"
	}
}
