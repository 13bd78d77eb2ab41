package fsx

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is returned by ReadFileLimit for files over the limit.
var ErrTooLarge = errors.New("file too large")

// ReadFileLimit reads a regular file of at most limit bytes. Anything else (a directory, a
// FIFO that would block, a file over the limit) is an error that says what it is, so one odd
// entry in a state directory never stalls or exhausts a scan of thousands.
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%w: %s, over the %s limit", ErrTooLarge, HumanBytes(fi.Size()), HumanBytes(limit))
	}
	// The file may grow between Stat and Read; never read past the limit.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: over the %s limit", ErrTooLarge, HumanBytes(limit))
	}
	return b, nil
}

// HumanBytes renders n as "512 B", "1.5 KiB", "50.0 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
