# shellcheck shell=bash
# shellcheck disable=SC2034 # the variables are for the scripts that source this file
# Shared settings of the LocalStack scripts; sourced, not run. Every value can be
# overridden from the environment.

set -euo pipefail

LS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$LS_DIR/.." && pwd)"
BUILD_DIR="$LS_DIR/.build"

# LocalStack answers any credentials; region and account are LocalStack's defaults.
export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_REGION="$AWS_DEFAULT_REGION"
export AWS_PAGER=""

# Where this machine reaches LocalStack, and where the functions inside it do (the
# Lambda containers resolve localhost.localstack.cloud to the LocalStack container).
LOCALSTACK_ENDPOINT="${LOCALSTACK_ENDPOINT:-http://127.0.0.1:4566}"
LAMBDA_AWS_ENDPOINT_URL="${LAMBDA_AWS_ENDPOINT_URL:-http://localhost.localstack.cloud:4566}"
LOCALSTACK_ACCOUNT="${LOCALSTACK_ACCOUNT:-000000000000}"

STACK_NAME="${STACK_NAME:-tilesieve}"
TILES_BUCKET="${TILES_BUCKET:-$STACK_NAME-tiles-$LOCALSTACK_ACCOUNT-$AWS_DEFAULT_REGION}"
TILES_PREFIX="${TILES_PREFIX:-tiles/}"
JOURNAL_PREFIX="${JOURNAL_PREFIX:-_tilesieve/journal/}"
ADMIN_TOKEN="${ADMIN_TOKEN:-local-admin-token}"
TILES_FUNCTION="${TILES_FUNCTION:-$STACK_NAME-tiles}"
SYNC_WORKER="${SYNC_WORKER:-$STACK_NAME-sync-worker}"

# deploy.sh writes what smoke.sh needs here.
OUTPUTS_FILE="$BUILD_DIR/outputs.env"

log() { printf 'localstack: %s\n' "$*" >&2; }
die() { printf 'localstack: error: %s\n' "$*" >&2; exit 1; }

# awsls runs the AWS CLI against LocalStack: awslocal when installed, else aws.
awsls() {
	if command -v awslocal >/dev/null 2>&1; then
		AWS_ENDPOINT_URL="$LOCALSTACK_ENDPOINT" awslocal "$@"
	elif command -v aws >/dev/null 2>&1; then
		aws --endpoint-url "$LOCALSTACK_ENDPOINT" "$@"
	else
		die "neither awslocal (pip install awscli-local) nor aws (the AWS CLI) is installed"
	fi
}

# compose runs Docker Compose, as the plugin or as the older standalone binary.
compose() {
	if docker compose version >/dev/null 2>&1; then
		docker compose -f "$LS_DIR/docker-compose.yml" "$@"
	elif command -v docker-compose >/dev/null 2>&1; then
		docker-compose -f "$LS_DIR/docker-compose.yml" "$@"
	else
		die "Docker Compose is not installed (docker compose or docker-compose)"
	fi
}

# with_timeout SECONDS CMD...: runs CMD, killing it after SECONDS (no coreutils
# timeout on macOS).
with_timeout() {
	local secs="$1"
	shift
	if command -v timeout >/dev/null 2>&1; then
		timeout "$secs" "$@"
		return
	fi
	"$@" &
	local pid=$!
	(sleep "$secs" && kill "$pid" 2>/dev/null) &
	local watchdog=$!
	local rc=0
	wait "$pid" || rc=$?
	kill "$watchdog" 2>/dev/null || true
	wait "$watchdog" 2>/dev/null || true
	return "$rc"
}
