#!/bin/sh
# A stand-in agent that is busy: it prints lines that end as prompts do, without a pause, then
# prints a prompt-looking line and works (sleeps) without reading, then prints again and works.
i=0
while [ $i -lt 3000 ]; do
  echo "step $i: \$ >"
  i=$((i+1))
done
printf 'compiling... $ '
sleep 2
i=0
while [ $i -lt 200 ]; do
  echo "more output: ?"
  i=$((i+1))
done
exec sleep 600
