#!/bin/sh
# The stand-in agent of ralph queue's tests: it reads its prompt on stdin and acts on the words
# of the task's description:
#   fail        exits 3;
#   flaky:N     fails (exit 4) until its attempt ($DISPATCH_ATTEMPT) is N;
#   hang        sleeps until killed;
#   sleep:S     sleeps S seconds first;
#   until:F     waits until the file F exists (at most 30 s);
#   cost:X      reports a cost of X USD as claude -p --output-format json does;
#   plaincost:X reports it as a line of text ("Cost: $X session", as aider does), no JSON;
#   touch:F     creates the file F in its directory (the repository or its worktree);
#   resettotal  sets the plan's total_cost_usd in its progress file to 0 (a hostile agent);
#   markdone:T  marks task T done in the plan's task queue (a hostile agent);
#   samefail    prints the same five error lines and exits 5;
#   limitonce:F prints a usage-limit message naming a reset 2 s away and exits 1 when the file F
#               is not there (then makes it), else goes on;
#   fill        fills the disk of its directory to the last byte;
#   commit:F    writes its task id into the file F of its directory and commits it (exit 6 when
#               it cannot);
#   check:F     exits 7 unless the file F is in its directory;
#   quietbefore:N prints its line, then nothing, sleeping until killed, while its attempt is
#               before N.
# It prints what it was asked, and its pid into $QUEUE_PIDS/<bead>-<attempt> when that is set.
prompt=$(cat)
[ -n "$QUEUE_PIDS" ] && echo $$ > "$QUEUE_PIDS/$DISPATCH_BEAD-$DISPATCH_ATTEMPT"
echo "agent $RALPH_AGENT on $RALPH_TASK (attempt $DISPATCH_ATTEMPT): $prompt"
cost=0
code=0
for word in $prompt; do
	case $word in
	fail) code=3 ;;
	flaky:*) [ "$DISPATCH_ATTEMPT" -lt "${word#flaky:}" ] && code=4 ;;
	hang) sleep 3600 ;;
	sleep:*) sleep "${word#sleep:}" ;;
	until:*)
		i=0
		while [ ! -e "${word#until:}" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
		;;
	cost:*) cost=${word#cost:} ;;
	plaincost:*) plain=${word#plaincost:} ;;
	touch:*) : > "${word#touch:}" ;;
	samefail)
		for i in 1 2 3 4 5; do echo "error: the build is broken"; done
		exit 5
		;;
	limitonce:*)
		if [ ! -e "${word#limitonce:}" ]; then
			: > "${word#limitonce:}"
			echo "Claude usage limit reached. Try again in 2 seconds."
			exit 1
		fi
		;;
	commit:*)
		f=${word#commit:}
		{ echo "$RALPH_TASK" > "$f" && git add -- "$f" && git commit -q -m "$RALPH_TASK: $f"; } || code=6
		;;
	check:*) [ -e "${word#check:}" ] || code=7 ;;
	quietbefore:*) [ "$DISPATCH_ATTEMPT" -lt "${word#quietbefore:}" ] && sleep 3600 ;;
	fill) dd if=/dev/zero of=fill.bin bs=64k 2>/dev/null ;;
	resettotal) sed -i 's/"total_cost_usd": [^,]*/"total_cost_usd": 0/' ".claude/ralph/progress-$RALPH_PLAN.json" ;;
	markdone:*) sed -i "/\"id\":\"${word#markdone:}\"/s/\"status\":\"[a-z]*\"/\"status\":\"done\"/" ".claude/ralph/task-queue-$RALPH_PLAN.json" ;;
	esac
done
if [ -n "$plain" ]; then
	echo "Cost: \$$plain session"
	exit $code
fi
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":%s,"num_turns":1,"result":"ok"}\n' "$cost"
exit $code
