# kube-proxy for tidelog's kind node image (tools/kind/node-image.sh): kubeadm's DaemonSet
# runs /usr/local/bin/kube-proxy, which programs iptables and cleans conntrack entries, so
# the image has both; a wrapper first picks the iptables back end the node uses.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN set -eux; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        iptables conntrack; \
    apt-get clean; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY select-iptables /usr/local/bin/select-iptables
COPY kube-proxy /usr/local/lib/kube-proxy/kube-proxy
RUN printf '%s\n' '#!/bin/sh' 'select-iptables >/dev/null' \
        'exec /usr/local/lib/kube-proxy/kube-proxy "$@"' >/usr/local/bin/kube-proxy; \
    chmod 0755 /usr/local/bin/kube-proxy
