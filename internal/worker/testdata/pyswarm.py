# Drives the Python swarm's own State and Worker classes (swarm.py, given as argv[1]) on the
# state directory $SWARM_DIR, for worker_test.go:
#   write     save a state with every field the seed's format has
#   resave    load state.json and save it back, as any mutating Python verb does
#   durations read each line of stdin with parse_duration; print seconds or "error"
#   formats   print format_duration for each number on stdin
import importlib.util, sys
spec = importlib.util.spec_from_file_location("swarm", sys.argv[1])
swarm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(swarm)
op = sys.argv[2]
if op == "write":
    s = swarm.State()
    s.workers = [
        swarm.Worker(name="w1", status="running", cmd=["claude", "--model", "opus", "caf\u00e9 \U0001F600 \"q\" \\ /<>&\t\x7f"],
                     started="2026-11-23T15:09:07.844392", cwd="/tmp/r\u00e9po",
                     env={"B": "2", "A": "1 \u00e9"}, tags=["x", "y"],
                     tmux=swarm.TmuxInfo(session="swarm-f0dccaff", window="w1", socket="sock"),
                     worktree=swarm.WorktreeInfo(path="/tmp/wt/w1", branch="w1", base_repo="/tmp/repo"),
                     pid=None, metadata={"ralph": True, "ralph_iteration": 3, "f": 1.5, "big": 1e300, "n": None, "l": [], "o": {}}),
        swarm.Worker(name="p1", status="stopped", cmd=["sleep", "1"], started="2026-11-23T15:09:07", cwd="rel"),
    ]
    s.workers[1].pid = 4242
    s.save()
elif op == "resave":
    s = swarm.State()
    s.save()
elif op == "durations":
    for line in sys.stdin.read().split("\n"):
        try:
            print(swarm.parse_duration(line))
        except ValueError:
            print("error")
elif op == "formats":
    for line in sys.stdin.read().split():
        print(swarm.format_duration(float(line)))
