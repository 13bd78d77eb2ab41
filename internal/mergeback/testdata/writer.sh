#!/bin/sh
# The stand-in agent of a swarm run whose branches are merged back: its prompt is words
# FILE=TEXT, each writing the line TEXT into FILE of its worktree (the run commits them).
for word in $(cat); do
	echo "${word#*=}" > "${word%%=*}"
done
