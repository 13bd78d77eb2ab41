package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/fleet/internal/record"
	"github.com/agentfleet/fleet/internal/supervise"
)

// smallDisk mounts a tmpfs of sizeMB and unmounts it at the end of the test; it skips the test
// where mounting is not allowed (not root, no CAP_SYS_ADMIN).
func smallDisk(t *testing.T, sizeMB int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", sizeMB), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v: %s", err, strings.TrimSpace(string(out)))
	}
	// Cleanups run last registered first: this one after the fleet's (which stops the
	// supervisors, so nothing holds the mount) and before the removal of dir.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s; detaching it", dir, err, out)
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// finalRecords waits for bead's outcome and checks that both its records are valid and agree.
func finalRecords(t *testing.T, f *fleet, bead string) (*record.Run, *record.Result) {
	t.Helper()
	f.waitFinal(bead, 60*time.Second)
	if l := leftovers(f.state, 10*time.Second); len(l) > 0 {
		t.Errorf("state/supervisors still holds %v", l)
	}
	runs, results := checkRecords(t, f.state)
	run, res := runs[bead], results[bead]
	if run == nil || res == nil {
		t.Fatalf("%s: a record is missing or invalid (run %v, result %v)", bead, run != nil, res != nil)
	}
	if run.Status != res.Status || run.Attempt != res.Attempt {
		t.Errorf("%s: the records disagree: run %s attempt %d, result %s attempt %d", bead, run.Status, run.Attempt, res.Status, res.Attempt)
	}
	return run, res
}

// TestDiskFull: an agent that fills the disk its repository and the state directory share is
// stopped when the free space falls under DISPATCH_MIN_FREE_MB, and the records say so.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 24)
	f := newFleet(t, disk, "")
	env := []string{"DISPATCH_MIN_FREE_MB=8"} // starting needs 16 MB free; 20 MB written leaves under 8
	code, stdout, stderr := f.dispatch(env, "bd-fill", f.repo, "fake", "FILL=20 HANG")
	if code != 0 {
		t.Fatalf("dispatch: exit %d\n%s%s", code, stdout, stderr)
	}
	run, res := finalRecords(t, f, "bd-fill")
	if res.Status != record.StatusFailed || res.Reason != supervise.ReasonDiskExhausted {
		t.Errorf("result: %s (%s), want failed (%s)", res.Status, res.Reason, supervise.ReasonDiskExhausted)
	}
	if run.FailureReason == nil || *run.FailureReason != supervise.ReasonDiskExhausted {
		t.Errorf("run failure_reason = %v, want %s", run.FailureReason, supervise.ReasonDiskExhausted)
	}
	if run.OutputSummary == nil || !strings.Contains(*run.OutputSummary, "agent: filled") {
		t.Errorf("output summary %v does not show the agent filling the disk", run.OutputSummary)
	}
	if _, err := os.Stat(filepath.Join(f.repo, "fill.bin")); err != nil {
		t.Errorf("the agent's fill.bin: %v", err)
	}

	// A dispatch on the disk that is still nearly full is refused before anything starts.
	code, _, stderr = f.dispatch(env, "bd-next", f.repo, "fake", "SAY=x")
	if code != 1 || !strings.Contains(stderr, "dispatch needs 16 MB to start an agent") {
		t.Errorf("dispatch on a full disk: exit %d, stderr %q; want 1 and the free space asked for", code, stderr)
	}
	if _, err := os.Stat(f.store().RunPath("bd-next")); err == nil {
		t.Errorf("a refused dispatch wrote a run record")
	}
}

// TestStateDiskFullAtTheEnd: the state directory's disk fills up to the last byte while the
// agent runs; the supervisor still writes its final records, from the space it held in
// reserve.
func TestStateDiskFullAtTheEnd(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 8)
	f := newFleet(t, disk, t.TempDir()) // the repository elsewhere: only the state disk fills
	code, stdout, stderr := f.dispatch(nil, "bd-full", f.repo, "fake", "SAY=working HANG")
	if code != 0 {
		t.Fatalf("dispatch: exit %d\n%s%s", code, stdout, stderr)
	}
	f.waitAgent("bd-full", 30*time.Second)
	reserve := f.layout().ReservePath("bd-full")
	if fi, err := os.Stat(reserve); err != nil || fi.Size() == 0 {
		t.Fatalf("the supervisor holds no reserve: %v", err)
	}

	filler := filepath.Join(disk, "filler")
	written := fill(t, filler)
	free, err := supervise.FreeMB(disk)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	syscall.Statfs(disk, &st)
	t.Logf("filled the state disk with %d KB; %d KB left", written>>10, int64(st.Bavail)*st.Bsize>>10)
	if free != 0 {
		t.Fatalf("%d MB still free after filling the disk", free)
	}

	run, res := finalRecords(t, f, "bd-full")
	if res.Status != record.StatusFailed || res.Reason != supervise.ReasonDiskExhausted {
		t.Errorf("result: %s (%s), want failed (%s)", res.Status, res.Reason, supervise.ReasonDiskExhausted)
	}
	if run.OutputSummary == nil || !strings.Contains(*run.OutputSummary, "agent says: working") {
		t.Errorf("output summary %v lacks the agent's output", run.OutputSummary)
	}
	if fi, err := os.Stat(filler); err != nil || fi.Size() != written {
		t.Errorf("the filler changed under the test: %v", err)
	}
	if _, err := os.Stat(reserve); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve is still there: %v", err)
	}
}

// fill writes zeros into path until the disk is full and returns how much it wrote.
func fill(t *testing.T, path string) int64 {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	chunk := make([]byte, 64<<10)
	var n int64
	for {
		k, err := fh.Write(chunk)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The last short writes: the disk is full to the page.
	for _, size := range []int{4096, 512, 1} {
		for {
			k, err := fh.Write(chunk[:size])
			n += int64(k)
			if err != nil {
				break
			}
		}
	}
	return n
}
