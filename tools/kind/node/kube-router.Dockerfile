# kube-router for tidelog's e2e kind cluster (make kube-router-image,
# tools/kind/kube-router-image.sh): the NetworkPolicy enforcer that e2e/kube-router.yaml
# runs on every node, firewall only. It programs iptables and ipset, so the image has
# both, from the Debian release the node runs, and a wrapper first picks the iptables
# back end the node uses, as the kube-proxy image does (kube-proxy.Dockerfile).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        iptables ipset; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY select-iptables /usr/local/bin/select-iptables
COPY kube-router /usr/local/lib/kube-router/kube-router
RUN printf '%s\n' '#!/bin/sh' 'select-iptables >/dev/null' \
        'exec /usr/local/lib/kube-router/kube-router "$@"' >/usr/local/bin/kube-router; \
    chmod 0755 /usr/local/bin/kube-router
ENTRYPOINT ["/usr/local/bin/kube-router"]
