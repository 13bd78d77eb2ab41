#!/bin/sh
# A stand-in for a headless coding agent, for AIWG loop tests. It reads its prompt on stdin
# (kept as $AIWG_AGENT_DIR/prompt-N.txt) and does what line N of $AIWG_PLAN says, N being how
# many times it has been called. Words of a line:
#   exit=N      exit with N (default 0)
#   cost=X      print a result as claude -p --output-format json does, costing X USD
#   limit=S     print a usage-limit message whose reset is S seconds away (claude's old
#               "usage limit reached|<epoch>") and exit 1
#   touch=F     create the file F in the working directory
#   write=F     append a line to the file F
#   sleep=S     sleep S seconds
#   await=F     wait until the file $AIWG_AGENT_DIR/F exists (at most 60 s), for a script that
#               looks at the loop while the agent works and then lets it go on
#   say=TEXT    print TEXT
#   rewind      rewrite its loop's start_commit in state.json to HEAD's parent (a hostile agent)
# The words are done in order. A call past the last line repeats the last line.
dir=${AIWG_AGENT_DIR:?}
mkdir -p "$dir"
n=$(( $(cat "$dir/count" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$dir/count"
cat > "$dir/prompt-$n.txt"
echo "$*" > "$dir/args-$n.txt"
line=$(sed -n "${n}p" "$AIWG_PLAN")
[ -n "$line" ] || line=$(tail -n 1 "$AIWG_PLAN")
code=0
for word in $line; do
  case $word in
  sleep=*) sleep "${word#sleep=}" ;;
  rewind) sed -i "s/\"start_commit\": \"[0-9a-f]*\"/\"start_commit\": \"$(git rev-parse HEAD~1)\"/" ".aiwg/ralph/loops/$RALPH_LOOP_ID/state.json" ;;
  await=*) i=0; while [ ! -e "$dir/${word#await=}" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i + 1)); done ;;
  exit=*) code=${word#exit=} ;;
  touch=*) : > "${word#touch=}" ;;
  write=*) echo "agent was here" >> "${word#write=}" ;;
  say=*) echo "${word#say=}" ;;
  cost=*) printf '{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"worked","total_cost_usd":%s,"usage":{"input_tokens":100,"output_tokens":20}}\n' "${word#cost=}" ;;
  limit=*) echo "Claude AI usage limit reached|$(( $(date +%s) + ${word#limit=} ))"; code=1 ;;
  esac
done
exit "$code"
