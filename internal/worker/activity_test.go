package worker

import (
	"testing"
	"time"
)

func TestActivity(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 15, 0, 0, 0, time.Local)
	w := &Worker{Name: "w"}
	if _, ok := w.Activity(); ok {
		t.Fatal("Activity() of a new worker = ok")
	}
	w.SetActivity(ActivityBusy, false, t0)
	w.SetActivity(ActivityIdle, true, t0.Add(time.Minute))
	w.SetActivity(ActivityIdle, true, t0.Add(2*time.Minute)) // unchanged: since stays
	a, ok := w.Activity()
	if !ok || a.State != ActivityIdle || !a.Since.Equal(t0.Add(time.Minute)) || !a.Ready.Equal(t0.Add(time.Minute)) {
		t.Fatalf("Activity() = %+v, %v; want idle since and ready at t0+1m", a, ok)
	}
	for _, c := range []struct {
		a    Activity
		want string
	}{
		{Activity{State: ActivityIdle, Since: t0}, "idle 12m"},
		{Activity{State: ActivityIdle}, "idle"},
		{Activity{State: ActivityBusy, Since: t0}, "busy"},
		{Activity{State: ActivityWaiting, Since: t0}, "waiting for input"},
	} {
		if got := c.a.Describe(t0.Add(12*time.Minute + 5*time.Second)); got != c.want {
			t.Errorf("Describe(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
	// Python's json keeps our keys as they are: the state round-trips.
	s := &State{}
	s.Add(w)
	d, err := Decode(Encode(s))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := d.Get("w").Activity(); b != a {
		t.Errorf("after Encode/Decode Activity() = %+v, want %+v", b, a)
	}
}
