package fsx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
)

// lockFile locks lockPath; what names the data it guards in an ErrLocked error.
//
// The wait is a blocking flock(2), not a poll: a hundred processes polling one lock every few
// milliseconds spend the time the holder needs on their own wake-ups, and the one that gets the
// lock is whichever polled last (100 concurrent swarm spawns did not all finish in 90 s). The
// kernel queues blocked waiters and hands the lock on as soon as it is released.
//
// A blocking flock cannot be interrupted by a context, so it runs in a goroutine that owns the
// descriptor. When ctx ends first, lockFile returns ErrLocked at once and leaves the descriptor
// to the goroutine, which closes it once its flock returns: a lock taken that late is released
// at once, and the descriptor is never closed under a flock still using its number (another
// open could reuse the number and be locked instead).
func lockFile(ctx context.Context, lockPath, what string) (unlock func() error, err error) {
	// Never through a link planted at lockPath (it would create or lock a file elsewhere), and
	// never waiting on a FIFO planted there (O_NONBLOCK: its open would wait for a writer).
	fd, err := syscall.Open(lockPath, syscall.O_CREAT|syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", lockPath, err)
	}
	// Idempotent: callers unlock early and again in a defer, and a second close could close
	// a descriptor that reused the number.
	var once sync.Once
	release := func() (err error) {
		once.Do(func() {
			syscall.Flock(fd, syscall.LOCK_UN)
			err = syscall.Close(fd)
		})
		return err
	}
	// Most locks are free: take them without a goroutine.
	switch err := flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return release, nil
	case !errors.Is(err, syscall.EWOULDBLOCK):
		syscall.Close(fd)
		return nil, fmt.Errorf("locking %s: %w", lockPath, err)
	}
	if ctx.Err() != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s: %w", what, ErrLocked)
	}
	done := make(chan error, 1)
	go func() { done <- flock(fd, syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("locking %s: %w", lockPath, err)
		}
		return release, nil
	case <-ctx.Done():
		select {
		case err := <-done: // taken just as ctx ended: the caller still has it
			if err == nil {
				return release, nil
			}
			syscall.Close(fd)
		default:
			go func() {
				<-done
				syscall.Close(fd)
			}()
		}
		return nil, fmt.Errorf("%s: %w", what, ErrLocked)
	}
}

// flock is flock(2), retried when a signal interrupts it.
func flock(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
