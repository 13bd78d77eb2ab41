#!/bin/sh
# The stand-in agent of the executor conformance suite. It reads its prompt on stdin and acts on
# its words, in order:
#   commit:F   writes a line naming the task ($SWARM_TASK_ID) into file F and commits it;
#   fail       exits 3 at the end;
#   hang       sleeps until killed;
#   pid:F      writes its pid into F (a test's signal that it runs, and what to look for after);
#   ppid:F     appends its parent's pid (its supervisor's) to F;
#   once:F     appends "TASK start ATTEMPT" to F, and "TASK end ATTEMPT CODE" when it ends;
#              "TASK overlap" when another run of the task's agent is at work meanwhile;
#   waitfor:F  waits until the file F exists;
#   spew:N     prints N lines of 100 characters, the last one "the last line";
#   args:F     writes its arguments into F, one a line.
prompt=$(cat)
code=0
log=
for word in $prompt; do
	case $word in
	commit:*)
		echo "$SWARM_TASK_ID" >> "${word#commit:}"
		git add -A && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent: $SWARM_TASK_ID"
		;;
	fail) code=3 ;;
	hang) sleep 3600 ;;
	ppid:*) echo "$PPID" >> "${word#ppid:}" ;;
	pid:*) echo $$ > "${word#pid:}.tmp" && mv "${word#pid:}.tmp" "${word#pid:}" ;;
	once:*)
		log=${word#once:}
		mkdir "$log.$SWARM_TASK_ID.running" 2>/dev/null || echo "$SWARM_TASK_ID overlap" >> "$log"
		echo "$SWARM_TASK_ID start $DISPATCH_ATTEMPT" >> "$log"
		;;
	args:*) printf '%s\n' "$@" > "${word#args:}" ;;
	waitfor:*) while [ ! -e "${word#waitfor:}" ]; do sleep 0.05; done ;;
	spew:*)
		i=0
		while [ $i -lt "${word#spew:}" ]; do
			echo "line $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			i=$((i + 1))
		done
		echo "the last line"
		;;
	esac
done
if [ -n "$log" ]; then
	rmdir "$log.$SWARM_TASK_ID.running"
	echo "$SWARM_TASK_ID end $DISPATCH_ATTEMPT $code" >> "$log"
fi
exit $code
