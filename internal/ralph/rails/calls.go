package rails

import "time"

// Calls is the calls-per-hour rail: when the agent was started within the last Window, oldest
// first, and whether one more start must wait. A swarm loop keeps the starts in its state
// (call_times), an AIWG loop in its seal, the queue in memory for its run; each loads them here
// and takes them back.
type Calls struct {
	// Max is how many starts any Window may hold (0 or less: no limit).
	Max int
	// Window is the time the starts are counted in: an hour when 0 (tests shorten it).
	Window time.Duration
	times  []time.Time
}

func (c *Calls) window() time.Duration {
	if c.Window <= 0 {
		return time.Hour
	}
	return c.Window
}

// Load replaces the starts with times (oldest first).
func (c *Calls) Load(times []time.Time) { c.times = append(c.times[:0], times...) }

// Times are the starts held, oldest first (a copy).
func (c *Calls) Times() []time.Time { return append([]time.Time(nil), c.times...) }

// Forget drops the starts that have left the window before now.
func (c *Calls) Forget(now time.Time) {
	kept := c.times[:0]
	for _, t := range c.times {
		if now.Sub(t) < c.window() {
			kept = append(kept, t)
		}
	}
	c.times = kept
}

// Full reports whether Max starts are within the window before now, and then when the oldest
// of the last Max leaves it: the next start waits until then. The older starts are forgotten.
func (c *Calls) Full(now time.Time) (until time.Time, full bool) {
	c.Forget(now)
	if c.Max <= 0 || len(c.times) < c.Max {
		return time.Time{}, false
	}
	return c.times[len(c.times)-c.Max].Add(c.window()), true
}

// Note records a start at now; the last Max starts are all the limit needs, the older ones go.
func (c *Calls) Note(now time.Time) {
	c.times = append(c.times, now)
	if c.Max > 0 && len(c.times) > c.Max {
		c.times = append(c.times[:0], c.times[len(c.times)-c.Max:]...)
	}
}

// Take reserves a start at now: 0 when the window has room (the start is noted), else how
// long until it has (nothing noted). Without a limit it is always 0, and nothing is kept.
func (c *Calls) Take(now time.Time) time.Duration {
	if c.Max <= 0 {
		return 0
	}
	if until, full := c.Full(now); full {
		return until.Sub(now)
	}
	c.Note(now)
	return 0
}

// Give gives back the start Take reserved at t (it was not used: no task was claimed).
func (c *Calls) Give(t time.Time) {
	for i := len(c.times) - 1; i >= 0; i-- {
		if c.times[i].Equal(t) {
			c.times = append(c.times[:i], c.times[i+1:]...)
			return
		}
	}
}

// Len is how many starts are held.
func (c *Calls) Len() int { return len(c.times) }
