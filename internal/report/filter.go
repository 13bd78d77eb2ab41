package report

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/fleet/internal/record"
)

// Filter selects the beads a report counts. The zero Filter keeps everything.
type Filter struct {
	Since, Until string // as given, for the report's header and its filter object

	since, until       time.Time // until is exclusive
	hasSince, hasUntil bool

	Agents, Models, Templates []string // keep beads with one of these (none: any)
}

// NewFilter parses the --since and --until dates ("" for none). A date (YYYY-MM-DD) is midnight
// UTC; --until DATE keeps that whole day.
func NewFilter(since, until string, agents, models, templates []string) (Filter, error) {
	f := Filter{Since: since, Until: until, Agents: agents, Models: models, Templates: templates}
	var err error
	if since != "" {
		if f.since, _, err = ParseDate(since); err != nil {
			return Filter{}, fmt.Errorf("--since: %w", err)
		}
		f.hasSince = true
	}
	if until != "" {
		t, dateOnly, err := ParseDate(until)
		if err != nil {
			return Filter{}, fmt.Errorf("--until: %w", err)
		}
		if dateOnly {
			f.until = t.AddDate(0, 0, 1)
		} else {
			f.until = t.Add(time.Nanosecond) // an exact time is kept
		}
		f.hasUntil = true
	}
	if f.hasSince && f.hasUntil && !f.since.Before(f.until) {
		return Filter{}, fmt.Errorf("--since %s is not before --until %s", since, until)
	}
	return f, nil
}

// ParseDate reads a --since or --until value: YYYY-MM-DD (midnight UTC, dateOnly), or a time as
// records write them (RFC 3339 with or without fractions and offset).
func ParseDate(s string) (t time.Time, dateOnly bool, err error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true, nil
	}
	if t, ok := record.ParseTime(s); ok {
		return t, false, nil
	}
	return time.Time{}, false, fmt.Errorf("%q is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-02-11T09:00:00Z", s)
}

// Match reports whether the report counts b.
//
// --since keeps a bead that started at or after the date, or whose result finished at or after
// it (the original's rule, which compared the strings: here they are compared as times, so
// fractions and offsets are read right). --until keeps a bead placed (by its start, else its
// end) before the bound. A bead with no readable time passes neither.
func (f Filter) Match(b *Bead) bool {
	if f.hasSince {
		started := b.HasStart && !b.Start.Before(f.since)
		finished := b.FinishedAt != "" && b.HasEnd && !b.Finish.Before(f.since)
		if !started && !finished {
			return false
		}
	}
	if f.hasUntil {
		t, ok := b.When()
		if !ok || !t.Before(f.until) {
			return false
		}
	}
	return in(f.Agents, b.Agent) && in(f.Models, b.Model) && in(f.Templates, b.Template)
}

func in(list []string, s string) bool { return len(list) == 0 || slices.Contains(list, s) }
