#!/usr/bin/env bash
# Stops LocalStack and removes its container, network and state (LocalStack removes
# the Lambda containers it started when it shuts down).
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

compose down --volumes --remove-orphans
rm -f "$OUTPUTS_FILE"
log "stopped"
