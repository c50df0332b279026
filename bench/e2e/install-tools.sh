#!/usr/bin/env bash
# Installs the outside tools of the end-to-end benchmarks from Debian when
# any is missing: ab, wrk and nginx (serving from storage, archives), vips
# (the IIIF images section's pyramidal TIFF), IIPImage's iipsrv (its
# baseline) and perf (its profile of a cold run). Needs root (or sudo) and
# apt-get.
set -euo pipefail
missing=()
command -v ab >/dev/null 2>&1 || missing+=(apache2-utils)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
[ -x /usr/lib/iipimage-server/iipsrv.fcgi ] || missing+=(iipimage-server)
command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-tools: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
