#!/usr/bin/env bash
# Builds the two bootstraps and deploys tilesieve into a running LocalStack
# (make localstack-up first). Re-running updates everything in place.
#
#   DEPLOY_MODE=auto  (default) samlocal when installed, else the AWS CLI
#   DEPLOY_MODE=sam   template.yaml through samlocal (pip install aws-sam-cli-local)
#   DEPLOY_MODE=cli   the same resources through awslocal / aws --endpoint-url
#
# The bootstraps are built for this machine's architecture, not the template's
# arm64: LocalStack runs each function in a Docker container on this machine, and
# with LAMBDA_IGNORE_ARCHITECTURE=1 (docker-compose.yml) that container is native,
# so an arm64 binary would only run on an x86 host through QEMU emulation, which
# Docker Desktop has but most Linux and CI hosts do not.
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

case "$(uname -m)" in
arm64 | aarch64) GOARCH_HOST=arm64 LAMBDA_ARCH=arm64 ;;
x86_64 | amd64) GOARCH_HOST=amd64 LAMBDA_ARCH=x86_64 ;;
*) die "unsupported host architecture $(uname -m)" ;;
esac

curl -fsS "$LOCALSTACK_ENDPOINT/_localstack/health" >/dev/null 2>&1 ||
	die "LocalStack does not answer at $LOCALSTACK_ENDPOINT (make localstack-up)"

# --- build -------------------------------------------------------------------------
build() { # build PACKAGE NAME: $BUILD_DIR/NAME/bootstrap and $BUILD_DIR/NAME.zip
	local pkg="$1" name="$2" out="$BUILD_DIR/$2"
	mkdir -p "$out"
	log "building ./$pkg for linux/$GOARCH_HOST"
	(cd "$ROOT_DIR" && CGO_ENABLED=0 GOOS=linux GOARCH="$GOARCH_HOST" \
		go build -trimpath -tags lambda.norpc -o "$out/bootstrap" "./$pkg")
	rm -f "$BUILD_DIR/$name.zip"
	if command -v zip >/dev/null 2>&1; then
		(cd "$out" && zip -q -X "$BUILD_DIR/$name.zip" bootstrap)
	else # zipfile keeps the executable bit
		(cd "$out" && python3 -m zipfile -c "$BUILD_DIR/$name.zip" bootstrap)
	fi
}
build functions/tiles tiles
build worker worker

mode="${DEPLOY_MODE:-auto}"
if [ "$mode" = auto ]; then
	if command -v samlocal >/dev/null 2>&1; then mode=sam; else mode=cli; fi
fi

write_outputs() { # write_outputs FUNCTION_URL
	cat >"$OUTPUTS_FILE" <<OUT
FUNCTION_URL=$1
TILES_BUCKET=$TILES_BUCKET
TILES_PREFIX=$TILES_PREFIX
JOURNAL_PREFIX=$JOURNAL_PREFIX
ADMIN_TOKEN=$ADMIN_TOKEN
OUT
	log "function URL: $1"
	log "outputs in $OUTPUTS_FILE"
}

# --- SAM ---------------------------------------------------------------------------
deploy_sam() {
	command -v samlocal >/dev/null 2>&1 || die "samlocal is not installed (pip install aws-sam-cli-local)"
	local sam_build="$BUILD_DIR/sam"
	# The tiles bucket belongs to the stack; the init hook made an empty one for the
	# CLI mode. Hand it over to CloudFormation on the first deploy when it is empty.
	if ! awsls cloudformation describe-stacks --stack-name "$STACK_NAME" >/dev/null 2>&1; then
		awsls s3api delete-bucket --bucket "$TILES_BUCKET" >/dev/null 2>&1 || true
	fi
	log "sam build (the Makefile's build-TilesFunction / build-SyncWorker targets)"
	(cd "$ROOT_DIR" && samlocal build --config-env localstack --build-dir "$sam_build" --cached --parallel)
	# Replace the template's arm64 bootstraps with this host's (see the top).
	cp "$BUILD_DIR/tiles/bootstrap" "$sam_build/TilesFunction/bootstrap"
	cp "$BUILD_DIR/worker/bootstrap" "$sam_build/SyncWorker/bootstrap"
	log "sam deploy of stack $STACK_NAME"
	# LocalStack sets AWS_ENDPOINT_URL in every Lambda container itself, so the
	# template, which must not set it, needs nothing more.
	(cd "$ROOT_DIR" && samlocal deploy --config-env localstack \
		--template-file "$sam_build/template.yaml" \
		--stack-name "$STACK_NAME" \
		--region "$AWS_DEFAULT_REGION" \
		--capabilities CAPABILITY_IAM \
		--resolve-s3 \
		--no-confirm-changeset \
		--no-fail-on-empty-changeset \
		--parameter-overrides \
		"TilesPrefix=$TILES_PREFIX" \
		"JournalPrefix=$JOURNAL_PREFIX" \
		S3ForcePathStyle=true \
		UrlAuthType=NONE \
		UrlInvokeMode=BUFFERED \
		CreateCdn=false \
		SyncInterval=1s \
		"AdminToken=$ADMIN_TOKEN" \
		ApplicationLogLevel=DEBUG)
	local url
	url="$(awsls cloudformation describe-stacks --stack-name "$STACK_NAME" \
		--query "Stacks[0].Outputs[?OutputKey=='TilesFunctionUrl'].OutputValue" --output text)"
	if [ -z "$url" ] || [ "$url" = None ]; then
		die "the stack has no TilesFunctionUrl output"
	fi
	write_outputs "$url"
}

# --- AWS CLI -------------------------------------------------------------------------
json_env() { # json_env K=V...: {"Variables": {...}} for --environment
	local sep="" kv k v
	printf '{"Variables":{'
	for kv in "$@"; do
		k="${kv%%=*}" v="${kv#*=}"
		v="${v//\\/\\\\}" v="${v//\"/\\\"}"
		printf '%s"%s":"%s"' "$sep" "$k" "$v"
		sep=,
	done
	printf '}}'
}

upsert_function() { # upsert_function NAME ZIP MEMORY TIMEOUT ENV_JSON
	local name="$1" zip="$2" mem="$3" timeout="$4" env="$5"
	if awsls lambda get-function --function-name "$name" >/dev/null 2>&1; then
		log "updating function $name"
		awsls lambda update-function-code --function-name "$name" --zip-file "fileb://$zip" >/dev/null
		awsls lambda wait function-updated-v2 --function-name "$name"
		awsls lambda update-function-configuration --function-name "$name" \
			--runtime provided.al2023 --handler bootstrap --memory-size "$mem" --timeout "$timeout" \
			--environment "$env" >/dev/null
		awsls lambda wait function-updated-v2 --function-name "$name"
	else
		log "creating function $name"
		awsls lambda create-function --function-name "$name" \
			--runtime provided.al2023 --handler bootstrap --architectures "$LAMBDA_ARCH" \
			--role "$ROLE_ARN" --zip-file "fileb://$zip" \
			--memory-size "$mem" --timeout "$timeout" --environment "$env" >/dev/null
		awsls lambda wait function-active-v2 --function-name "$name"
	fi
}

deploy_cli() {
	local region="$AWS_DEFAULT_REGION"
	if ! awsls s3api head-bucket --bucket "$TILES_BUCKET" >/dev/null 2>&1; then
		log "creating bucket $TILES_BUCKET"
		if [ "$region" = us-east-1 ]; then
			awsls s3api create-bucket --bucket "$TILES_BUCKET" >/dev/null
		else
			awsls s3api create-bucket --bucket "$TILES_BUCKET" \
				--create-bucket-configuration "LocationConstraint=$region" >/dev/null
		fi
	fi

	# The template's queues: S3 notifications (one record each) into the events
	# queue, whose visibility timeout is six times the worker's 60 s timeout plus a
	# minute, and messages received 20 times into the dead-letter queue.
	local dlq_url dlq_arn queue_url queue_arn
	dlq_url="$(awsls sqs create-queue --queue-name "$STACK_NAME-sync-dlq" \
		--attributes MessageRetentionPeriod=1209600 --query QueueUrl --output text)"
	dlq_arn="$(awsls sqs get-queue-attributes --queue-url "$dlq_url" \
		--attribute-names QueueArn --query Attributes.QueueArn --output text)"
	queue_url="$(awsls sqs create-queue --queue-name "$STACK_NAME-tile-events" --query QueueUrl --output text)"
	queue_arn="$(awsls sqs get-queue-attributes --queue-url "$queue_url" \
		--attribute-names QueueArn --query Attributes.QueueArn --output text)"
	local redrive="{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":\\\"20\\\"}"
	local policy="{\\\"Version\\\":\\\"2012-10-17\\\",\\\"Statement\\\":[{\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":{\\\"Service\\\":\\\"s3.amazonaws.com\\\"},\\\"Action\\\":\\\"sqs:SendMessage\\\",\\\"Resource\\\":\\\"$queue_arn\\\",\\\"Condition\\\":{\\\"ArnEquals\\\":{\\\"aws:SourceArn\\\":\\\"arn:aws:s3:::$TILES_BUCKET\\\"},\\\"StringEquals\\\":{\\\"aws:SourceAccount\\\":\\\"$LOCALSTACK_ACCOUNT\\\"}}}]}"
	awsls sqs set-queue-attributes --queue-url "$queue_url" --attributes \
		"{\"VisibilityTimeout\":\"420\",\"MessageRetentionPeriod\":\"345600\",\"RedrivePolicy\":\"$redrive\",\"Policy\":\"$policy\"}"

	# LocalStack does not enforce IAM by default; the role only has to exist.
	ROLE_ARN="arn:aws:iam::$LOCALSTACK_ACCOUNT:role/$STACK_NAME-lambda"
	if ! awsls iam get-role --role-name "$STACK_NAME-lambda" >/dev/null 2>&1; then
		awsls iam create-role --role-name "$STACK_NAME-lambda" --assume-role-policy-document \
			'{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}' >/dev/null
	fi

	local common=(
		"TILES_BUCKET=$TILES_BUCKET"
		"TILES_PREFIX=$TILES_PREFIX"
		"JOURNAL_PREFIX=$JOURNAL_PREFIX"
		"S3_FORCE_PATH_STYLE=true"
		"AWS_ENDPOINT_URL=$LAMBDA_AWS_ENDPOINT_URL"
		"LOG_LEVEL=debug"
	)
	upsert_function "$TILES_FUNCTION" "$BUILD_DIR/tiles.zip" 1024 30 "$(json_env "${common[@]}" \
		SYNC_INTERVAL=1s INVOKE_MODE=BUFFERED "ADMIN_TOKEN=$ADMIN_TOKEN")"
	upsert_function "$SYNC_WORKER" "$BUILD_DIR/worker.zip" 256 60 "$(json_env "${common[@]}")"

	# The function URL: public, buffered, with the template's CORS.
	local cors='{"AllowOrigins":["*"],"AllowMethods":["GET","HEAD"],"AllowHeaders":["If-None-Match","If-Modified-Since","Range"],"ExposeHeaders":["X-Cache","ETag","Server-Timing","Content-Length","Content-Range"],"MaxAge":86400}'
	if awsls lambda get-function-url-config --function-name "$TILES_FUNCTION" >/dev/null 2>&1; then
		awsls lambda update-function-url-config --function-name "$TILES_FUNCTION" \
			--auth-type NONE --invoke-mode BUFFERED --cors "$cors" >/dev/null
	else
		awsls lambda create-function-url-config --function-name "$TILES_FUNCTION" \
			--auth-type NONE --invoke-mode BUFFERED --cors "$cors" >/dev/null
		# What AWS requires of a public URL; LocalStack does not check it.
		awsls lambda add-permission --function-name "$TILES_FUNCTION" --statement-id url-public \
			--action lambda:InvokeFunctionUrl --principal '*' --function-url-auth-type NONE >/dev/null 2>&1 || true
	fi
	local url
	url="$(awsls lambda get-function-url-config --function-name "$TILES_FUNCTION" --query FunctionUrl --output text)"

	# The worker reads the queue through an event source mapping, as in the
	# template: batches of up to 1,000 notifications gathered for up to 5 s, partial
	# batch failures, one batch at a time.
	awsls lambda delete-function-event-invoke-config --function-name "$SYNC_WORKER" >/dev/null 2>&1 || true
	awsls lambda put-function-concurrency --function-name "$SYNC_WORKER" \
		--reserved-concurrent-executions 1 >/dev/null
	local esm
	esm="$(awsls lambda list-event-source-mappings --function-name "$SYNC_WORKER" \
		--event-source-arn "$queue_arn" --query 'EventSourceMappings[0].UUID' --output text)"
	if [ -z "$esm" ] || [ "$esm" = None ]; then
		awsls lambda create-event-source-mapping --function-name "$SYNC_WORKER" \
			--event-source-arn "$queue_arn" --batch-size 1000 --maximum-batching-window-in-seconds 5 \
			--function-response-types ReportBatchItemFailures >/dev/null
	else
		awsls lambda update-event-source-mapping --uuid "$esm" --batch-size 1000 \
			--maximum-batching-window-in-seconds 5 --function-response-types ReportBatchItemFailures >/dev/null
	fi
	# Changes under TILES_PREFIX only go to the queue (this replaces an older
	# deployment's direct S3 -> worker notification).
	local prefix_json="${TILES_PREFIX//\"/\\\"}"
	local filter="{\"Key\":{\"FilterRules\":[{\"Name\":\"prefix\",\"Value\":\"$prefix_json\"}]}}"
	awsls s3api put-bucket-notification-configuration --bucket "$TILES_BUCKET" \
		--notification-configuration "{\"QueueConfigurations\":[{\"Id\":\"tilesieve-tile-events\",\"QueueArn\":\"$queue_arn\",\"Events\":[\"s3:ObjectCreated:*\",\"s3:ObjectRemoved:*\",\"s3:LifecycleExpiration:*\"],\"Filter\":$filter}]}"
	awsls lambda remove-permission --function-name "$SYNC_WORKER" --statement-id s3-tile-changes >/dev/null 2>&1 || true
	log "S3 events under s3://$TILES_BUCKET/$TILES_PREFIX go to $queue_url, read by $SYNC_WORKER (failures to $dlq_url)"
	write_outputs "$url"
}

log "deploying with $mode"
case "$mode" in
sam) deploy_sam ;;
cli) deploy_cli ;;
*) die "DEPLOY_MODE=$mode: want auto, sam or cli" ;;
esac
