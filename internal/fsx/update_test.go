package fsx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// increment adds one to the decimal counter a file holds (none: 0).
func increment(old []byte) ([]byte, error) {
	n := 0
	if s := strings.TrimSpace(string(old)); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			return nil, err
		}
	}
	return []byte(strconv.Itoa(n+1) + "\n"), nil
}

func readCounter(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("counter file holds %q", b)
	}
	return n
}

func TestUpdateConcurrentGoroutinesLoseNothing(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock")
	const workers, each = 16, 25
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				if err := Update(context.Background(), path, lock, increment); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := readCounter(t, path); got != workers*each {
		t.Errorf("counter = %d after %d updates, want %d (lost updates)", got, workers*each, workers*each)
	}
}

// TestUpdateHelperProcess is not a test: TestUpdateConcurrentProcessesLoseNothing runs the test
// binary as several processes that each increment the counter through this function.
func TestUpdateHelperProcess(t *testing.T) {
	path := os.Getenv("FSX_UPDATE_PATH")
	if path == "" {
		t.Skip("helper process only")
	}
	n, _ := strconv.Atoi(os.Getenv("FSX_UPDATE_COUNT"))
	for i := 0; i < n; i++ {
		if err := Update(context.Background(), path, os.Getenv("FSX_UPDATE_LOCK"), increment); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateConcurrentProcessesLoseNothing(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock")
	const procs, each = 6, 40
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FSX_UPDATE_PATH="+path, "FSX_UPDATE_LOCK="+lock,
			"FSX_UPDATE_COUNT="+strconv.Itoa(each))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("helper %d: %s", i, out.String())
			}
		})
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v", i, err)
		}
	}
	if got := readCounter(t, path); got != procs*each {
		t.Errorf("counter = %d after %d updates in %d processes, want %d (lost updates)", got, procs*each, procs, procs*each)
	}
}

func TestUpdateMissingEmptyUnchangedAndErrors(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "q.json"), filepath.Join(dir, "q.lock")
	ctx := context.Background()

	var seen []byte
	err := Update(ctx, path, lock, func(old []byte) ([]byte, error) { seen = old; return []byte("x"), nil })
	if err != nil || seen != nil {
		t.Fatalf("Update(missing file) gave old = %q, err %v; want nil, nil", seen, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("new state file mode = %v, want 0600", fi.Mode().Perm())
	}

	os.WriteFile(path, nil, 0o644)
	err = Update(ctx, path, lock, func(old []byte) ([]byte, error) { seen = old; return []byte("y"), nil })
	if err != nil || seen == nil || len(seen) != 0 {
		t.Errorf("Update(empty file) gave old = %#v, err %v; want empty, not nil", seen, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("rewritten state file mode = %v, want 0600 (state files hold environments)", fi.Mode().Perm())
	}

	if err := Update(ctx, path, lock, func([]byte) ([]byte, error) { return nil, ErrUnchanged }); err != nil {
		t.Errorf("Update(ErrUnchanged) = %v, want nil", err)
	}
	boom := errors.New("boom")
	if err := Update(ctx, path, lock, func([]byte) ([]byte, error) { return []byte("z"), boom }); !errors.Is(err, boom) {
		t.Errorf("Update(fn fails) = %v, want fn's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "y" {
		t.Errorf("after ErrUnchanged and a failing fn the file holds %q, want %q", b, "y")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the file and its lock (no temp left behind)", len(entries))
	}

	os.WriteFile(path, make([]byte, 0), 0o600)
	big := filepath.Join(dir, "big.json")
	f, _ := os.Create(big)
	f.Truncate(MaxStateFile + 1)
	f.Close()
	if err := Update(ctx, big, lock, increment); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Update(file over MaxStateFile) = %v, want ErrTooLarge", err)
	}
	if err := Update(ctx, dir, lock, increment); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Update(a directory) = %v, want a refusal", err)
	}
}

func TestUpdateNeverFollowsASymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.json")
	os.WriteFile(target, []byte("41\n"), 0o644)
	path, lock := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock")
	if err := os.Symlink(target, path); err != nil {
		t.Skip(err)
	}
	err := Update(context.Background(), path, lock, increment)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Update(symlink) = %v, want a refusal naming the symbolic link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "41\n" {
		t.Errorf("the symlink's target now holds %q, want it untouched", b)
	}
	// A dangling link is refused too: following it would create a file where it points.
	os.Remove(target)
	if err := Update(context.Background(), path, lock, increment); err == nil {
		t.Error("Update(dangling symlink) = nil, want a refusal")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Update created the dangling link's target (%v)", err)
	}
}

func TestUpdateWaitsForTheLock(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock")
	unlock, err := LockFile(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Update(ctx, path, lock, increment); !errors.Is(err, ErrLocked) {
		t.Errorf("Update(lock held, context over) = %v, want ErrLocked", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("Update wrote without holding the lock")
	}
}

func TestUpdateJSON(t *testing.T) {
	dir := t.TempDir()
	path, lock := filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock")
	type state struct {
		Workers []string `json:"workers"`
	}
	add := func(name string) func(*state) error {
		return func(s *state) error { s.Workers = append(s.Workers, name); return nil }
	}
	ctx := context.Background()
	if err := UpdateJSON(ctx, path, lock, add("a")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("\xef\xbb\xbf{\"workers\": [\"a\"], \"x\": 1}"), 0o600)
	if err := UpdateJSON(ctx, path, lock, add("b")); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"workers\": [\n    \"a\",\n    \"b\"\n  ]\n}\n"
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("UpdateJSON wrote %q, want %q", b, want)
	}
	os.WriteFile(path, []byte("{corrupt"), 0o600)
	if err := UpdateJSON(ctx, path, lock, add("c")); err == nil {
		t.Error("UpdateJSON(corrupt file) = nil, want an error")
	}
	if b, _ := os.ReadFile(path); string(b) != "{corrupt" {
		t.Errorf("UpdateJSON replaced a corrupt file with %q; it must leave it for the user", b)
	}
}

func TestLockFileLocksThatFile(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "locks", "x.lock")
	os.Mkdir(filepath.Dir(lock), 0o700)
	unlock, err := LockFile(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := filepath.Join(dir, "rec.json")
	if err := WriteLockedBy(ctx, lock, data, []byte("x"), 0o600); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), data) {
		t.Errorf("WriteLockedBy(lock held) = %v, want ErrLocked naming %s", err, data)
	}
	unlock()
	if err := WriteLockedBy(context.Background(), lock, data, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(LockPath(data)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteLockedBy left a sidecar %s beside the data file", LockPath(data))
	}
}

func TestWriteFileAtomicReplacesASymlinkNotItsTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("theirs"), 0o644)
	path := filepath.Join(dir, "rec.json")
	if err := os.Symlink(target, path); err != nil {
		t.Skip(err)
	}
	if err := WriteFileAtomic(path, []byte("ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs" {
		t.Errorf("the link's target holds %q, want it untouched", b)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("path after the write: %v, %v; want a regular file, 0600 (not the target's mode)", fi.Mode(), err)
	}
}
