#!/bin/sh
# The stand-in agent of swarm run's tests. It reads its prompt on stdin and acts on its words:
#   write:F      writes a line naming the task into file F of its worktree (a change to commit);
#   commit:F     does the same and commits it itself;
#   switch:B     switches to a new branch B of its own (git switch -c B), as coding agents do;
#   orphan:B     switches to a new branch B with no history (git switch --orphan B);
#   fail         exits 3;
#   flaky:N      fails (exit 4) until its attempt ($DISPATCH_ATTEMPT) is N;
#   hang         sleeps until killed;
#   touch:F      creates the file F (outside the worktree: a test's signal);
#   once:F       appends "TASK start ATTEMPT" to file F, and "TASK end ATTEMPT CODE" when it
#                ends; "TASK overlap" when another run of the task's agent is at work meanwhile;
#   waitfor:F    waits until the file F exists;
#   mark:F       creates the file F.ATTEMPT ($DISPATCH_ATTEMPT: a signal of that attempt's start);
#   gate:F       waits until the file F.ATTEMPT exists;
#   alone:F      appends "TASK start AGENT" to file F, and "TASK end AGENT CODE" when it ends;
#                "TASK overlap" when an agent of the task on another slot (any host: they share
#                the process table) is alive as it starts (pid files F.TASK.AGENT.pid);
#   sleep:N      sleeps N seconds;
#   hold:D       waits until the file D/go-HOST exists, HOST its agent id's host part (h1-2: h1);
#   relink:P=T   moves the directory P aside (P.moved) and puts a link to T in its place, as a
#                hostile agent would (P relative to its worktree: ../b is another task's);
#   nothing      does nothing.
prompt=$(cat)
echo "agent $SWARM_AGENT_ID on $SWARM_TASK_ID (attempt $DISPATCH_ATTEMPT)"
code=0
log=
alog=
for word in $prompt; do
	case $word in
	once:*)
		log=${word#once:}
		mkdir "$log.$SWARM_TASK_ID.running" 2>/dev/null || echo "$SWARM_TASK_ID overlap" >> "$log"
		echo "$SWARM_TASK_ID start $DISPATCH_ATTEMPT" >> "$log"
		;;
	alone:*)
		alog=${word#alone:}
		me="$alog.$SWARM_TASK_ID.$SWARM_AGENT_ID.pid"
		echo $$ > "$me"
		for f in "$alog.$SWARM_TASK_ID".*.pid; do
			[ "$f" = "$me" ] || ! kill -0 "$(cat "$f")" 2>/dev/null || echo "$SWARM_TASK_ID overlap" >> "$alog"
		done
		echo "$SWARM_TASK_ID start $SWARM_AGENT_ID" >> "$alog"
		;;
	hold:*) while [ ! -e "${word#hold:}/go-${SWARM_AGENT_ID%-*}" ]; do sleep 0.05; done ;;
	waitfor:*) while [ ! -e "${word#waitfor:}" ]; do sleep 0.05; done ;;
	mark:*) : > "${word#mark:}.$DISPATCH_ATTEMPT" ;;
	gate:*) while [ ! -e "${word#gate:}.$DISPATCH_ATTEMPT" ]; do sleep 0.05; done ;;
	write:*) echo "$SWARM_TASK_ID" >> "${word#write:}" ;;
	commit:*)
		echo "$SWARM_TASK_ID" >> "${word#commit:}"
		git add -A && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent: $SWARM_TASK_ID"
		;;
	switch:*) git switch -q -c "${word#switch:}" ;;
	orphan:*) git switch -q --orphan "${word#orphan:}" ;;
	fail) code=3 ;;
	flaky:*) [ "$DISPATCH_ATTEMPT" -lt "${word#flaky:}" ] && code=4 ;;
	touch:*) : > "${word#touch:}" ;;
	relink:*)
		p=${word#relink:}
		mv "${p%%=*}" "${p%%=*}.moved" && ln -s "${p#*=}" "${p%%=*}"
		;;
	hang) sleep 3600 ;;
	sleep:*) sleep "${word#sleep:}" ;;
	esac
done
if [ -n "$log" ]; then
	rmdir "$log.$SWARM_TASK_ID.running"
	echo "$SWARM_TASK_ID end $DISPATCH_ATTEMPT $code" >> "$log"
fi
[ -z "$alog" ] || echo "$SWARM_TASK_ID end $SWARM_AGENT_ID $code" >> "$alog"
exit $code
