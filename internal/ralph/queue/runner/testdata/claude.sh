#!/bin/sh
# A stand-in for claude with the tool-use hooks of its --settings file: it runs the PreToolUse
# hook's command (with a shell and the hook's JSON on stdin, as Claude Code does), creates
# $HOOKTEST/pre, waits for $HOOKTEST/go, runs the PostToolUse hook, creates $HOOKTEST/post,
# waits for $HOOKTEST/end (each wait at most 30 s, then exit 5), and prints claude's result.
settings=
while [ $# -gt 0 ]; do
	[ "$1" = --settings ] && settings=$2
	shift
done
cat > /dev/null
[ -f "$settings" ] || { echo "no --settings file"; exit 8; }
# The command of an event's hook, from the settings the runner wrote (one command an event).
hook() {
	tr -d '\n' < "$settings" | sed -n "s/.*\"$1\": *\[ *{ *\"hooks\": *\[ *{ *\"command\": *\"\([^\"]*\)\".*/\1/p"
}
await() {
	i=0
	while [ ! -e "$1" ]; do
		i=$((i + 1))
		[ $i -gt 600 ] && exit 5
		sleep 0.05
	done
}
pre=$(hook PreToolUse)
post=$(hook PostToolUse)
[ -n "$pre" ] && [ -n "$post" ] || { echo "no hooks in $settings"; exit 9; }
echo '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}' | sh -c "$pre"
: > "$HOOKTEST/pre"
await "$HOOKTEST/go"
echo '{"hook_event_name":"PostToolUse","tool_name":"Edit"}' | sh -c "$post"
: > "$HOOKTEST/post"
await "$HOOKTEST/end"
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0,"num_turns":2,"result":"ok"}\n'
