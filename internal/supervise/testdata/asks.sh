#!/bin/sh
# A stand-in agent that works a moment, asks a question and waits for the answer, then works
# (sleeps, printing nothing) until it is stopped.
echo "reading the repository"
echo "planning"
printf 'Apply the change? (y/n) '
read -r answer
echo "answered: $answer"
exec sleep 600
