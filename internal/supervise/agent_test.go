package supervise

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSplitLines(t *testing.T) {
	long := strings.Repeat("a", 5000)
	tests := []struct {
		name   string
		text   string
		piece  int
		crEnds bool
		eof    byte
		want   string
		err    bool
	}{
		{"short line as is", "hello\n", 4, false, 4, "hell\x04o\n", false},
		{"newline restarts the count", "abc\nabc", 3, false, 4, "abc\nabc", false},
		{"carriage return ends a line with ICRNL", "abc\rabcd", 3, true, 4, "abc\rabc\x04d", false},
		{"carriage return is a character without", "ab\rab", 3, false, 4, "ab\r\x04ab", false},
		{"a UTF-8 character is not cut", "aé", 2, false, 4, "a\x04é", false},
		{"no EOF character, line fits", "abcd", 3, false, 0, "abcd", false},
		{"no EOF character, line too long", long, 3072, false, 0, "", true},
	}
	for _, tt := range tests {
		got, err := splitLines(tt.text, tt.piece, tt.crEnds, tt.eof)
		if (err != nil) != tt.err || (err == nil && string(got) != tt.want) {
			t.Errorf("%s: splitLines(%q, %d, %v, %d) = %q, %v, want %q (error %v)", tt.name, tt.text, tt.piece, tt.crEnds, tt.eof, got, err, tt.want, tt.err)
		}
	}
}

// TestOpenPtyGivesItsOwnPeer: the terminal's slave side is its master's own peer: what is
// written on one is read on the other, and it is the terminal the master names. (CI's machine
// has two devpts stacked on /dev/pts, where opening /dev/pts/N by path gave another instance's
// terminal N, or none; the peer is taken from the master since.)
func TestOpenPtyGivesItsOwnPeer(t *testing.T) {
	for i := 0; i < 20; i++ {
		master, tty, err := openPty()
		if err != nil {
			t.Fatal(err)
		}
		n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
		if err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(tty.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if unix.Minor(st.Rdev) != n || tty.Name() != fmt.Sprintf("/dev/pts/%d", n) {
			t.Fatalf("the slave is %s, minor %d; the master's is %d", tty.Name(), unix.Minor(st.Rdev), n)
		}
		rawOutput(tty)
		if _, err := tty.Write([]byte("peer\n")); err != nil {
			t.Fatal(err)
		}
		master.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 16)
		k, err := master.Read(buf)
		if err != nil || !strings.HasPrefix(string(buf[:k]), "peer") {
			t.Fatalf("the master read %q, %v; want what the slave wrote", buf[:k], err)
		}
		master.Close()
		tty.Close()
	}
}
