#!/usr/bin/env bash
# Build one Kubernetes-side tool from its Go modules into the cache, keyed by version:
#
#   tools/k8s/build.sh TOOL VERSION CACHE_DIR
#
# TOOL is kubernetes (the control plane, kubelet, kubeadm, kube-proxy and kubectl from
# one source tree), etcd, coredns, helm, kind or kube-router (the e2e cluster's
# NetworkPolicy enforcer, built in the module tools/kube-router/, which raises some of its
# dependencies). The binaries land in CACHE_DIR/TOOL-VERSION/ and a `.complete` stamp,
# listing them, marks a finished build: a second call returns at once, unless the build
# now makes a binary the stamp lacks (or, for kube-router, its go.mod or go.sum changed).
# Everything is linked statically (CGO_ENABLED=0): the kind node image runs these
# binaries in images that hold nothing else.
#
# Only the Go module proxy is needed: this is how the tools are fetched on a machine
# that reaches no other download site. With internet access, the projects' released
# binaries (or a package manager) give the same versions; see docs/images-and-kubernetes-tools.md.
set -euo pipefail

tool=$1
version=$2
cache_dir=$3
dest="$cache_dir/$tool-$version"

kubernetes_commands=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet
    kubeadm kubectl)
case "$tool" in
    kubernetes) binaries=("${kubernetes_commands[@]}") ;;
    *) binaries=("$tool") ;;
esac
stamp="${binaries[*]}"
kube_router_module=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kube-router" && pwd)
if [[ "$tool" == kube-router ]]; then
    stamp+=" $(cat "$kube_router_module/go.mod" "$kube_router_module/go.sum" | sha256sum | cut -c1-16)"
fi
if [[ -f "$dest/.complete" ]] && [[ "$(cat "$dest/.complete")" == "$stamp" ]]; then
    exit 0
fi
export CGO_ENABLED=0

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
rm -rf "$dest"
mkdir -p "$dest"
started=$SECONDS

# The source tree of module PATH@VERSION, copied out of the read-only module cache so
# that its go.mod can be edited.
module_tree() {
    local dir
    dir=$(cd "$work" && go mod download -json "$1@$2" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
    cp -r "$dir" "$work/src"
    chmod -R u+w "$work/src"
    echo "$work/src"
}

case "$tool" in
    kind)
        GOBIN="$dest" go install "sigs.k8s.io/kind@$version"
        ;;
    helm)
        GOBIN="$dest" go install \
            -ldflags "-X helm.sh/helm/v3/internal/version.version=$version" \
            "helm.sh/helm/v3/cmd/helm@$version"
        ;;
    coredns)
        # kubeadm's Corefile uses plugins of CoreDNS's default build only.
        GOBIN="$dest" go install \
            -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$version" \
            "github.com/coredns/coredns@$version"
        ;;
    etcd)
        # The server module's go.mod points its sibling modules at ../ paths of the etcd
        # repository; without them the released versions of those modules are used.
        src=$(module_tree go.etcd.io/etcd/server/v3 "$version")
        sed -i '/^replace (/,/^)/d' "$src/go.mod"
        (cd "$src" && go build -mod=mod -o "$dest/etcd" .)
        ;;
    kubernetes)
        # k8s.io/kubernetes replaces its k8s.io/* libraries with ./staging copies that the
        # module zip does not carry; the published staging modules have the same code
        # under the version v0.<minor>.<patch>.
        src=$(module_tree k8s.io/kubernetes "$version")
        rm -rf "$src/go.work" "$src/go.work.sum" "$src/vendor"
        staging_version="v0.${version#v1.}"
        sed -i -E "s#^(\s*)(k8s\.io/[a-z0-9-]+) => \./staging/src/k8s\.io/[a-z0-9-]+#\1\2 => \2 $staging_version#" \
            "$src/go.mod"
        minor=$(echo "$version" | cut -d. -f2)
        ldflags="-s -w"
        for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
            ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
            ldflags+=" -X $pkg.gitTreeState=clean"
        done
        (cd "$src" && go build -mod=mod -ldflags "$ldflags" -o "$dest/" \
            "${kubernetes_commands[@]/#/./cmd/}")
        ;;
    kube-router)
        # The command of kube-router's module built with the requirements of ours, whose
        # go.sum pins every module; ours must name the VERSION asked for.
        upstream=github.com/cloudnativelabs/kube-router/v2
        required=$(cd "$kube_router_module" && go list -m -f '{{.Version}}' "$upstream")
        if [[ "$required" != "$version" ]]; then
            echo "tools/k8s/build.sh: tools/kube-router/go.mod requires kube-router $required, not $version" >&2
            exit 2
        fi
        (cd "$kube_router_module" && go build -ldflags "-s -w -X $upstream/pkg/version.Version=$version" \
            -o "$dest/kube-router" "$upstream/cmd/kube-router")
        ;;
    *)
        echo "tools/k8s/build.sh: unknown tool $tool" >&2
        exit 2
        ;;
esac

for binary in "${binaries[@]}"; do
    [[ -x "$dest/$binary" ]] || { echo "tools/k8s/build.sh: $binary was not built" >&2; exit 1; }
done
echo "$stamp" >"$dest/.complete"
echo "built $tool $version in $((SECONDS - started)) s: ${binaries[*]}"
