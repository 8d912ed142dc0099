#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info` and can run privileged containers
# (kind's nodes are privileged).
#
# On a machine with Docker running (the usual case) this returns at once. Otherwise it
# installs Debian's docker.io when dockerd is missing, starts dockerd in the background
# (log and pid in ${XDG_CACHE_HOME:-$HOME/.cache}/tidelog/) and waits until it answers.
# Running it again is harmless: a dockerd it started earlier is reused, never doubled.
#
# Privileged containers on a machine whose capability bounding set lacks capabilities
# (CapBnd in /proc/self/status; seen: CAP_SYS_RESOURCE missing) fail with "unable to
# apply caps: operation not permitted". Only there, the dockerd this script starts gets
# a default runtime of its own, tidelog-runc (tools/go/cmd/tidelog-runc), which drops
# those capabilities from each container's spec and runs the real runc. An engine this
# script did not start is never changed: it only gets a warning with what to do.
#
# Environment: DOCKERD_START_TIMEOUT (seconds, default 60).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/tidelog"
log_file="$cache_dir/dockerd.log"
pid_file="$cache_dir/dockerd.pid"
timeout="${DOCKERD_START_TIMEOUT:-60}"
runtime_name=tidelog-runc

name=dockerd say_to=1
# shellcheck source=tools/images/common.sh
source "$here/common.sh"
answers() { docker info >/dev/null 2>&1; }

# True when the bounding set lacks a capability this kernel has.
bounding_set_is_short() {
    local last bounding
    last=$(cat /proc/sys/kernel/cap_last_cap)
    bounding=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
    [ $(( 0x$bounding )) -ne $(( (1 << (last + 1)) - 1 )) ]
}

# The pid of a dockerd this script started and that still runs, or "".
our_dockerd() {
    local pid
    [ -f "$pid_file" ] || return 0
    pid=$(cat "$pid_file")
    # A recycled pid is someone else's.
    if kill -0 "$pid" 2>/dev/null && grep -qa dockerd "/proc/$pid/cmdline"; then
        echo "$pid"
    fi
}

# Build tidelog-runc once per version of its source; print its path.
capability_runtime() {
    local source="$here/../go" digest binary real_runc
    real_runc=$(command -v runc) || die "no runc on PATH for $runtime_name to call"
    digest=$(cat "$source/go.mod" "$source"/cmd/tidelog-runc/*.go | sha256sum | cut -c1-12)
    binary="$cache_dir/tidelog-runc-$digest/tidelog-runc"
    if [ ! -x "$binary" ]; then
        command -v go >/dev/null || die "building $runtime_name needs Go"
        (cd "$source" && CGO_ENABLED=0 go build -ldflags "-X main.realRuntime=$real_runc" \
            -o "$binary.partial" ./cmd/tidelog-runc) || die "building $runtime_name failed"
        mv "$binary.partial" "$binary"
    fi
    echo "$binary"
}

mkdir -p "$cache_dir"
dockerd_options=()
if bounding_set_is_short; then
    need_runtime=1
fi

if answers; then
    default_runtime=$(docker info --format '{{.DefaultRuntime}}')
    if [ -z "${need_runtime:-}" ] || [ "$default_runtime" = "$runtime_name" ]; then
        exit 0
    fi
    pid=$(our_dockerd)
    if [ -z "$pid" ]; then
        say "warning: this machine's capability bounding set lacks capabilities, so" \
            "privileged containers (kind's nodes) fail on this engine; register" \
            "tools/go/cmd/tidelog-runc as its default runtime (see docs/images-and-kubernetes-tools.md)"
        exit 0
    fi
    say "restarting the dockerd started earlier (pid $pid) with $runtime_name"
    "${as_root[@]}" kill "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
fi

command -v docker >/dev/null || missing_cli=1
if ! command -v dockerd >/dev/null || [ -n "${missing_cli:-}" ]; then
    command -v apt-get >/dev/null || die "no Docker engine and no apt-get to install one"
    need_root "installing Docker"
    apt_log="$cache_dir/docker-install.log"
    started=$(now)
    say "installing Debian's docker.io (log $apt_log)"
    : >"$apt_log"
    apt_install "$apt_log" docker.io iptables
    say "installed docker.io ($(since "$started"))"
fi

if [ -n "${need_runtime:-}" ]; then
    runtime=$(capability_runtime)
    dockerd_options=(--add-runtime "$runtime_name=$runtime" --default-runtime "$runtime_name")
    say "the capability bounding set lacks capabilities: containers run through $runtime"
fi

started=$(now)
pid=$(our_dockerd)
if [ -z "$pid" ]; then
    if pgrep -x dockerd >/dev/null; then
        say "a dockerd runs but does not answer yet; waiting for it"
    else
        need_root "starting dockerd"
        say "starting dockerd (log $log_file)"
        # setsid: the engine outlives this shell and is not stopped by its Ctrl-C.
        "${as_root[@]}" setsid dockerd "${dockerd_options[@]}" >>"$log_file" 2>&1 </dev/null &
        pid=$!
        echo "$pid" >"$pid_file"
    fi
fi

deadline=$(( $(date +%s) + timeout ))
until answers; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
        die "dockerd exited while starting; last lines of $log_file:
$(tail -n 15 "$log_file")"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
        # E.g. a socket this user may not use: `docker info` says so.
        die "dockerd did not answer within ${timeout} s ($(docker info 2>&1 | tail -n 1));" \
            "see $log_file"
    fi
    sleep 0.5
done
say "engine answers ($(since "$started"))"
