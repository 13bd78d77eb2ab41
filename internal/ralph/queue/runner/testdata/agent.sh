#!/bin/sh
# The stand-in agent of the runner's tests: it reads its prompt on stdin and acts on the words
# of the task's description, in order:
#   fail        exits 3;
#   flaky:N     fails (exit 4) until its attempt ($DISPATCH_ATTEMPT) is N;
#   hang        sleeps until killed;
#   hangbefore:N sleeps until killed while its attempt is before N;
#   until:F     waits until the file F exists (at most 30 s, then exits 5);
#   touch:F     creates the file F;
#   count:N:D   counts itself in the directory D while it works: if more than N agents are
#               counted at once it creates D.over;
#   gate:N:D    counts itself as count does, then waits until N agents have been counted at
#               once (D.open, made by the Nth; at most 30 s, then exits 5);
#   cost:X      reports a cost of X USD as claude -p --output-format json does;
#   turns:N     reports N turns (num_turns) in that result (1 by default);
#   mark:F      creates the file F.ATTEMPT ($DISPATCH_ATTEMPT: a sign of that attempt's start);
#   await:F     waits until the file F.ATTEMPT exists (at most 30 s, then exits 5);
#   commit:F    writes its task id into the file F of its working directory and commits it
#               (exit 6 when it cannot);
#   switch:B    switches to a new branch B of its own (git switch -c B), as coding agents do;
#   orphan:B    switches to a new branch B with no history (git switch --orphan B);
#   check:F     exits 7 unless the file F is in its working directory (after the words before).
#   alone:F     appends "TASK start SLOT" to file F, and "TASK end SLOT CODE" when it ends;
#               "TASK overlap" when an agent of the task on another slot is alive as it
#               starts (pid files F.TASK.SLOT.pid); SLOT is $SWARM_AGENT_ID, a host's slot;
#   hold:D      waits until the file D/go-HOST exists, HOST its slot's host part (h1-1: h1).
prompt=$(cat)
alog=
echo "agent $RALPH_AGENT on $RALPH_TASK (attempt $DISPATCH_ATTEMPT): $prompt"
cost=0
turns=1
code=0
gate=
for word in $prompt; do
	case $word in
	fail) code=3 ;;
	flaky:*) [ "$DISPATCH_ATTEMPT" -lt "${word#flaky:}" ] && code=4 ;;
	hang) sleep 3600 ;;
	hangbefore:*) [ "$DISPATCH_ATTEMPT" -lt "${word#hangbefore:}" ] && sleep 3600 ;;
	until:*)
		i=0
		while [ ! -e "${word#until:}" ]; do
			i=$((i + 1))
			[ $i -gt 600 ] && exit 5
			sleep 0.05
		done
		;;
	touch:*) : > "${word#touch:}" ;;
	count:* | gate:*)
		rest=${word#*:}
		n=${rest%%:*}
		dir=${rest#*:}
		mkdir -p "$dir"
		gate="$dir/$RALPH_TASK-$DISPATCH_ATTEMPT"
		: > "$gate"
		counted=$(ls "$dir" | wc -l)
		[ "$counted" -gt "$n" ] && : > "$dir.over"
		[ "$counted" -ge "$n" ] && : > "$dir.open"
		if [ "${word%%:*}" = gate ]; then
			i=0
			while [ ! -e "$dir.open" ]; do
				i=$((i + 1))
				[ $i -gt 600 ] && exit 5
				sleep 0.05
			done
		fi
		;;
	cost:*) cost=${word#cost:} ;;
	turns:*) turns=${word#turns:} ;;
	mark:*) : > "${word#mark:}.$DISPATCH_ATTEMPT" ;;
	await:*)
		i=0
		while [ ! -e "${word#await:}.$DISPATCH_ATTEMPT" ]; do
			i=$((i + 1))
			[ $i -gt 600 ] && exit 5
			sleep 0.05
		done
		;;
	commit:*)
		f=${word#commit:}
		{ echo "$RALPH_TASK" > "$f" && git add -- "$f" &&
			git -c user.name=agent -c user.email=agent@localhost commit -q -m "$RALPH_TASK: $f"; } || code=6
		;;
	switch:*) git switch -q -c "${word#switch:}" || code=8 ;;
	orphan:*) git switch -q --orphan "${word#orphan:}" || code=8 ;;
	check:*) [ -e "${word#check:}" ] || code=7 ;;
	alone:*)
		alog=${word#alone:}
		me="$alog.$RALPH_TASK.$SWARM_AGENT_ID.pid"
		echo $$ > "$me"
		for f in "$alog.$RALPH_TASK".*.pid; do
			[ "$f" = "$me" ] || ! kill -0 "$(cat "$f")" 2>/dev/null || echo "$RALPH_TASK overlap" >> "$alog"
		done
		echo "$RALPH_TASK start $SWARM_AGENT_ID" >> "$alog"
		;;
	hold:*) while [ ! -e "${word#hold:}/go-${SWARM_AGENT_ID%-*}" ]; do sleep 0.05; done ;;
	esac
done
[ -z "$alog" ] || echo "$RALPH_TASK end $SWARM_AGENT_ID $code" >> "$alog"
printf '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":%s,"num_turns":%s,"result":"ok"}\n' "$cost" "$turns"
[ -n "$gate" ] && rm -f "$gate"
exit $code
