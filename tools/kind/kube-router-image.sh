#!/usr/bin/env bash
# `make kube-router-image`: make sure the image of kube-router, the e2e cluster's
# NetworkPolicy enforcer, exists as IMAGE, and print its name on stdout (progress goes to
# stderr). It is tools/kind/node/kube-router.Dockerfile on Debian bookworm with the
# binary of `make k8s-tools`; e2e/kind_cluster.py loads it into every node of the cluster
# and runs it (e2e/kube-router.yaml). It is rebuilt only when what it is made of changes
# (a digest of its inputs, kept as an image label).
#
# Settings (environment or NAME=VALUE arguments): IMAGE and BINARY (both required; the
# Makefile sets them), BASE_IMAGE (default debian:bookworm-slim, or the local stand-in of
# tools/images/base-image.sh), STAGING (default build/kube-router-image).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
images_tools="$repo/tools/images"
name=kube-router-image say_to=2
# shellcheck source=tools/images/common.sh
source "$images_tools/common.sh"
export_assignments "$@"

image=${IMAGE:?set IMAGE}
binary=${BINARY:?set BINARY}
staging=${STAGING:-$repo/build/kube-router-image}
dockerfile="$here/node/kube-router.Dockerfile"
select_iptables="$here/node/files/usr/local/bin/select-iptables"
started=$(now)

[ -x "$binary" ] || die "$binary is missing; run \`make k8s-tools\`"
"$images_tools/dockerd.sh" >&2

inputs_digest=$(sha256sum "$binary" "$select_iptables" "$dockerfile" "$0" | cut -c1-64 |
    sha256sum | cut -c1-16)
built_digest=$(docker image inspect --format '{{ index .Config.Labels "dev.tidelog.inputs" }}' \
    "$image" 2>/dev/null || true)
if [ "$built_digest" = "$inputs_digest" ]; then
    say "$image is up to date"
    echo "$image"
    exit 0
fi

base=$(BASE_IMAGE=${BASE_IMAGE:-debian:bookworm-slim} "$images_tools/base-image.sh")
rm -rf "$staging"
mkdir -p "$staging"
cp "$binary" "$select_iptables" "$staging/"
log="$staging/build.log"
docker build --file "$dockerfile" --build-arg BASE_IMAGE="$base" \
    --label "dev.tidelog.inputs=$inputs_digest" --tag "$image" "$staging" >"$log" 2>&1 ||
    die "building $image failed: $(tail -n 15 "$log")"
say "built $image on $base ($(since "$started"))"
echo "$image"
