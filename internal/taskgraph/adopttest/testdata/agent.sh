#!/bin/sh
# The stand-in agent of the adoption test, one for both engines: it reads its prompt on stdin
# and acts on its words, in order:
#   log:F    appends "TASK start ATTEMPT" to the file F as it starts, "TASK end ATTEMPT" as it
#            ends (TASK is swarm run's $SWARM_TASK_ID or the queue's $RALPH_TASK);
#   wait:F   waits until the file F exists (at most 60 s, then exits 5);
#   write:F  writes its task id into the file F of its working directory.
prompt=$(cat)
task=${SWARM_TASK_ID:-$RALPH_TASK}
log=
for word in $prompt; do
	case $word in
	log:*)
		log=${word#log:}
		echo "$task start $DISPATCH_ATTEMPT" >>"$log"
		;;
	wait:*)
		n=0
		while [ ! -e "${word#wait:}" ]; do
			n=$((n + 1))
			[ "$n" -gt 600 ] && exit 5
			sleep 0.1
		done
		;;
	write:*) echo "$task" >"${word#write:}" ;;
	esac
done
[ -n "$log" ] && echo "$task end $DISPATCH_ATTEMPT" >>"$log"
exit 0
