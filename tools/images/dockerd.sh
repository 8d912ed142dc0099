#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info`.
#
# On a machine with Docker running (the usual case) this returns at once. Otherwise it
# installs Debian's docker.io when dockerd is missing, starts dockerd in the background
# (log and pid in ${XDG_CACHE_HOME:-$HOME/.cache}/tidelog/) and waits until it answers.
# Running it again is harmless: a dockerd it started earlier is reused, never doubled.
#
# Environment: DOCKERD_START_TIMEOUT (seconds, default 60).
set -euo pipefail

cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/tidelog"
log_file="$cache_dir/dockerd.log"
pid_file="$cache_dir/dockerd.pid"
timeout="${DOCKERD_START_TIMEOUT:-60}"

name=dockerd say_to=1
# shellcheck source=tools/images/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
answers() { docker info >/dev/null 2>&1; }

if answers; then
    exit 0
fi

command -v docker >/dev/null || missing_cli=1
if ! command -v dockerd >/dev/null || [ -n "${missing_cli:-}" ]; then
    command -v apt-get >/dev/null || die "no Docker engine and no apt-get to install one"
    need_root "installing Docker"
    mkdir -p "$cache_dir"
    apt_log="$cache_dir/docker-install.log"
    started=$(now)
    say "installing Debian's docker.io (log $apt_log)"
    : >"$apt_log"
    apt_install "$apt_log" docker.io iptables
    say "installed docker.io ($(since "$started"))"
fi

mkdir -p "$cache_dir"
pid=""
if [ -f "$pid_file" ]; then
    pid=$(cat "$pid_file")
    # Only a dockerd we started ourselves counts; a recycled pid is someone else's.
    if ! { kill -0 "$pid" 2>/dev/null && grep -qa dockerd "/proc/$pid/cmdline"; }; then
        pid=""
    fi
fi

started=$(now)
if [ -z "$pid" ]; then
    if pgrep -x dockerd >/dev/null; then
        say "a dockerd runs but does not answer yet; waiting for it"
    else
        need_root "starting dockerd"
        say "starting dockerd (log $log_file)"
        # setsid: the engine outlives this shell and is not stopped by its Ctrl-C.
        "${as_root[@]}" setsid dockerd >>"$log_file" 2>&1 </dev/null &
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
