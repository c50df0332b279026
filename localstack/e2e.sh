#!/usr/bin/env bash
# The whole LocalStack loop for CI: up, deploy, smoke, down. Exits 0 without running
# anything when no Docker engine answers (check-docker.sh prints why).
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

rc=0
bash "$LS_DIR/check-docker.sh" || rc=$?
if [ "$rc" -eq 3 ]; then
	exit 0
elif [ "$rc" -ne 0 ]; then
	exit "$rc"
fi

rc=0
{ bash "$LS_DIR/up.sh" && bash "$LS_DIR/deploy.sh" && bash "$LS_DIR/smoke.sh"; } || rc=$?
[ "${KEEP_LOCALSTACK:-0}" = 1 ] || bash "$LS_DIR/down.sh" || true
exit "$rc"
