package testenv

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestCombinedOutputEndsACommandThatHangs(t *testing.T) {
	start := time.Now()
	out, err := CombinedOutput(exec.Command("sh", "-c", "echo started; exec sleep 1000"), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "sh -c echo started; exec sleep 1000: did not end within 300ms (killed)") {
		t.Errorf("CombinedOutput of a command that hangs: %v", err)
	}
	if string(out) != "started\n" {
		t.Errorf("its output: %q", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("it took %v", d)
	}
	out, err = CombinedOutput(exec.Command("sh", "-c", "echo out; echo err >&2"), time.Minute)
	if err != nil || string(out) != "out\nerr\n" {
		t.Errorf("CombinedOutput of a command that ends = %q, %v", out, err)
	}
}
