package swarmrun

import (
	"strings"
	"testing"
)

// TestBlockedNamesItsDependency: a failure blocks the transitive dependents, each naming the
// first of its dependencies failed or blocked by then, as the scan in manifest order that the
// ready set replaced named them.
func TestBlockedNamesItsDependency(t *testing.T) {
	for _, c := range []struct {
		order string // each task, then the ones it depends on
		want  string // each blocked task, then the dependency its message names
	}{
		// x is met before c: c names x, blocked by then.
		{"a x:a c:x,a", "x:a c:x"},
		// c is met before x: c names a, x not blocked yet.
		{"a c:x,a x:a", "c:a x:a"},
		{"a b:a c:b d:c", "b:a c:b d:c"},
	} {
		r := &runner{st: &State{Tasks: map[string]*Task{}}}
		for _, f := range strings.Fields(c.order) {
			id, deps, _ := strings.Cut(f, ":")
			task := &Task{ID: id, Status: Pending, Priority: "medium", DependsOn: []string{}}
			if deps != "" {
				task.DependsOn = strings.Split(deps, ",")
			}
			r.st.Tasks[id] = task
			r.st.Order = append(r.st.Order, id)
		}
		r.openSet()
		r.st.Tasks["a"].Status = Failed
		r.markBlocked(r.set.Fail(r.index("a")))
		var got []string
		for _, id := range r.st.Order {
			task := r.st.Tasks[id]
			if task.Status != Blocked {
				continue
			}
			by := strings.TrimSuffix(strings.TrimPrefix(task.Error.Message, "depends on "), ", which is failed")
			by = strings.TrimSuffix(by, ", which is blocked")
			got = append(got, id+":"+by)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s, a failed: blocked %q, want %q", c.order, strings.Join(got, " "), c.want)
		}
	}
}
