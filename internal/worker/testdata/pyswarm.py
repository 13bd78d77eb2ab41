# Drives the Python swarm's own State and Worker classes (swarm.py, given as argv[1]) on the
# state directory $SWARM_DIR, for worker_test.go:
#   write     save a state with every field the seed's format has
#   resave    load state.json and save it back, as any mutating Python verb does
#   durations read each line of stdin with parse_duration; print seconds or "error"
#   formats   print format_duration for each number on stdin
#   hbwrite   save two heartbeats (w1 with every field set, w2 with the defaults)
#   hbresave  load the heartbeat of the worker named on stdin and save it back
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
elif op == "hbwrite":
    swarm.save_heartbeat_state(swarm.HeartbeatState(worker_name="w1", interval_seconds=14400, message="caf\u00e9 \"go\"",
        expire_at="2026-11-24T19:30:00.123456+00:00", created_at="2026-11-23T19:30:00.123456+00:00",
        last_beat_at="2026-11-23T23:30:00+00:00", beat_count=1, status="paused", monitor_pid=4242))
    swarm.save_heartbeat_state(swarm.HeartbeatState(worker_name="w2", interval_seconds=90,
        created_at="2026-11-23T19:30:00.000001+00:00"))
elif op == "hbresave":
    name = sys.stdin.read().strip()
    swarm.save_heartbeat_state(swarm.load_heartbeat_state(name))
