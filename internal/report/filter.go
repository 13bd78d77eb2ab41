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

// NewFilter parses the --since and --until values ("" for none) with ParsePeriod: --since keeps
// beads from the start of its period, --until up to the end of its (--until 2026-02 keeps all of
// February; an exact time is kept).
func NewFilter(since, until string, agents, models, templates []string) (Filter, error) {
	f := Filter{Since: since, Until: until, Agents: agents, Models: models, Templates: templates}
	if since != "" {
		start, _, err := ParsePeriod(since)
		if err != nil {
			return Filter{}, fmt.Errorf("--since: %w", err)
		}
		f.since, f.hasSince = start, true
	}
	if until != "" {
		_, end, err := ParsePeriod(until)
		if err != nil {
			return Filter{}, fmt.Errorf("--until: %w", err)
		}
		f.until, f.hasUntil = end, true
	}
	if f.hasSince && f.hasUntil && !f.since.Before(f.until) {
		return Filter{}, fmt.Errorf("--since %s is not before --until %s", since, until)
	}
	return f, nil
}

// periodLayouts are the shortened timestamps --since and --until take, with the length of the
// period each names. analyze-runs.sh compared --since with started_at as strings, so users
// passed whatever prefix read right to them ("2026-02", "2026-02-10 12:00", "20260210"); each is
// read here as the period it names. A time without a zone is UTC, as records' are.
var periodLayouts = []struct {
	layout string
	years  int
	months int
	days   int
	dur    time.Duration
}{
	{"2006", 1, 0, 0, 0},
	{"2006-01", 0, 1, 0, 0},
	{"200601", 0, 1, 0, 0},
	{time.DateOnly, 0, 0, 1, 0},
	{"20060102", 0, 0, 1, 0},
	{"2006-01-02T15", 0, 0, 0, time.Hour},
	{"2006-01-02 15", 0, 0, 0, time.Hour},
	{"2006-01-02T15:04", 0, 0, 0, time.Minute},
	{"2006-01-02 15:04", 0, 0, 0, time.Minute},
	{"2006-01-02T15:04Z07:00", 0, 0, 0, time.Minute},
	{"2006-01-02 15:04Z07:00", 0, 0, 0, time.Minute},
	{"20060102T150405Z07:00", 0, 0, 0, time.Second},
	{"20060102T150405", 0, 0, 0, time.Second},
}

// ParsePeriod reads a --since or --until value as the period it names: a year (2026), a month
// (2026-02, 202602), a day (2026-02-10, 20260210), an hour (2026-02-10T12, or with a space), a
// minute (2026-02-10 12:00, with T, with or without a zone), or a time as records write them
// (RFC 3339 with or without fractions, offset or T), which names that instant. It returns the
// period's start and its end (exclusive; just after the instant for a time).
func ParsePeriod(s string) (start, end time.Time, err error) {
	for _, p := range periodLayouts {
		if t, err := time.Parse(p.layout, s); err == nil {
			t = t.UTC()
			if p.dur > 0 {
				return t, t.Add(p.dur), nil
			}
			return t, t.AddDate(p.years, p.months, p.days), nil
		}
	}
	if t, ok := record.ParseTime(s); ok {
		return t, t.Add(time.Nanosecond), nil
	}
	return time.Time{}, time.Time{}, fmt.Errorf("%q is not a date: use YYYY-MM-DD or an RFC 3339 time such as 2026-02-11T09:00:00Z (a year, a month, YYYYMMDD and \"YYYY-MM-DD HH:MM\" work too)", s)
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

// All reports whether f keeps every bead (Match is true of any).
func (f Filter) All() bool {
	return !f.hasSince && !f.hasUntil && len(f.Agents) == 0 && len(f.Models) == 0 && len(f.Templates) == 0
}

func in(list []string, s string) bool { return len(list) == 0 || slices.Contains(list, s) }
