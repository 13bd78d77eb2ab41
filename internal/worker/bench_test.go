package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentfleet/fleet/internal/statedir"
)

// BenchmarkUpdate is one change of a registry of 100 workers (swarm spawn's: lock, read,
// decode, add or change one, encode, write, rename), as cmd/swarm's TestConcurrentSpawn makes
// 100 of them under the lock.
func BenchmarkUpdate(b *testing.B) {
	r := registryOf100(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := r.Update(ctx, func(s *State) error {
			w := s.Get(fmt.Sprintf("w%d", i%100))
			w.Metadata = w.Metadata.SetValue(MetaAgentPID, i)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck is the schema check of Update's write alone, for the same 100 workers (51 KB).
func BenchmarkCheck(b *testing.B) {
	r := registryOf100(b)
	s, err := r.Load()
	if err != nil {
		b.Fatal(err)
	}
	doc := Encode(s)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Check(s, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// registryOf100 is a registry of 100 supervised tmux workers.
func registryOf100(b *testing.B) *Registry {
	r := &Registry{Dir: statedir.Swarm{Root: b.TempDir()}}
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		err := r.Update(ctx, func(s *State) error {
			tmux := &Tmux{Session: "swarm-abcd1234", Window: fmt.Sprintf("w%d", i)}
			s.Add(&Worker{Name: fmt.Sprintf("w%d", i), Status: StatusRunning, Cmd: []string{"claude", "--model", "opus"},
				Started: "2026-11-23T15:09:07.844392", Cwd: "/tmp/repo", Env: Env{{"A", "1"}}, Tags: []string{"x"}, Tmux: tmux,
				Metadata: Object{}.SetValue(MetaSupervised, true).SetValue(MetaSupervisorPID, 4242+i)})
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return r
}
