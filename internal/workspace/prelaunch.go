package workspace

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Launch is what the pre-launch scripts are told, and where their output goes.
type Launch struct {
	Agent string // the agent type, as given (claude, codex, …)
	Repo  string // the repository, absolute
	// EnforcePRDLint runs the PRD-lint gate (DISPATCH_ENFORCE_PRD_LINT, see EnforcePRDLint).
	EnforcePRDLint bool
	Env            []string
	// Stdout and Stderr are dispatch's: the scripts print there, as they did under dispatch.sh.
	Stdout, Stderr io.Writer
}

// Refusal is a pre-launch script's refusal of the launch: dispatch exits with Code.
type Refusal struct {
	Script string // the script's path
	Code   int
	// PRDLint marks the PRD-lint gate's refusal; Report is prd-lint.sh's report (its output),
	// shown after it.
	PRDLint bool
	Report  string
	// Err is why the script could not give a verdict (it could not be run, or hung).
	Err error
}

func (r *Refusal) Error() string {
	switch {
	case r.Err != nil:
		return fmt.Sprintf("launch refused: %s: %v", r.Script, r.Err)
	case r.PRDLint:
		// dispatch.sh's words, which callers may look for.
		return strings.TrimRight("PRD governance check failed. Dispatch blocked.\n"+r.Report, "\n")
	}
	return fmt.Sprintf("launch refused by %s (exit %d)", r.Script, r.Code)
}

func (r *Refusal) Unwrap() error { return r.Err }

// EnforcePRDLint reads DISPATCH_ENFORCE_PRD_LINT as dispatch.sh did: unset or empty is "true",
// and only "true" enforces.
func EnforcePRDLint(getenv func(string) string) bool {
	v := getenv("DISPATCH_ENFORCE_PRD_LINT")
	return v == "" || v == "true"
}

// prdReportLimit bounds the PRD-lint report kept to show with a refusal.
const prdReportLimit = 1 << 20

// BeforeLaunch runs the workspace's pre-launch scripts that it has, in dispatch.sh's order:
// lint-no-hidden-workspace.sh, agent-preflight.sh AGENT REPO, and the PRD-lint gate. The first
// that fails refuses the launch (a *Refusal): the lint and the preflight with their own exit
// status, the PRD-lint gate with 1 and its report. A nil workspace has none.
func (w *Workspace) BeforeLaunch(ctx context.Context, l Launch) error {
	if w == nil {
		return nil
	}
	for _, step := range []struct {
		name string
		args []string
	}{{ScriptLintHidden, nil}, {ScriptPreflight, []string{l.Agent, l.Repo}}} {
		path := w.Hook(step.name)
		if path == "" {
			continue
		}
		c := Command{Path: path, Args: step.args, Env: l.Env, Stdout: l.Stdout, Stderr: l.Stderr}
		code, err := c.Run(ctx)
		if err != nil {
			return &Refusal{Script: path, Code: 1, Err: err}
		}
		if code != 0 {
			return &Refusal{Script: path, Code: code}
		}
	}
	path := w.Hook(ScriptPRDLint)
	if !l.EnforcePRDLint || path == "" {
		return nil
	}
	// Its report is shown only when it refuses, as dispatch.sh kept it in a temp file.
	report := &capture{limit: prdReportLimit}
	c := Command{Path: path, Env: l.Env, Stdout: report, Stderr: l.Stderr}
	code, err := c.Run(ctx)
	if err != nil {
		return &Refusal{Script: path, Code: 1, Err: err}
	}
	if code != 0 {
		return &Refusal{Script: path, Code: 1, PRDLint: true, Report: report.buf.String()}
	}
	return nil
}
