#!/usr/bin/env bash
# The first `make deploy`: asks for the few settings a first deployment needs, runs
# `sam deploy` with them, and on success records the stack name and region in
# samconfig.toml, so that later runs of `make deploy` are a plain `sam deploy`.
# Every other parameter keeps the template's default (CloudFront in front of an
# IAM-only function URL, a bucket of the stack's own); change one later with
#   sam deploy --parameter-overrides Name=Value
#
# Non-interactive use: set STACK_NAME, AWS_REGION and optionally ALARM_EMAIL,
# EXISTING_BUCKET, ALIASES, ACM_CERTIFICATE_ARN, then run with </dev/null.
set -euo pipefail
cd "$(dirname "$0")/../.."

SAM="${SAM:-sam}"
CONFIG=samconfig.toml

ask() { # ask VAR PROMPT DEFAULT: VAR from the environment, else the terminal, else DEFAULT
	local var="$1" prompt="$2" def="$3" answer=""
	if [ -n "${!var:-}" ]; then
		return
	fi
	if [ -t 0 ]; then
		read -r -p "$prompt [$def]: " answer
	fi
	printf -v "$var" '%s' "${answer:-$def}"
}

region_default="${AWS_REGION:-${AWS_DEFAULT_REGION:-$(aws configure get region 2>/dev/null || true)}}"

echo "tilesieve: first deployment (answers are kept in $CONFIG; empty keeps the default)"
ask STACK_NAME "Stack name (lower case letters, digits, hyphens; at most 29 characters)" tilesieve
if ! [[ "$STACK_NAME" =~ ^[a-z][a-z0-9-]{0,28}$ ]]; then
	echo "stack name '$STACK_NAME': want lower case letters, digits and hyphens, starting with a letter, at most 29 characters (it becomes part of the bucket name)" >&2
	exit 2
fi
ask AWS_REGION "AWS region" "${region_default:-eu-west-1}"
ask ALARM_EMAIL "E-mail for alarms (empty: none)" ""
ask EXISTING_BUCKET "Existing bucket to serve (empty: the stack creates one)" ""
ask ALIASES "Custom domain names, comma-separated (empty: the CloudFront domain)" ""
if [ -n "$ALIASES" ]; then
	ask ACM_CERTIFICATE_ARN "ACM certificate ARN in us-east-1 covering them" ""
fi

overrides=()
[ -n "${ALARM_EMAIL:-}" ] && overrides+=("AlarmEmail=$ALARM_EMAIL")
[ -n "${EXISTING_BUCKET:-}" ] && overrides+=("ExistingBucket=$EXISTING_BUCKET")
[ -n "${ALIASES:-}" ] && overrides+=("Aliases=$ALIASES")
[ -n "${ACM_CERTIFICATE_ARN:-}" ] && overrides+=("AcmCertificateArn=$ACM_CERTIFICATE_ARN")

args=(deploy --stack-name "$STACK_NAME" --region "$AWS_REGION")
if [ ${#overrides[@]} -gt 0 ]; then
	args+=(--parameter-overrides "${overrides[@]}")
fi
echo "+ $SAM ${args[*]}"
"$SAM" "${args[@]}"

# Only the stack name and region: the parameters now live in the stack.
cat >>"$CONFIG" <<TOML

[default.global.parameters]
stack_name = "$STACK_NAME"
region = "$AWS_REGION"
TOML
echo "recorded stack_name and region in $CONFIG: from now on \`make deploy\` runs \`sam deploy\`"
