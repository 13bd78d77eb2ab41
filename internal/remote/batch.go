package remote

import (
	"context"
	"sync"
)

// refBatch joins the refspecs of the pushes (or fetches) asked of one host while one of them
// runs into one git for all of them, as a database joins the commits that wait for the disk
// (group commit): a push that finds none running starts at once, and one that finds one
// running waits for it and goes with the next, with every other that came meanwhile. Several
// slots of a host whose tasks end together cost one git and one ssh session, not one each.
type refBatch struct {
	mu      sync.Mutex
	running bool
	waiting []*refReq
}

type refReq struct {
	repo  string
	specs []string
	done  chan error
}

// do runs specs in repo with run, joined with the requests for the same repository that wait.
// A joined run that fails is run again one request at a time, so that one ref refused (a
// branch checked out on the host, one that moved on there) fails its own request only.
func (b *refBatch) do(ctx context.Context, repo string, specs []string, run func(ctx context.Context, repo string, specs []string) error) error {
	req := &refReq{repo: repo, specs: specs, done: make(chan error, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, req)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead {
		b.lead(ctx, run)
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lead runs the waiting requests of one repository together, then hands the lead on to a
// goroutine while others wait (its caller's own request is done by then).
func (b *refBatch) lead(ctx context.Context, run func(ctx context.Context, repo string, specs []string) error) {
	// The batch is others' work too: the leader's cancellation does not cut it short (git's
	// own timeout bounds it).
	ctx = context.WithoutCancel(ctx)
	b.mu.Lock()
	repo := b.waiting[0].repo
	var batch, rest []*refReq
	for _, r := range b.waiting {
		if r.repo == repo {
			batch = append(batch, r)
		} else {
			rest = append(rest, r)
		}
	}
	b.waiting = rest
	b.mu.Unlock()

	var all []string
	for _, r := range batch {
		all = append(all, r.specs...)
	}
	err := run(ctx, repo, all)
	for _, r := range batch {
		if err != nil && len(batch) > 1 {
			r.done <- run(ctx, repo, r.specs)
			continue
		}
		r.done <- err
	}

	b.mu.Lock()
	if len(b.waiting) == 0 {
		b.running = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	go b.lead(ctx, run)
}
