#!/usr/bin/env bash
# End-to-end check of a LocalStack deployment (make localstack-deploy first):
#   1. upload a tile under TILES_PREFIX
#   2. fetch it through the function URL (S3 -> disk -> memory)
#   3. fetch it again (a warm hit)
#   4. upload new bytes for the same key: S3 notifies the events queue, whose event
#      source mapping hands the notification to the sync worker, which writes a
#      purge journal entry
#   5. poll the function URL (bounded) until it serves the new bytes: the function
#      instance has read the journal and dropped its cached copy
# Prints each step; exits non-zero when a step fails.
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

[ -f "$OUTPUTS_FILE" ] || die "no $OUTPUTS_FILE: run make localstack-deploy first"
# shellcheck disable=SC1090
. "$OUTPUTS_FILE"

KEY="${SMOKE_KEY:-demo/3/4/2.png}"
S3_KEY="$TILES_PREFIX$KEY"
FIRST_WAIT="${SMOKE_FIRST_WAIT:-120}" # the first call pulls the runtime image
PURGE_WAIT="${SMOKE_PURGE_WAIT:-60}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# FUNCTION_URL looks like http://<url-id>.lambda-url.<region>.localhost.localstack.cloud:4566/
# *.localhost.localstack.cloud resolves to 127.0.0.1 through public DNS; --resolve
# makes that hold offline too.
hostport="${FUNCTION_URL#*://}"
hostport="${hostport%%/*}"
host="${hostport%%:*}"
port="${hostport##*:}"
[ "$port" != "$hostport" ] || port=80
base="${FUNCTION_URL%/}"
lshost="${LOCALSTACK_ENDPOINT#*://}"
lsaddr="${lshost%%:*}"
[ "$lsaddr" = localhost ] && lsaddr=127.0.0.1

step() { printf '\n== %s\n' "$*"; }

# fetch: GET $base/$KEY into $tmp/body and $tmp/headers; prints the status code.
fetch() {
	curl -sS --max-time 30 --resolve "$host:$port:$lsaddr" \
		-D "$tmp/headers" -o "$tmp/body" -w '%{http_code}' "$base/$KEY" 2>"$tmp/curl.err" || true
}

header() { grep -i "^$1:" "$tmp/headers" 2>/dev/null | head -1 | cut -d' ' -f2- | tr -d '\r'; }

fail() {
	printf 'FAIL: %s\n' "$*"
	[ -s "$tmp/headers" ] && { echo "-- last response headers"; cat "$tmp/headers"; }
	[ -s "$tmp/curl.err" ] && { echo "-- curl"; cat "$tmp/curl.err"; }
	echo "-- logs: docker logs ${LOCALSTACK_DOCKER_NAME:-tilesieve-localstack} (and the Lambda containers it started)"
	exit 1
}

put() { # put FILE
	awsls s3api put-object --bucket "$TILES_BUCKET" --key "$S3_KEY" --body "$1" \
		--content-type image/png --cache-control "public, max-age=60" >/dev/null ||
		fail "upload of s3://$TILES_BUCKET/$S3_KEY"
}

# wait_for FILE SECONDS: poll until the URL serves FILE's bytes.
wait_for() {
	local want="$1" secs="$2" i code
	for i in $(seq 1 "$secs"); do
		code="$(fetch)"
		if [ "$code" = 200 ] && cmp -s "$want" "$tmp/body"; then
			printf 'after %d s: 200, %s bytes, X-Cache: %s, ETag: %s\n' "$i" "$(wc -c <"$tmp/body" | tr -d ' ')" "$(header X-Cache)" "$(header ETag)"
			return 0
		fi
		[ "$i" -eq 1 ] || [ $((i % 10)) -ne 0 ] || printf '  %d s: status %s, X-Cache: %s\n' "$i" "$code" "$(header X-Cache)"
		sleep 1
	done
	return 1
}

stamp="$(date +%s)-$$"
printf 'tilesieve smoke tile v1 %s\n' "$stamp" >"$tmp/v1.png"
printf 'tilesieve smoke tile v2 %s (new bytes)\n' "$stamp" >"$tmp/v2.png"

echo "function URL: $FUNCTION_URL"
echo "tile:         $base/$KEY  <-  s3://$TILES_BUCKET/$S3_KEY"

step "1. upload v1"
put "$tmp/v1.png"
echo "uploaded $(wc -c <"$tmp/v1.png" | tr -d ' ') bytes"

step "2. GET through the function URL (cold start: up to $FIRST_WAIT s)"
wait_for "$tmp/v1.png" "$FIRST_WAIT" || fail "the function URL did not serve v1 (last status $(fetch))"

step "3. GET again (warm)"
code="$(fetch)"
if [ "$code" != 200 ] || ! cmp -s "$tmp/v1.png" "$tmp/body"; then
	fail "second GET: status $code or other bytes"
fi
printf '200, X-Cache: %s, Server-Timing: %s\n' "$(header X-Cache)" "$(header Server-Timing)"

step "4. upload v2 (S3 -> queue -> sync worker, which appends to the purge journal)"
put "$tmp/v2.png"
start="$(date +%s)"
echo "uploaded $(wc -c <"$tmp/v2.png" | tr -d ' ') bytes"

step "5. poll until the function serves v2 (at most $PURGE_WAIT s)"
wait_for "$tmp/v2.png" "$PURGE_WAIT" ||
	fail "still not serving v2 after $PURGE_WAIT s: the purge did not reach the function (worker logs, journal under s3://$TILES_BUCKET/$JOURNAL_PREFIX)"
# shellcheck disable=SC2016 # a JMESPath literal, not a shell expansion
echo "journal entries: $(awsls s3api list-objects-v2 --bucket "$TILES_BUCKET" --prefix "$JOURNAL_PREFIX" --query 'length(Contents || `[]`)' --output text 2>/dev/null || echo '?')"

printf '\nPASS: upload -> S3 event -> queue -> worker -> journal -> function purge -> new bytes in %s s\n' "$(($(date +%s) - start))"
