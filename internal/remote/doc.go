// Package remote runs attempts on other machines over OpenSSH, for every command that runs
// agents: dispatch --host, swarm run --hosts and ralph queue run --hosts (the last two through
// executor.Remote, dialed by executor.DialHosts). Nothing
// of ours listens on a port; a host runs our binaries, tmux and git, and is reached with the
// user's ssh (docs/remote.md is the manual).
//
// The pieces, in the order a runner uses them:
//
//	hosts, err := remote.ParseHosts(file, home)     // hosts.yaml, errors with file:line
//	d, err := remote.NewDialer(remote.Options{...})  // a private 0700 dir for control sockets
//	defer d.Close()
//	c, err := d.Dial(ctx, host)                      // one ControlMaster per host (ErrUnreachable)
//	err = c.CheckVersion(ctx, "dispatch", "dispatch version "+cli.Version()) // ErrVersion
//	err = c.Push(ctx, localRepo, base, deps...)      // git push through the master
//	run, err := c.RunAttempt(ctx, remote.Attempt{Args: remote.DispatchArgs{...}, Prompt: p,
//		Watch: remote.Watch{OfflineAfter: ..., Heartbeat: beat}}) // Snapshot, Start, Wait
//	err = remote.BringBack(ctx, localStore, run.Snapshot) // the records, checked, written here
//	ref, err := c.Fetch(ctx, localRepo, branch)      // refs/remotes/<host>/<branch>
//
// dispatch --host is this sequence for one host; swarm run's per-host executor
// (executor.Remote) is it with a host picked by its free slots (Host.MaxAgents): Watch.Heartbeat
// is its agents' last_heartbeat, and an *OfflineError (errors.Is ErrUnreachable) is the host
// going offline: its task goes back to the queue, held until the attempt's deadline there
// (AttemptRun.Sent plus its --timeout and kill grace) has passed.
//
// Every command line run there is argv made one line with Quote; prompts go on stdin. The
// records come back through the host's dispatch's hidden verb RecordsVerb, which reads them
// there as our binaries read state files (bounded, regular files, no link followed).
package remote
