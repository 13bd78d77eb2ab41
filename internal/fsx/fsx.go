// Package fsx holds the two file primitives every state file of the toolkit is written with: a
// lock on a sidecar file, and an atomic replace (write a temp file, fsync, rename, fsync the
// directory). Readers take no lock: a rename is atomic, so they see the old file or the new one,
// never a torn one.
package fsx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrLocked is returned by Lock when the context ends before the lock could be taken.
var ErrLocked = errors.New("locked by another process")

// LockPath returns the sidecar lock file that guards path. The data file itself is never
// locked: the rename in WriteFileAtomic replaces its inode, so a lock on it would guard nothing.
func LockPath(path string) string { return path + ".lock" }

// Lock takes the exclusive sidecar lock of path (LockPath(path)), waiting until ctx ends. The
// returned function releases it.
func Lock(ctx context.Context, path string) (unlock func() error, err error) {
	return lockFile(ctx, LockPath(path), path)
}

// LockFile takes the exclusive lock on the file lockPath itself, creating it (0600) if needed,
// waiting until ctx ends. The returned function releases it. The lock is an flock(2), so it
// dies with the process that holds it. It is for locks that do not sit beside their data file
// (statedir keeps the records' locks under locks/, so that runs/ holds records only).
func LockFile(ctx context.Context, lockPath string) (unlock func() error, err error) {
	return lockFile(ctx, lockPath, lockPath)
}

// WriteFileAtomic replaces path with data: it writes a temp file in the same directory, fsyncs
// it, renames it over path and fsyncs the directory, so after a crash path holds either the old
// content or the new, and a full disk leaves the old file untouched. perm applies to a new file;
// an existing file keeps its mode. A symbolic link at path is replaced, never written through.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	syncDir, err := WriteFileAtomicLazy(path, data, perm)
	if err == nil {
		syncDir()
	}
	return err
}

// WriteFileAtomicLazy is WriteFileAtomic without the directory's fsync, which it returns as
// syncDir for the caller to run later (on a goroutine: the task queue's claim does, a
// millisecond off each claim). The content is fsynced before the rename as always, so a crash
// leaves the old content or the new, never a torn file; until syncDir has run, a power cut may
// undo the rename (the old content is back).
func WriteFileAtomicLazy(path string, data []byte, perm os.FileMode) (syncDir func(), err error) {
	// Lstat: a symbolic link's target must not lend the new file its mode.
	if fi, statErr := os.Lstat(path); statErr == nil && fi.Mode().IsRegular() {
		perm = fi.Mode().Perm()
	}
	if err := writeFileAtomic(path, data, perm); err != nil {
		return nil, err
	}
	return func() { syncDirOf(path) }, nil
}

// syncDirOf fsyncs path's directory: a rename is only durable once the directory entry is on
// disk.
func syncDirOf(path string) {
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
}

// writeFileAtomic is WriteFileAtomic giving the file exactly perm, without the directory's
// fsync (the callers' to do).
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteLocked takes path's sidecar lock (waiting until ctx ends), then writes data atomically.
func WriteLocked(ctx context.Context, path string, data []byte, perm os.FileMode) error {
	return WriteLockedBy(ctx, LockPath(path), path, data, perm)
}

// WriteLockedBy takes the lock lockPath (waiting until ctx ends), then writes data atomically
// to path.
func WriteLockedBy(ctx context.Context, lockPath, path string, data []byte, perm os.FileMode) error {
	unlock, err := lockFile(ctx, lockPath, path)
	if err != nil {
		return err
	}
	defer unlock()
	return WriteFileAtomic(path, data, perm)
}

// WriteLockedByLazy is WriteLockedBy without the directory's fsync, which it returns as syncDir
// for the caller to run later (WriteFileAtomicLazy).
func WriteLockedByLazy(ctx context.Context, lockPath, path string, data []byte, perm os.FileMode) (syncDir func(), err error) {
	unlock, err := lockFile(ctx, lockPath, path)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return WriteFileAtomicLazy(path, data, perm)
}
