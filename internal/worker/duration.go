package worker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as the Python swarm's parse_duration does: trimmed and
// lower-cased; all digits are seconds; else an optional <int>h, then <int>m, then <int>s, in
// that order ("4h", "30m", "90s", "1h30m", "2h30m15s"). Anything left over, and a total that is
// not positive, is an error. The integers are read as Python's int() reads them (surrounding
// spaces, a sign, '_' between digits). It returns seconds: Python's int has no bound, and
// neither has this (up to int64), where a time.Duration ends at 292 years.
func ParseDuration(s string) (seconds int64, err error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return 0, fmt.Errorf("empty duration string")
	}
	invalid := fmt.Errorf("invalid duration: '%s'", s)
	if allDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return 0, ErrDurationRange
		}
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("duration must be positive")
		}
		return n, nil
	}
	total, rest := int64(0), s
	for _, u := range []struct {
		unit string
		mult int64
	}{{"h", 3600}, {"m", 60}, {"s", 1}} {
		before, after, ok := strings.Cut(rest, u.unit)
		if !ok {
			continue
		}
		if before != "" {
			n, ok := pyInt(before)
			if !ok {
				return 0, invalid
			}
			// Python's int has no bound; int64 wraps, into a negative or a wrong total.
			if n > (math.MaxInt64-max(total, 0))/u.mult || n < (math.MinInt64-min(total, 0))/u.mult {
				return 0, ErrDurationRange
			}
			total += n * u.mult
		}
		rest = after
	}
	if rest != "" && !isSpace(rest) {
		return 0, invalid
	}
	if total <= 0 {
		return 0, fmt.Errorf("duration must be positive")
	}
	return total, nil
}

// ErrDurationRange is a duration longer than a time.Duration holds (about 292 years): read
// into one, it would wrap into a negative or a wrong one.
var ErrDurationRange = fmt.Errorf("out of range: at most %dh", MaxDuration/time.Hour)

// MaxDuration is the longest duration Duration reads, in whole seconds.
const MaxDuration = time.Duration(math.MaxInt64) / time.Second * time.Second

// Duration is ParseDuration as a time.Duration; one longer than MaxDuration is ErrDurationRange.
func Duration(s string) (time.Duration, error) {
	secs, err := ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if secs > int64(MaxDuration/time.Second) {
		return 0, ErrDurationRange
	}
	return time.Duration(secs) * time.Second, nil
}

// DurationNote is what to add to a message that refuses s for err: ErrDurationRange's words,
// in parentheses, or "" for any other error (the Python swarm's message says it all).
func DurationNote(err error) string {
	if errors.Is(err, ErrDurationRange) {
		return " (" + err.Error() + ")"
	}
	return ""
}

func isSpace(s string) bool { return strings.TrimSpace(s) == "" }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// pyInt reads s as Python's int(s) reads an ASCII string: optional surrounding whitespace, an
// optional sign, digits with single underscores between them.
func pyInt(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	s = strings.ReplaceAll(s, "_", "")
	if !allDigits(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// FormatDuration prints a duration as the Python swarm's format_duration does: under a minute
// "Ns", under an hour "Mm Ss", else "Hh Mm" (whole units, truncated).
func FormatDuration(d time.Duration) string {
	secs := d.Seconds()
	switch {
	case secs < 60:
		return fmt.Sprintf("%ds", int64(secs))
	case secs < 3600:
		s := int64(secs)
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	}
	s := int64(secs)
	return fmt.Sprintf("%dh %dm", s/3600, (s%3600)/60)
}

// Age prints how long ago t was as the Python swarm's relative_time does for ls and status:
// whole seconds, truncated toward zero, as "Ns", "Nm", "Nh" or "Nd".
func Age(t, now time.Time) string {
	s := int64(now.Sub(t) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 86400:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}
