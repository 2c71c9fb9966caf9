#!/bin/sh
# A stand-in coding agent for the offline example: it reads its instructions on stdin
# (as a real agent CLI does), writes hello.txt in the repository (its working directory),
# and prints what it did as its last line, which AgentRunner records as the run's summary.
set -eu
instructions=$(cat)
printf 'Hello, world!\n' > hello.txt
printf 'Received %s characters of instructions.\n' "$(printf '%s' "$instructions" | wc -c | tr -d ' ')"
printf 'Wrote hello.txt with a greeting.\n'
