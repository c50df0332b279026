#!/usr/bin/env bash
# Exits 0 when a Docker engine answers. Otherwise prints one line and exits 3, so a
# CI job can tell "cannot run here" (skip) from "ran and failed" (any other code):
#   bash localstack/check-docker.sh || { [ $? -eq 3 ] && exit 0; }
set -uo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
set +e

skip() {
	echo "localstack: skipped — no Docker engine answers on this machine (docker info failed: $1)"
	exit 3
}

command -v docker >/dev/null 2>&1 || skip "docker: command not found"
out="$(with_timeout "${DOCKER_INFO_TIMEOUT:-10}" docker info --format '{{.ServerVersion}}' 2>&1)"
rc=$?
if [ "$rc" -ne 0 ]; then
	reason="$(printf '%s' "$out" | tr '\n' ' ' | sed -e 's/  */ /g' -e 's/^ //' -e 's/ $//' | cut -c1-240)"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 143 ]; then
		reason="no answer within ${DOCKER_INFO_TIMEOUT:-10}s${reason:+: $reason}"
	fi
	skip "${reason:-exit status $rc}"
fi
exit 0
