#!/bin/sh
# Print how to talk to the broker that `make run` starts. Usage: run-hint.sh PORT
port=$1
cat <<HINT
statestore: try, in another terminal (MQTT 5 request/response with mosquitto_rr):

  T=statestore/v1/FA9AE35F-2F64-47CD-9BFF-08E2B32A0FE8/command/invoke
  mosquitto_rr -V 5 -p $port -t \$T -e clients/me/resp -q 1 -D publish correlation-data 1 \\
      -D publish user-property __ts "\$(date +%s%3N):0:me" -F '%p  %P' \\
      -m \$'*3\\r\\n\$3\\r\\nSET\\r\\n\$5\\r\\nhello\\r\\n\$5\\r\\nworld\\r\\n'

HINT
