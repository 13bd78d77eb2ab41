package manifest

import (
	"fmt"
	"strings"
	"testing"
)

// bigManifest is n tasks in manifest order, each depending on up to two of the 50 before it,
// priorities in turn: the shape of a generated batch.
func bigManifest(n int) []byte {
	var b strings.Builder
	b.WriteString("name: big\ndefaults: {agent: nothing}\ntasks:\n")
	for i := 0; i < n; i++ {
		var deps []string
		if i > 0 {
			deps = append(deps, fmt.Sprintf("t%d", max(0, i-1-i%50)))
		}
		if i > 7 {
			deps = append(deps, fmt.Sprintf("t%d", i-7))
		}
		if len(deps) == 2 && deps[0] == deps[1] {
			deps = deps[:1]
		}
		fmt.Fprintf(&b, "  - {id: t%d, prompt: p, branch: b/t%d, priority: %s, depends_on: [%s]}\n", i, i, []string{High, Medium, Low}[i%3], strings.Join(deps, ", "))
	}
	return []byte(b.String())
}

// BenchmarkPlan20000 is what swarm run --dry-run does with a manifest of 20,000 tasks: parse
// and check it (the graph, the cycle check), order it, and look each task up by its id.
func BenchmarkPlan20000(b *testing.B) {
	doc := bigManifest(20000)
	for b.Loop() {
		m, err := Parse("work.yaml", doc, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, id := range m.Order() {
			if m.Task(id) == nil {
				b.Fatalf("no task %s", id)
			}
		}
	}
}

// TestOrderAsByScan: Order is the order of the plain definition (each time, the first ready
// task of the best priority), on a generated manifest of 2,000 tasks and on the fuzz seeds.
func TestOrderAsByScan(t *testing.T) {
	for _, doc := range [][]byte{bigManifest(2000), []byte(good)} {
		m, err := Parse("w.yaml", doc, func(string) ([]byte, error) { return []byte("p"), nil })
		if err != nil {
			t.Fatal(err)
		}
		got, want := m.Order(), orderByScan(m)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("Order() differs from the scan's order:\n%v\n%v", got, want)
		}
	}
}

// orderByScan is the definition of Order, quadratic: each time, among the tasks whose
// dependencies are ordered, the first of the best priority.
func orderByScan(m *Manifest) []string {
	done := map[string]bool{}
	var out []string
	for len(out) < len(m.Tasks) {
		best := -1
		for i, t := range m.Tasks {
			ready := !done[t.ID]
			for _, d := range t.DependsOn {
				ready = ready && done[d]
			}
			if ready && (best < 0 || Rank(t.Priority) < Rank(m.Tasks[best].Priority)) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		done[m.Tasks[best].ID] = true
		out = append(out, m.Tasks[best].ID)
	}
	return out
}
