package worker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// A heartbeat is $SWARM_DIR/heartbeats/<worker>.json, a periodic message to a worker, in the
// Python swarm's format: json.dump(indent=2) of worker_name, interval_seconds, message,
// expire_at, created_at, last_beat_at, beat_count, status, monitor_pid in that order (no final
// newline), timestamps as datetime.now(timezone.utc).isoformat() ("…+00:00"). Keys the Python
// tool does not write are kept after them.

// Statuses of a heartbeat.
const (
	HeartbeatActive  = "active"
	HeartbeatPaused  = "paused"
	HeartbeatExpired = "expired"
	HeartbeatStopped = "stopped"
)

// Heartbeat is one heartbeat file.
type Heartbeat struct {
	WorkerName      string
	IntervalSeconds int64
	Message         string
	ExpireAt        *string // nil: never
	CreatedAt       string
	LastBeatAt      *string // nil: no beat yet
	BeatCount       int64
	Status          string
	MonitorPID      *int64 // the process that beats it (ours: the worker's supervisor)
	Extra           Object
}

// Live reports whether the heartbeat may still beat (active or paused).
func (h *Heartbeat) Live() bool { return h.Status == HeartbeatActive || h.Status == HeartbeatPaused }

// HeartbeatTime writes t as the Python swarm writes a heartbeat's times:
// datetime.now(timezone.utc).isoformat(), microseconds unless they are zero.
func HeartbeatTime(t time.Time) string {
	t = t.UTC()
	if us := t.Nanosecond() / 1000; us != 0 {
		return t.Format("2006-01-02T15:04:05") + fmt.Sprintf(".%06d+00:00", us)
	}
	return t.Format("2006-01-02T15:04:05") + "+00:00"
}

// NextBeat is when the next beat is due as the Python swarm shows it: the last beat (or the
// creation) plus the interval; ok is false when neither time can be read.
func (h *Heartbeat) NextBeat() (t time.Time, ok bool) {
	base := h.CreatedAt
	if h.LastBeatAt != nil && *h.LastBeatAt != "" {
		base = *h.LastBeatAt
	}
	b, ok := ParseTimestamp(base)
	if !ok {
		return time.Time{}, false
	}
	return b.Add(h.Interval()), true
}

// Interval is the time between beats. One longer than a time.Duration holds (a file the
// Python swarm wrote: it had no bound) is MaxDuration, never wrapped into a negative interval
// that would beat at every idle moment.
func (h *Heartbeat) Interval() time.Duration {
	if h.IntervalSeconds > int64(MaxDuration/time.Second) {
		return MaxDuration
	}
	return time.Duration(h.IntervalSeconds) * time.Second
}

// Expires returns the expiry time, if there is one that can be read.
func (h *Heartbeat) Expires() (time.Time, bool) {
	if h.ExpireAt == nil {
		return time.Time{}, false
	}
	return ParseTimestamp(*h.ExpireAt)
}

// DecodeHeartbeat reads a heartbeat file. It needs what the Python tool needs (worker_name, an
// integer interval_seconds); the other keys default as there (message "continue", status
// "active"). A value of the wrong type is an error: the file is not one either tool wrote.
func DecodeHeartbeat(b []byte) (*Heartbeat, error) {
	var o Object
	if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), &o); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	h := &Heartbeat{Message: "continue", Status: HeartbeatActive}
	field := func(key string, v any, required bool) error {
		raw := o.Get(key)
		if raw == nil {
			if required {
				return fmt.Errorf("%q is missing", key)
			}
			return nil
		}
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("%q: %s is not of the right type", key, raw)
		}
		return nil
	}
	var interval json.Number
	for _, f := range []struct {
		key      string
		v        any
		required bool
	}{{"worker_name", &h.WorkerName, true}, {"interval_seconds", &interval, true}, {"message", &h.Message, false},
		{"expire_at", &h.ExpireAt, false}, {"created_at", &h.CreatedAt, false}, {"last_beat_at", &h.LastBeatAt, false},
		{"beat_count", &h.BeatCount, false}, {"status", &h.Status, false}, {"monitor_pid", &h.MonitorPID, false}} {
		if err := field(f.key, f.v, f.required); err != nil {
			return nil, err
		}
	}
	n, err := strconv.ParseInt(interval.String(), 10, 64)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("\"interval_seconds\": %s is not a positive whole number", interval)
	}
	h.IntervalSeconds = n
	for _, m := range o {
		if !heartbeatKeys[m.Key] {
			h.Extra = append(h.Extra, m)
		}
	}
	return h, nil
}

var heartbeatKeys = map[string]bool{"worker_name": true, "interval_seconds": true, "message": true, "expire_at": true,
	"created_at": true, "last_beat_at": true, "beat_count": true, "status": true, "monitor_pid": true}

// EncodeHeartbeat writes h as the Python swarm does (json.dump, indent=2, no final newline).
func EncodeHeartbeat(h *Heartbeat) []byte {
	w := &pyWriter{}
	w.heartbeat(h, 0, nil)
	return w.Bytes()
}

// EncodeHeartbeats writes a list of heartbeats as `heartbeat list --format json` prints it;
// extra, when given, adds a key to each (status --format json's next_beat_at).
func EncodeHeartbeats(hs []*Heartbeat) []byte {
	if len(hs) == 0 {
		return []byte("[]")
	}
	w := &pyWriter{}
	w.WriteString("[")
	for i, h := range hs {
		if i > 0 {
			w.WriteByte(',')
		}
		w.Newline(1)
		w.heartbeat(h, 1, nil)
	}
	w.Newline(0)
	w.WriteString("]")
	return w.Bytes()
}

// EncodeHeartbeatWith is EncodeHeartbeat with more keys after the file's (in their order).
func EncodeHeartbeatWith(h *Heartbeat, more Object) []byte {
	w := &pyWriter{}
	w.heartbeat(h, 0, more)
	return w.Bytes()
}

func (w *pyWriter) heartbeat(h *Heartbeat, depth int, more Object) {
	d := depth + 1
	optStr := func(s *string) {
		if s == nil {
			w.WriteString("null")
		} else {
			w.Quote(*s)
		}
	}
	w.WriteString("{")
	w.key("worker_name", d, true)
	w.Quote(h.WorkerName)
	w.key("interval_seconds", d, false)
	w.WriteString(strconv.FormatInt(h.IntervalSeconds, 10))
	w.key("message", d, false)
	w.Quote(h.Message)
	w.key("expire_at", d, false)
	optStr(h.ExpireAt)
	w.key("created_at", d, false)
	w.Quote(h.CreatedAt)
	w.key("last_beat_at", d, false)
	optStr(h.LastBeatAt)
	w.key("beat_count", d, false)
	w.WriteString(strconv.FormatInt(h.BeatCount, 10))
	w.key("status", d, false)
	w.Quote(h.Status)
	w.key("monitor_pid", d, false)
	if h.MonitorPID == nil {
		w.WriteString("null")
	} else {
		w.WriteString(strconv.FormatInt(*h.MonitorPID, 10))
	}
	w.members(h.Extra, d, false)
	w.members(more, d, false)
	w.Newline(depth)
	w.WriteString("}")
}

// Until prints how long until t as the Python swarm's time_until does: "now" once it is
// past, else "in Ns", "in Nm", "in Nh" or "in Nd" (whole units, truncated).
func Until(t, now time.Time) string {
	s := int64(t.Sub(now) / time.Second)
	switch {
	case s <= 0:
		return "now"
	case s < 60:
		return fmt.Sprintf("in %ds", s)
	case s < 3600:
		return fmt.Sprintf("in %dm", s/60)
	case s < 86400:
		return fmt.Sprintf("in %dh", s/3600)
	}
	return fmt.Sprintf("in %dd", s/86400)
}
