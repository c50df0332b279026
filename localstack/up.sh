#!/usr/bin/env bash
# Starts LocalStack (docker-compose.yml beside this script) and waits until its
# init hooks have run, i.e. the tiles bucket exists.
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

bash "$LS_DIR/check-docker.sh"

log "starting ${LOCALSTACK_IMAGE:-localstack/localstack:4.14.0}"
compose up -d

log "waiting for LocalStack to be ready (at most ${LOCALSTACK_WAIT:-120} s)"
for _ in $(seq 1 "${LOCALSTACK_WAIT:-120}"); do
	if curl -fsS "$LOCALSTACK_ENDPOINT/_localstack/init/ready" 2>/dev/null | grep -q '"completed": *true'; then
		log "ready at $LOCALSTACK_ENDPOINT (bucket $TILES_BUCKET)"
		exit 0
	fi
	if [ "$(docker inspect -f '{{.State.Running}}' "${LOCALSTACK_DOCKER_NAME:-tilesieve-localstack}" 2>/dev/null)" != true ]; then
		compose logs --tail 40 localstack >&2 || true
		die "the LocalStack container stopped (exit code 55 means the image wants LOCALSTACK_AUTH_TOKEN)"
	fi
	sleep 1
done
compose logs --tail 40 localstack >&2 || true
die "LocalStack did not become ready"
