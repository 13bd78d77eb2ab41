#!/bin/sh
# The stand-in agent that resolves a merge's conflicts: it reads its prompt, and in each file git
# left unmerged keeps both sides (drops the conflict markers), as an agent asked to keep the
# intent of both would. It stages nothing: the merge is committed after it exits.
cat > /dev/null
for f in $(git diff --name-only --diff-filter=U); do
	grep -v -e '^<<<<<<<' -e '^=======' -e '^>>>>>>>' "$f" > "$f.resolved" && mv "$f.resolved" "$f"
	echo "resolved $f"
done
