package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/fleet/internal/fsx"
)

// ErrUnreachable is the error of a host that could not be connected to (or stopped answering).
var ErrUnreachable = errors.New("host unreachable")

// ErrVersion is the error of a host whose binaries are missing or of another version.
var ErrVersion = errors.New("host runs another version")

// Options say how a Dialer runs OpenSSH. The zero value is usable.
type Options struct {
	// SSH is the ssh program; "" is "ssh" on PATH.
	SSH string
	// ConnectTimeout bounds a connection's set-up (ssh's ConnectTimeout); 0 is 10 s.
	ConnectTimeout time.Duration
	// AliveInterval is ssh's ServerAliveInterval: a master that has no answer for three of
	// them closes, so a host cut off is noticed within 3×AliveInterval; 0 is 5 s.
	AliveInterval time.Duration
	// Persist is how long a master outlives its last client (ControlPersist), so that one
	// left by a killed process goes away by itself; 0 is 60 s.
	Persist time.Duration
	// MaxOutput bounds what is read of each output stream of one command run on a host (its
	// stdout, its stderr): past it the command is killed and its Run fails with
	// ErrOutputTooLarge; 0 is DefaultMaxOutput.
	MaxOutput int64
}

// DefaultMaxOutput is the bound on what is read of one stream of a host's command: a
// snapshot's two records are at most a few MB.
const DefaultMaxOutput = 16 << 20

func (o Options) maxOutput() int64 {
	if o.MaxOutput <= 0 {
		return DefaultMaxOutput
	}
	return o.MaxOutput
}

func (o Options) ssh() string {
	if o.SSH == "" {
		return "ssh"
	}
	return o.SSH
}

// OrDefault is d, or def when d is not above 0: how the layer's duration settings (and its
// users', executor.Remote's) take 0 for their default.
func OrDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Dialer opens Conns: one multiplexed OpenSSH connection (a ControlMaster) per host, their
// control sockets in a private directory of its own (0700, under the system's temp directory:
// a socket's path must fit in 108 bytes, which a state directory's need not).
type Dialer struct {
	opts Options
	dir  string

	mu    sync.Mutex
	conns []*Conn
}

// NewDialer makes the Dialer's private directory. Close removes it and closes its masters.
func NewDialer(o Options) (*Dialer, error) {
	dir, err := os.MkdirTemp("", "fleet-ssh-")
	if err != nil {
		return nil, fmt.Errorf("making the directory of ssh's control sockets: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Dialer{opts: o, dir: dir}, nil
}

// Close stops every master this Dialer opened (ssh -O exit, then its process killed: a master
// that hangs does not answer -O exit), ends every ssh process still running with one of its
// control sockets on its command line (a client, git's ssh, a master that could not open its
// socket), and removes its directory. No ssh process of the Dialer's outlives it.
func (d *Dialer) Close() error {
	d.mu.Lock()
	conns := d.conns
	d.conns = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Close()
		}()
	}
	wg.Wait()
	killNaming(d.dir + "/")
	return os.RemoveAll(d.dir)
}

// Conn is one host reached through its ControlMaster: every command, push and fetch goes
// through the one connection.
type Conn struct {
	Host    *Host
	opts    Options
	control string // the master's control socket
	log     string // the master's stderr (ssh -E), where its reason to fail is
	index   int

	// mu serializes connect and Close: the attempts on a host find its master gone together,
	// and one of them replaces it.
	mu  sync.Mutex
	pid int // the master's process (ssh -O check's), 0 when none is known

	// smu guards the host's server (Serve): whether the Conn serves, whether the host's
	// dispatch was found without the verb, and the server's session when one runs.
	smu      sync.Mutex
	serveOn  bool
	noServer bool
	sess     *session

	// pushes and fetches join the refs asked while one git runs into the next.
	pushes, fetches refBatch
}

// Dial opens the master connection to h and waits until it answers. An error wraps
// ErrUnreachable and says, in one line, what ssh said.
func (d *Dialer) Dial(ctx context.Context, h *Host) (*Conn, error) {
	d.mu.Lock()
	i := len(d.conns)
	c := &Conn{Host: h, opts: d.opts, index: i,
		control: filepath.Join(d.dir, "c"+strconv.Itoa(i)), log: filepath.Join(d.dir, "m"+strconv.Itoa(i)+".log")}
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Options is ssh's command line for this host without the destination and the command: what
// every ssh of ours says.
func (c *Conn) Options() []string {
	h := c.Host
	args := []string{
		"-o", "BatchMode=yes", // never a password or passphrase prompt: a fleet has no one to type it
		"-o", "ControlPath=" + c.control,
		"-o", fmt.Sprintf("ConnectTimeout=%d", int(OrDefault(c.opts.ConnectTimeout, 10*time.Second).Seconds()+0.5)),
		"-o", fmt.Sprintf("ServerAliveInterval=%d", int(OrDefault(c.opts.AliveInterval, 5*time.Second).Seconds()+0.5)),
		"-o", "ServerAliveCountMax=3",
	}
	if h.Port != 0 {
		args = append(args, "-p", strconv.Itoa(h.Port))
	}
	if h.Identity != "" {
		args = append(args, "-i", h.Identity, "-o", "IdentitiesOnly=yes")
	}
	if h.KnownHosts != "" {
		// The file given, and nothing else: a host whose key is not there is refused.
		args = append(args, "-o", "UserKnownHostsFile="+h.KnownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
			"-o", "StrictHostKeyChecking=yes")
	}
	return args
}

// ClientOptions are Options for a command through the master (ours, and git's through
// GIT_SSH_COMMAND). ControlMaster=no: a client only, never a second master. A client whose
// master is gone does not stop there: OpenSSH quietly connects on its own, without the
// master's timeouts, a connection per command. ProxyCommand=false makes that connection fail
// at once (ssh's 255), and never reach the host: a command goes through the master or not at
// all. (The options of the command line come before the user's config, so a ProxyJump there
// does not undo it; the master, which connects, does not have it.)
func (c *Conn) ClientOptions() []string {
	return append(c.Options(), "-o", "ControlMaster=no", "-o", "ProxyCommand=false")
}

// TerminalArgs is the command line of a person's own session on the host running command
// there in a terminal (ssh -t; swarm top's shell split): the host's options (Options) on a
// connection of its own, not through the master, since the session outlives the process whose
// Dialer ends its masters. command is one line for the host's shell: its words quoted (Quote).
func (c *Conn) TerminalArgs(command string) []string {
	args := []string{c.opts.ssh()}
	opts := c.Options()
	for i := 0; i < len(opts); i++ {
		if opts[i] == "-o" && i+1 < len(opts) && strings.HasPrefix(opts[i+1], "ControlPath=") {
			i++
			continue
		}
		args = append(args, opts[i])
	}
	return append(args, "-t", "--", c.Host.SSH, command)
}

// connect starts the master in the background (-f: ssh returns once it is authenticated,
// and its exit status says whether it was) and checks that it answers. A master already
// answering (another attempt on the host replaced it first) is kept; one that does not is
// stopped first, its process ended and its socket removed: a socket left behind makes the new
// master's bind fail ("already exists, disabling multiplexing"), and that master runs as a
// plain connection no command can use.
func (c *Conn) connect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid != 0 {
		if pid, err := c.checkPID(ctx); err == nil && pid == c.pid {
			return nil
		}
	}
	c.stopMaster()
	os.Remove(c.log)
	persist := int(OrDefault(c.opts.Persist, 60*time.Second).Seconds() + 0.5)
	args := append(c.Options(), "-o", "ControlMaster=yes", "-o", fmt.Sprintf("ControlPersist=%d", persist),
		"-E", c.log, "-f", "-N", "--", c.Host.SSH)
	cmd := exec.CommandContext(ctx, c.opts.ssh(), args...)
	// No pipes: the master keeps the descriptors it was given, and a pipe would hold Wait
	// until it exits.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Run(); err != nil {
		return c.unreachable(err)
	}
	pid, err := c.checkPID(ctx)
	if err != nil {
		// ssh -f returned, and the master does not answer: whatever it is, it goes now,
		// not at the end of the run.
		killNaming(c.controlArg()...)
		os.Remove(c.control)
		return c.unreachable(err)
	}
	c.pid = pid
	return nil
}

// controlArg is how the command line of each ssh process of this connection names its
// socket, whole (c1 is not c10's prefix): /proc's cmdline separates the words with NULs, and
// a master that titles itself says "ssh: SOCKET [mux]".
func (c *Conn) controlArg() []string {
	return []string{"ControlPath=" + c.control + "\x00", "ssh: " + c.control + " [mux]"}
}

// Reconnect opens the host's master again once it has closed (a command's ErrNoMaster: its
// ServerAlive checks gave up under load, or it was closed or killed), within ctx. Its error
// wraps ErrUnreachable.
func (c *Conn) Reconnect(ctx context.Context) error { return c.connect(ctx) }

// checkTimeout bounds ssh -O check and -O exit: a master that is stopped or hung accepts the
// connection to its socket and never answers.
const checkTimeout = 5 * time.Second

// check says whether the master answers ssh -O check.
func (c *Conn) check(ctx context.Context) error {
	_, err := c.checkPID(ctx)
	return err
}

// checkPID asks the master whether it runs (ssh -O check), and returns its process id, which
// it prints as "Master running (pid=N)".
func (c *Conn) checkPID(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.opts.ssh(), append(c.Options(), "-O", "check", "--", c.Host.SSH)...)
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %s", err, lastLine(out.Bytes()))
	}
	_, rest, _ := strings.Cut(out.String(), "(pid=")
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), ")")))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("ssh -O check printed no pid: %s", lastLine(out.Bytes()))
	}
	return pid, nil
}

// stopMaster ends the master, if any: asked with ssh -O exit (which closes its sessions on the
// host), its process killed when it did not go, its socket removed. Under mu.
func (c *Conn) stopMaster() {
	if _, err := os.Lstat(c.control); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		cmd := exec.CommandContext(ctx, c.opts.ssh(), append(c.Options(), "-O", "exit", "--", c.Host.SSH)...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
		cmd.WaitDelay = time.Second
		cmd.Run()
		cancel()
	}
	if c.pid != 0 {
		killIfNaming(c.pid, c.controlArg()...)
		c.pid = 0
	}
	// Our own directory's entry (0700): removing it follows no link.
	os.Remove(c.control)
}

// unreachable is the one-line error of a failed connection: ssh's own last words from its log.
func (c *Conn) unreachable(err error) error {
	msg := err.Error()
	if b, rerr := fsx.ReadTail(c.log, 4096); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
		msg = lastLine(b)
	}
	return fmt.Errorf("%w: host %s (%s): %s; check that 'ssh %s' works without a prompt", ErrUnreachable,
		c.Host.Name, c.Host.SSH, msg, strings.Join(c.userArgs(), " "))
}

// userArgs is the ssh command a user can try by hand for this host.
func (c *Conn) userArgs() []string {
	var a []string
	if c.Host.Port != 0 {
		a = append(a, "-p", strconv.Itoa(c.Host.Port))
	}
	if c.Host.Identity != "" {
		a = append(a, "-i", c.Host.Identity)
	}
	return append(a, c.Host.SSH, "true")
}

// MasterPID is the master's process id as ssh -O check gave it at the last connect (0: none).
func (c *Conn) MasterPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Close stops the master: ssh -O exit, then its process killed if it is still there.
func (c *Conn) Close() error {
	c.closeSession()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopMaster()
	return nil
}

// Cmd is one command run on the host.
type Cmd struct {
	Argv  []string  // quoted for the remote shell (Quote); never a prompt: that goes on Stdin
	Env   []string  // NAME=value, set with env(1) there; names as hosts.yaml's env allows
	Stdin io.Reader // nil: nothing
	// Stdout receives the command's output; nil keeps it in Result.Stdout.
	Stdout io.Writer
	// Stderr, if set, receives its diagnostics as well as Result.Stderr.
	Stderr io.Writer
	// Timeout bounds the command (0: ctx alone does).
	Timeout time.Duration
}

// Result is what a command left: its exit status (-1 when ssh itself failed, ssh's 255) and
// output.
type Result struct {
	Code   int
	Stdout []byte
	Stderr []byte
}

// ErrNoMaster is the error of a command whose master connection is gone (it closed after a
// host stopped answering): the command is not run, since ssh would open a connection of
// its own.
var ErrNoMaster = errors.New("the host's ssh connection is closed")

// watchScript runs a command on the host ("$@") and ends it (SIGTERM) when its connection
// does: when this side stops waiting for it (a timeout, the run's end) and kills its ssh.
// Without a terminal, sshd signals nothing to a session's processes when its channel closes,
// and a read that hung there would run on for ever; it closes the session's stdin, though.
// The command's stdin is /dev/null; the script's own is a pipe this side holds open until the
// command has ended (Run), read by a subshell of the script (a builtin read, no process
// more), which kills the command at its end of file. A command given a stdin (the prompt of a
// launch) is run as it is: its stdin is the prompt's.
const watchScript = `exec 3<&0 </dev/null
"$@" 3<&- &
c=$!
{ while read -r _; do :; done; kill -TERM "$c" 2>/dev/null; } <&3 3<&- &
w=$!
exec 3<&-
wait "$c"
s=$?
kill "$w" 2>/dev/null
exit "$s"`

// Run runs c on the host through the master. A non-zero exit of the command is in Result.Code
// with a nil error; an error means ssh could not run it (ssh's 255, a timeout, no master:
// ErrNoMaster) or the command printed more than the bound on what is read of it
// (ErrOutputTooLarge: it was killed, and Result holds what came up to the bound).
func (c *Conn) Run(ctx context.Context, rc Cmd) (*Result, error) {
	if _, err := os.Lstat(c.control); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoMaster, c.Host.Name)
	}
	if s := c.server(ctx); s != nil {
		if res, err := s.run(ctx, rc); !errors.Is(err, errNotSent) {
			return res, err
		}
	}
	if rc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rc.Timeout)
		defer cancel()
	}
	// kill ends the ssh client when an output stream passes the bound; the host's command
	// then writes into a closed channel, and dies of it.
	runCtx, kill := context.WithCancel(ctx)
	defer kill()
	argv := rc.Argv
	if len(rc.Env) > 0 {
		argv = append(append([]string{"env"}, rc.Env...), argv...)
	}
	stdin := rc.Stdin
	if stdin == nil {
		// Ended on the host with the connection (watchScript): its stdin is a pipe held
		// open until the command has ended here.
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", c.Host.Name, err)
		}
		defer w.Close()
		defer r.Close()
		stdin = r
		argv = append([]string{"sh", "-c", watchScript, "sh"}, argv...)
	}
	args := append(c.ClientOptions(), "-T", "--", c.Host.SSH, Quote(argv...))
	cmd := exec.CommandContext(runCtx, c.opts.ssh(), args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	var out, errOut io.Writer = &stdout, &stderr
	if rc.Stdout != nil {
		out = rc.Stdout
	}
	if rc.Stderr != nil {
		errOut = io.MultiWriter(&stderr, rc.Stderr)
	}
	bound := c.opts.maxOutput()
	boundedOut, boundedErr := newBoundedWriter(out, bound, kill), newBoundedWriter(errOut, bound, kill)
	cmd.Stdout, cmd.Stderr = boundedOut, boundedErr
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	res := &Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var ee *exec.ExitError
	switch {
	case boundedOut.passedBound() || boundedErr.passedBound():
		return res, fmt.Errorf("host %s: %s: %w (%s), and was stopped", c.Host.Name, Quote(rc.Argv...), ErrOutputTooLarge, fsx.HumanBytes(bound))
	case ctx.Err() != nil:
		return res, fmt.Errorf("host %s: %s: %w", c.Host.Name, Quote(rc.Argv...), ctx.Err())
	case errors.As(err, &ee) && ee.ExitCode() == 255:
		if cerr := c.check(ctx); cerr != nil {
			// The master is gone (it closed, or was killed and left its socket): the
			// client could not fall back to a connection of its own (ClientOptions).
			return res, fmt.Errorf("%w: %s", ErrNoMaster, c.Host.Name)
		}
		return res, fmt.Errorf("%w: host %s: %s", ErrUnreachable, c.Host.Name, lastLine(stderr.Bytes()))
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
		return res, nil
	case err != nil:
		return res, fmt.Errorf("host %s: running ssh: %w", c.Host.Name, err)
	}
	return res, nil
}

// Program is the path of our binary tool on the host: in Host.Bin, else found on its PATH.
func (c *Conn) Program(tool string) string {
	if c.Host.Bin == "" {
		return tool
	}
	return c.Host.Bin + "/" + tool
}

// Env is the environment our binaries get on the host: hosts.yaml's env and, with
// agents_config, CONFIG_FILE; sorted, so a command line reads the same each time.
func (c *Conn) Env() []string {
	var env []string
	for k, v := range c.Host.Env {
		env = append(env, k+"="+v)
	}
	if c.Host.AgentsConfig != "" {
		env = append(env, "CONFIG_FILE="+c.Host.AgentsConfig)
	}
	slices.Sort(env)
	return env
}

// CheckVersion checks that the host runs tool at the version this machine runs (want, as
// `tool version` prints it: "dispatch version X"). Its error wraps ErrVersion and says in one
// line how to install the binaries there.
func (c *Conn) CheckVersion(ctx context.Context, tool, want string) error {
	prog := c.Program(tool)
	res, err := c.Run(ctx, Cmd{Argv: []string{prog, "version"}, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	got := strings.TrimSpace(string(res.Stdout))
	install := fmt.Sprintf("install them there ('make install' in a checkout of %s, or copy bin/* to %s)", strings.TrimPrefix(want, tool+" version "), c.where())
	switch {
	case res.Code == 127 || res.Code == 126:
		return fmt.Errorf("%w: host %s has no %s (%s): %s", ErrVersion, c.Host.Name, tool, prog, install)
	case res.Code != 0:
		return fmt.Errorf("%w: host %s: '%s version' exited %d: %s; %s", ErrVersion, c.Host.Name, prog, res.Code, lastLine(res.Stderr), install)
	case got != want:
		return fmt.Errorf("%w: host %s runs %q, this machine %q: %s", ErrVersion, c.Host.Name, got, want, install)
	}
	return nil
}

func (c *Conn) where() string {
	if c.Host.Bin != "" {
		return c.Host.Name + ":" + c.Host.Bin + " (hosts.yaml's bin)"
	}
	return "a directory on " + c.Host.Name + "'s PATH"
}

// lastLine is the last non-empty line of ssh's or a command's output, for one-line errors,
// made Printable: it is the host's text.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := Printable(lines[i]); l != "" {
			return l
		}
	}
	return "no message"
}
