#!/usr/bin/env bash
# Runs the Python swarm's own black-box tests (mtomcal/swarm's tests/, which drive swarm.py as a
# program) against the Python tool and against our swarm, in the same sandbox, and lists the
# tests that pass on the Python tool and fail on ours. Not part of `make test`: it needs the
# fetched repository (the `fetch` of github:mtomcal/swarm, a bare git directory) and pytest
# (Debian's python3-pytest).
#
#   scripts/pysuite.sh [python|ours|both] [PYTEST ARGS...]     (default: both, all of tests/)
#   PYSWARM_REPO=DIR   the fetched repository's git directory (default /work/.mirror/mtomcal+swarm/repo)
#   PYSUITE_TESTS=...  what pytest collects, relative to the repository (default tests/; "."
#                      for every test file, the unit tests of swarm.py's code included)
#   PYSUITE_BASELINE=F with `ours`: compare with a Python run's results file (saves its 11 min)
#
# The sandbox: a fresh HOME (the tests expect ~/.swarm, so SWARM_DIR is unset), a private
# TMUX_TMPDIR (the tests' own `tmux -L swarm-test-…` servers live there), TMUX unset (as in a
# plain terminal; inside tmux the tests would see the caller's session). Our swarm stands in for
# swarm.py through a three-line Python shim that execs the binary built from this checkout. Afterwards
# every worker left is killed (`swarm kill --all`), every tmux server of the sandbox is killed,
# and any process still carrying the sandbox's marker in its environment is named and killed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
which=${1:-both}
[ $# -gt 0 ] && shift
case $which in python|ours|both) ;; *) echo "usage: $0 [python|ours|both] [PYTEST ARGS...]" >&2; exit 2;; esac
repo=${PYSWARM_REPO:-/work/.mirror/mtomcal+swarm/repo}
tests=${PYSUITE_TESTS:-tests/}
pytest=(/usr/bin/python3 -m pytest)
"${pytest[@]}" --version >/dev/null 2>&1 || pytest=(python3 -m pytest)
if ! "${pytest[@]}" --version >/dev/null 2>&1; then echo "pysuite: error: pytest not found (apt-get install python3-pytest)" >&2; exit 1; fi
if ! git --git-dir="$repo" rev-parse -q --verify HEAD:swarm.py >/dev/null; then
  echo "pysuite: error: no mtomcal/swarm repository at $repo (fetch github:mtomcal/swarm, or set PYSWARM_REPO)" >&2; exit 1
fi
tmp=$(mktemp -d /tmp/pysuite.XXXXXX)
marker="PYSUITE_RUN=$tmp"
export PATH=/usr/local/go/bin:$PATH
( cd "$root" && go build -o "$tmp/swarm" ./cmd/swarm ) || exit 1

# run IMPL: one pass of the suite in a fresh sandbox; prints pytest's summary, leaves
# $tmp/IMPL.results (one "outcome nodeid" line per test).
run() {
  local impl=$1; shift
  local dir=$tmp/$impl
  mkdir -p "$dir/home" "$dir/tmux"
  git --git-dir="$repo" archive HEAD | tar -x -C "$dir" || return 1
  if [ "$impl" = ours ]; then
    # A Python file, since some tests run `python3 swarm.py ...`; one that execs only when run
    # (a test that imports swarm to call its functions gets an empty module, and fails).
    printf '#!/usr/bin/env python3\nimport os, sys\nif __name__ == "__main__":\n    os.execv(%s, ["swarm"] + sys.argv[1:])\n' "'$tmp/swarm'" >"$dir/swarm.py"
  fi
  chmod +x "$dir/swarm.py"
  # Some tests chdir in setUp and restore it in tearDown, which does not run when setUp fails
  # (as it does on ours for a setUp that calls swarm.py's functions): every later test that
  # runs ./swarm.py would fail too. Each test starts in the repository's directory.
  printf 'import os, pytest\n_root = os.getcwd()\n@pytest.fixture(autouse=True)\ndef _pysuite_cwd():\n    os.chdir(_root)\n    yield\n    os.chdir(_root)\n' >"$dir/conftest.py"
  echo "== $impl: $(cd "$dir" && echo "$tests") =="
  ( cd "$dir" && env -u SWARM_DIR -u TMUX -u TMUX_PANE HOME="$dir/home" TMUX_TMPDIR="$dir/tmux" \
      PYSUITE_RUN="$tmp" "${pytest[@]}" -p no:cacheprovider -q -rfEs --continue-on-collection-errors \
      --junitxml="$dir/junit.xml" "$@" $tests ) >"$dir/pytest.log" 2>&1
  results "$dir/junit.xml" >"$tmp/$impl.results"
  tail -n 1 "$dir/pytest.log"
  sweep "$impl"
}

# results JUNIT: one "OUTCOME TEST" line per test, sorted by test. OUTCOME is passed, skipped,
# failed, or internals: failed for want of swarm.py's Python internals (the test imports or
# patches the module's functions, which our shim does not have: a unit test of the Python
# code, not of the tool's behaviour).
results() {
  /usr/bin/python3 - "$1" <<'PY'
import re, sys, xml.etree.ElementTree as ET
# The module's names in the error, or the test's source (pytest shows it) calling into it,
# directly or through `python3 -c "import swarm; swarm.cmd_init(args)"`.
internals = re.compile(r"module 'swarm'|from 'swarm'|No module named 'swarm|import swarm|hasattr\(swarm,|swarm\.[a-z_]+\(")
rows = []
for tc in ET.parse(sys.argv[1]).iter("testcase"):
    name = tc.get("classname", "") + "::" + tc.get("name", "")
    bad = [c for c in tc if c.tag in ("failure", "error")]
    if bad:
        text = " ".join((c.get("message") or "") + (c.text or "") for c in bad)
        outcome = "internals" if internals.search(text) else "failed"
    elif any(c.tag == "skipped" for c in tc):
        outcome = "skipped"
    else:
        outcome = "passed"
    rows.append((name, outcome))
for name, outcome in sorted(rows):
    print(outcome, name)
PY
}

# sweep IMPL: leaves nothing of the sandbox running.
sweep() {
  local dir=$tmp/$1 s pid
  env -u SWARM_DIR -u TMUX HOME="$dir/home" TMUX_TMPDIR="$dir/tmux" "$dir/swarm.py" kill --all >/dev/null 2>&1
  for s in "$dir"/tmux/tmux-*/*; do [ -S "$s" ] && tmux -S "$s" kill-server 2>/dev/null; done
  for pid in $(grep -l -s -a -F -x "$marker" --null-data /proc/[0-9]*/environ | cut -d/ -f3); do
    [ "$pid" = $$ ] && continue
    echo "pysuite: warning: left behind by the $1 run: pid $pid: $(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | cut -c1-100)" >&2
    kill -KILL "$pid" 2>/dev/null
  done
}

trap 'sweep python 2>/dev/null; sweep ours 2>/dev/null' INT TERM
[ "$which" != ours ] && run python "$@"
[ "$which" != python ] && run ours "$@"
if [ "$which" = both ] || { [ "$which" = ours ] && [ -n "${PYSUITE_BASELINE:-}" ]; }; then
  base=${PYSUITE_BASELINE:-$tmp/python.results}
  # A test file that imports swarm.py's names is not even collected on ours: "internals".
  j() { join -a1 -e internals -o 0,1.1,2.1 -1 2 -2 2 <(sort -k2 "$base") <(sort -k2 "$tmp/ours.results"); }
  echo "== of the $(awk '$1=="passed"' "$base" | wc -l) tests that pass on the Python tool =="
  echo "pass on ours: $(j | awk '$2=="passed" && $3=="passed"' | wc -l)"
  echo "need swarm.py's Python internals (unit tests of its code): $(j | awk '$2=="passed" && $3=="internals"' | wc -l)"
  echo "black-box, fail on ours: $(j | awk '$2=="passed" && $3!="passed" && $3!="internals"' | wc -l)"
  j | awk '$2=="passed" && $3!="passed" && $3!="internals" {print "  " $3, $1}'
fi
echo "(logs: $tmp/*/pytest.log; results: $tmp/*.results, PYSUITE_BASELINE=$tmp/python.results reuses the Python run)"
