#!/usr/bin/env bash
# `make kind-node-image`: make sure the kind node image for KUBERNETES_VERSION exists and
# print its name on stdout (progress goes to stderr).
#
# The official image (KIND_NODE_IMAGE, default kindest/node:<version>) is used when
# Docker has it or can pull it. Where no registry answers, an equivalent is built once
# under LOCAL_NODE_IMAGE (default tidelog-kind-node:<version>) and rebuilt only when
# what it is made of changes (a digest of its inputs, kept as an image label):
#
#   - Kubernetes, etcd and CoreDNS binaries from the Go module proxy (make k8s-tools),
#     and a pause program of our own (tools/go/cmd/pause);
#   - one image per component, under the name kubeadm gives it (`kubeadm config images
#     list`): the static binary alone, except kube-proxy, which needs iptables;
#   - the node itself (tools/kind/node/Dockerfile): Debian's systemd, containerd, runc and
#     CNI plugins on the base image, our entrypoint and units, the component images
#     preloaded into containerd.
#
# Settings (environment or NAME=VALUE arguments): KUBERNETES_VERSION, ETCD_VERSION,
# COREDNS_VERSION (all required; the Makefile sets them), K8S_TOOLS (the cache of `make
# k8s-tools`), KIND_NODE_IMAGE, LOCAL_NODE_IMAGE, BASE_IMAGE (default debian:bookworm-slim,
# or the local stand-in of tools/images/base-image.sh), PULL_TIMEOUT (seconds, default 20),
# STAGING (default build/kind-node).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
images_tools="$repo/tools/images"
name=kind-node-image say_to=2
# shellcheck source=tools/images/common.sh
source "$images_tools/common.sh"
export_assignments "$@"

version=${KUBERNETES_VERSION:?set KUBERNETES_VERSION}
etcd_version=${ETCD_VERSION:?set ETCD_VERSION}
coredns_version=${COREDNS_VERSION:?set COREDNS_VERSION}
k8s_tools=${K8S_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tidelog/k8s}
official=${KIND_NODE_IMAGE:-kindest/node:$version}
local_image=${LOCAL_NODE_IMAGE:-tidelog-kind-node:$version}
pull_timeout=${PULL_TIMEOUT:-20}
staging=${STAGING:-$repo/build/kind-node}
kubernetes_bin="$k8s_tools/kubernetes-$version"
total_started=$(now)

"$images_tools/dockerd.sh" >&2

if image_available "$official" "$pull_timeout"; then
    echo "$official"
    exit 0
fi
say "using $local_image instead (built here)"

for binary in "$kubernetes_bin"/{kubeadm,kubelet,kubectl} "$k8s_tools/etcd-$etcd_version/etcd" \
    "$k8s_tools/coredns-$coredns_version/coredns"; do
    [ -x "$binary" ] || die "$binary is missing; run \`make k8s-tools\`"
done

# The images kubeadm deploys, with the names and tags it will ask the CRI for.
mapfile -t wanted < <("$kubernetes_bin/kubeadm" config images list --kubernetes-version "$version")
image_named() {
    local image
    for image in "${wanted[@]}"; do
        [[ "$image" == */"$1":* ]] && { echo "$image"; return; }
    done
    die "kubeadm $version deploys no $1 image (it lists: ${wanted[*]})"
}
etcd_image=$(image_named etcd)
coredns_image=$(image_named coredns)
pause_image=$(image_named pause)
[[ "${etcd_image##*:}" == "${etcd_version#v}-"* ]] ||
    die "kubeadm $version deploys $etcd_image, but ETCD_VERSION is $etcd_version"
[[ "${coredns_image##*:}" == "$coredns_version" ]] ||
    die "kubeadm $version deploys $coredns_image, but COREDNS_VERSION is $coredns_version"

# Inputs: when their digest matches the label of the image already built, nothing to do.
rm -rf "$staging"
mkdir -p "$staging/bin" "$staging/components"
(cd "$repo/tools/go" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "$staging/components/pause" ./cmd/pause) || die "building pause failed"
inputs_digest=$(
    {
        printf '%s\n' "$version" "${wanted[@]}"
        sha256sum "$kubernetes_bin"/* "$k8s_tools/etcd-$etcd_version/etcd" \
            "$k8s_tools/coredns-$coredns_version/coredns" "$staging/components/pause" | cut -c1-64
        (cd "$here/node" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
        cat "$0"
    } | sha256sum | cut -c1-16
)
built_digest=$(docker image inspect --format '{{ index .Config.Labels "dev.tidelog.inputs" }}' \
    "$local_image" 2>/dev/null || true)
if [ "$built_digest" = "$inputs_digest" ]; then
    say "$local_image is up to date ($(since "$total_started"))"
    echo "$local_image"
    exit 0
fi

started=$(now)
base=$(BASE_IMAGE=${BASE_IMAGE:-debian:bookworm-slim} "$images_tools/base-image.sh")
say "base image $base ($(since "$started"))"

# One image per component: FROM scratch with the static binary where kubeadm's manifests
# call it (a bare name on PATH for the control plane and etcd, /coredns as CoreDNS's
# entrypoint, /pause as the sandbox's).
component_image() {
    local image=$1 binary=$2 destination=$3 entrypoint=$4 context
    context="$staging/components/${image//[\/:]/_}"
    mkdir -p "$context"
    cp "$binary" "$context/"
    {
        echo "FROM scratch"
        echo "COPY ${binary##*/} $destination"
        echo "ENV PATH=/usr/local/bin:/usr/bin:/bin"
        if [ -n "$entrypoint" ]; then echo "ENTRYPOINT [\"$entrypoint\"]"; fi
    } >"$context/Dockerfile"
    docker build --quiet --tag "$image" "$context" >"$context/build.log" 2>&1 ||
        die "building $image failed: $(tail -n 5 "$context/build.log")"
}

started=$(now)
for image in "${wanted[@]}"; do
    case "$image" in
    */kube-proxy:*)
        context="$staging/components/kube-proxy"
        mkdir -p "$context"
        cp "$kubernetes_bin/kube-proxy" "$here/node/files/usr/local/bin/select-iptables" "$context/"
        docker build --quiet --tag "$image" --build-arg BASE_IMAGE="$base" \
            --file "$here/node/kube-proxy.Dockerfile" "$context" >"$context/build.log" 2>&1 ||
            die "building $image failed: $(tail -n 5 "$context/build.log")"
        ;;
    */kube-*:*)
        component=${image##*/}
        component=${component%%:*}
        component_image "$image" "$kubernetes_bin/$component" /usr/local/bin/ ""
        ;;
    "$etcd_image")
        component_image "$image" "$k8s_tools/etcd-$etcd_version/etcd" /usr/local/bin/ ""
        ;;
    "$coredns_image")
        component_image "$image" "$k8s_tools/coredns-$coredns_version/coredns" /coredns /coredns
        ;;
    "$pause_image")
        component_image "$image" "$staging/components/pause" /pause /pause
        ;;
    *) die "no recipe for kubeadm's image $image" ;;
    esac
done
docker save --output "$staging/images.tar" "${wanted[@]}"
say "component images ${wanted[*]##*/} ($(since "$started"))"

started=$(now)
cp -r "$here/node/files" "$staging/files"
cp "$kubernetes_bin"/{kubeadm,kubelet,kubectl} "$staging/bin/"
log="$staging/docker-build.log"
say "docker build $local_image (log $log)"
if ! docker build --file "$here/node/Dockerfile" --build-arg BASE_IMAGE="$base" \
    --build-arg KUBERNETES_VERSION="$version" --label "dev.tidelog.inputs=$inputs_digest" \
    --tag "$local_image" "$staging" >"$log" 2>&1; then
    tail -n 25 "$log" >&2
    die "docker build failed; see $log"
fi
rm -f "$staging/images.tar"
size=$(docker image inspect --format '{{.Size}}' "$local_image" | awk '{ printf "%.0f MB", $1 / 1e6 }')
say "built $local_image, $size ($(since "$started")); done ($(since "$total_started"))"
echo "$local_image"
