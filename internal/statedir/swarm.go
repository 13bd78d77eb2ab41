package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Swarm is swarm's and ralph's state directory, $SWARM_DIR (default ~/.swarm), laid out as the
// Python swarm lays it out, so that either tool reads the other's state:
//
//	state.json                        the workers, {"workers": [...]}  (Swarm.State)
//	state.lock                        flock of every writer of state.json (Swarm.StateLock)
//	state.json.corrupted              copy of a state.json that did not parse (Swarm.StateCorrupted)
//	logs/<name>.stdout.log            a process worker's stdout (Swarm.StdoutLog)
//	logs/<name>.stderr.log            and its stderr (Swarm.StderrLog)
//	heartbeat.lock                    flock of every heartbeat file's reader and writer
//	heartbeats/<worker>.json          a worker's heartbeat (Swarm.Heartbeat)
//	ralph/<name>/state.json           a ralph loop's state (Swarm.RalphState)
//	ralph/<name>/state.lock           its lock (ours: the Python ralph wrote without one)
//	ralph/<name>/iterations.log       its iteration log (Swarm.RalphIterations)
//	supervise/                        swarm's supervisors, a Dir of their own (Swarm.Supervise)
//
// It is held to the rules of every state directory (Check, as Dir.Check): $SWARM_DIR belongs
// to the user, and logs/, heartbeats/, ralph/ and supervise/ (and supervise/'s own
// subdirectories) are real directories of the user's, never links.
//
// Worker and loop names obey CheckName (KindWorker, KindLoop), so a name never reaches outside
// its directory and the two logs of a worker never meet another worker's. The Python swarm did
// not check names at all; names it accepted and CheckName does not are the caller's to refuse or
// to read as they are.
type Swarm struct {
	// Root is $SWARM_DIR.
	Root string
}

// SwarmFromEnv returns the swarm directory as the Python swarm chose it: $SWARM_DIR when set
// (set but empty meaning the current directory), else ~/.swarm. lookup is os.LookupEnv, or a
// stand-in in tests.
func SwarmFromEnv(lookup func(string) (string, bool)) (Swarm, error) {
	if dir, ok := lookup("SWARM_DIR"); ok {
		if dir == "" {
			dir = "."
		}
		return Swarm{Root: dir}, nil
	}
	home, _ := lookup("HOME")
	if home == "" {
		return Swarm{}, errors.New("neither SWARM_DIR nor HOME is set: cannot find the swarm directory; set SWARM_DIR")
	}
	return Swarm{Root: filepath.Join(home, ".swarm")}, nil
}

func (s Swarm) join(elem ...string) string {
	return filepath.Join(append([]string{s.Root}, elem...)...)
}

// State is the workers' registry, state.json.
func (s Swarm) State() string { return s.join("state.json") }

// StateLock is the lock every writer of state.json takes (fsx.Update's lockPath), state.lock.
func (s Swarm) StateLock() string { return s.join("state.lock") }

// StateCorrupted is where a state.json that does not parse is copied, state.json.corrupted.
func (s Swarm) StateCorrupted() string { return s.join("state.json.corrupted") }

// Logs is the directory of process workers' output.
func (s Swarm) Logs() string { return s.join("logs") }

// StdoutLog is a process worker's standard output: logs/<name>.stdout.log.
func (s Swarm) StdoutLog(name string) string { return s.join("logs", name+".stdout.log") }

// StderrLog is a process worker's standard error: logs/<name>.stderr.log.
func (s Swarm) StderrLog(name string) string { return s.join("logs", name+".stderr.log") }

// HeartbeatLock is the lock of every heartbeat file's reader and writer, heartbeat.lock.
func (s Swarm) HeartbeatLock() string { return s.join("heartbeat.lock") }

// Heartbeats is the directory of heartbeat files.
func (s Swarm) Heartbeats() string { return s.join("heartbeats") }

// Heartbeat is worker's heartbeat: heartbeats/<worker>.json.
func (s Swarm) Heartbeat(worker string) string { return s.join("heartbeats", worker+".json") }

// Ralph is the directory of ralph loops.
func (s Swarm) Ralph() string { return s.join("ralph") }

// RalphDir is the directory of loop name: ralph/<name>.
func (s Swarm) RalphDir(name string) string { return s.join("ralph", name) }

// RalphState is loop name's state: ralph/<name>/state.json.
func (s Swarm) RalphState(name string) string { return s.join("ralph", name, "state.json") }

// RalphStateLock is the lock every writer of loop name's state takes: ralph/<name>/state.lock.
// The Python ralph wrote its state without a lock; ours never loses an update to a pause.
func (s Swarm) RalphStateLock(name string) string { return s.join("ralph", name, "state.lock") }

// RalphStateCorrupted is where a loop state that does not parse is copied:
// ralph/<name>/state.json.corrupted.
func (s Swarm) RalphStateCorrupted(name string) string {
	return s.join("ralph", name, "state.json.corrupted")
}

// RalphIterations is loop name's iteration log: ralph/<name>/iterations.log.
func (s Swarm) RalphIterations(name string) string {
	return s.join("ralph", name, "iterations.log")
}

// Supervise is the state directory of swarm's supervisors (a statedir.Dir rooted here, and
// supervise.Layout over it): supervisors/<worker>.json, sockets/<worker>.sock,
// locks/<worker>.lock, logs/<worker>.log (a tmux worker's output), handoff/. The Python swarm
// had none of it.
func (s Swarm) Supervise() string { return s.join("supervise") }

// swarmWritable are the subdirectories of $SWARM_DIR that swarm and ralph create files in.
var swarmWritable = []string{"logs", "heartbeats", "ralph", "supervise"}

// Check is Dir.Check for $SWARM_DIR: the directory itself (which may be reached through a
// link) belongs to this process's user, and each of logs/, heartbeats/, ralph/ and supervise/
// that exists is a real directory of the user's, as is each subdirectory of supervise/ that
// its supervisors write in (Dir.Check). Missing ones are fine: Mkdir creates them. Each
// problem is one line that names the directory and says what to do.
func (s Swarm) Check() error {
	subs := make([]string, len(swarmWritable))
	for i, sub := range swarmWritable {
		subs[i] = s.join(sub)
	}
	if err := checkTree(s.Root, "swarm directory", subs); err != nil {
		return err
	}
	return Dir{Root: s.Supervise()}.Check()
}

// LoopNames are the ralph loops that have a directory under ralph/, for the shell completions
// (`ralph __complete loops`): real directories only (a link is not followed, and ralph/ itself
// must be a real directory of the user's, as Check has it), with names CheckName accepts, in
// the directory's order. No ralph/ is no loops.
func (s Swarm) LoopNames() ([]string, error) {
	if err := CheckDir(s.Ralph()); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.Ralph())
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		// DirEntry's type is the link's own, never its target's.
		if e.Type().IsDir() && CheckName(KindLoop, e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
