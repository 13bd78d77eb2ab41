#!/usr/bin/env bash
# A stand-in for the workspace's scripts and dispatch.sh's integrations, for tests
# (workspace-*.txtar install it with stubhook under their names). By the name it was called as:
#   any script     logs "<name> <arg1> <arg2> …" to $WORK/hooks.log, prints a line on stdout
#                  and one on stderr
#   verify         prints $WORK/verify.json (verify.sh's JSON) instead of the stdout line
#   relay          logs "relay <arg1> …" to $WORK/relay.log instead, prints nothing
#   truthsayer     logs to $WORK/hooks.log, prints two findings and a note, then waits until
#                  it is stopped (SIGTERM), which it logs as "truthsayer stopped"
# and exits with the number in $WORK/exit-<name>, 0 without one.
name="$(basename "$0" .sh)"
log="$WORK/hooks.log"
[ "$name" = relay ] && log="$WORK/relay.log"
{ printf '%s' "$name"; [ $# -gt 0 ] && printf ' <%s>' "$@"; printf '\n'; } >>"$log"
case "$name" in
verify) [ -f "$WORK/verify.json" ] && cat "$WORK/verify.json" ;;
relay) ;;
truthsayer)
  trap 'echo "truthsayer stopped" >>"$WORK/hooks.log"; exit 0' TERM
  printf 'ERROR: a finding\nWARNING: another\nINFO: not one\n'
  while :; do sleep 0.1; done
  ;;
*)
  echo "$name: out"
  echo "$name: err" >&2
  ;;
esac
code=0
[ -f "$WORK/exit-$name" ] && code="$(cat "$WORK/exit-$name")"
exit "$code"
