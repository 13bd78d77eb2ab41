#!/bin/sh
# The stand-in agent of swarm run's tests. It reads its prompt on stdin and acts on its words:
#   write:F      writes a line naming the task into file F of its worktree (a change to commit);
#   commit:F     does the same and commits it itself;
#   fail         exits 3;
#   flaky:N      fails (exit 4) until its attempt ($DISPATCH_ATTEMPT) is N;
#   hang         sleeps until killed;
#   touch:F      creates the file F (outside the worktree: a test's signal);
#   nothing      does nothing.
prompt=$(cat)
echo "agent $SWARM_AGENT_ID on $SWARM_TASK_ID (attempt $DISPATCH_ATTEMPT)"
code=0
for word in $prompt; do
	case $word in
	write:*) echo "$SWARM_TASK_ID" >> "${word#write:}" ;;
	commit:*)
		echo "$SWARM_TASK_ID" >> "${word#commit:}"
		git add -A && git -c user.name=agent -c user.email=agent@example.com commit -q -m "agent: $SWARM_TASK_ID"
		;;
	fail) code=3 ;;
	flaky:*) [ "$DISPATCH_ATTEMPT" -lt "${word#flaky:}" ] && code=4 ;;
	touch:*) : > "${word#touch:}" ;;
	hang) sleep 3600 ;;
	esac
done
exit $code
