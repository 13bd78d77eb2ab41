// Package remote runs attempts on other machines over OpenSSH, for every command that runs
// agents: dispatch --host today, swarm run --hosts and ralph queue run --hosts next. Nothing
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
//	before, _ := c.Snapshot(ctx, bead, t)            // the host's last attempt of the bead
//	_, err = c.Start(ctx, dispatchArgs, prompt, out, errOut) // the host's dispatch, prompt on stdin
//	snap, err := c.Wait(ctx, bead, n, remote.Watch{OfflineAfter: ..., Heartbeat: beat})
//	err = remote.BringBack(ctx, localStore, snap)    // the records, checked, written here
//	ref, err := c.Fetch(ctx, localRepo, branch)      // refs/remotes/<host>/<branch>
//
// A scheduler's per-host executor is this sequence with a host picked by its free slots
// (Host.MaxAgents); Watch.Heartbeat is its agents' last_heartbeat, and an *OfflineError from
// Wait (errors.Is ErrUnreachable) is the host going offline: its task goes back to the queue.
//
// Every command line run there is argv made one line with Quote; prompts go on stdin. The
// records come back through the host's dispatch's hidden verb RecordsVerb, which reads them
// there as our binaries read state files (bounded, regular files, no link followed).
package remote
