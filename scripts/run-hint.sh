#!/bin/sh
# SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
# Print how to talk to the broker that `make run` starts.
# Usage: run-hint.sh PORT CLI_PATH
port=$1
cli=$2
if [ "$port" = 1883 ]; then
    alias_line="alias statestore='$cli'"
else
    alias_line="alias statestore='$cli -p $port'"
fi
cat <<HINT
statestore: try, in another terminal:

  $alias_line
  statestore set greeting hello
  statestore get greeting

HINT
