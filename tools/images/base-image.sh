#!/usr/bin/env bash
# Print the name of the base image the broker image builds on, making sure it exists.
#
# BASE_IMAGE (default python:3.11-slim-bookworm) is used when Docker has it or can pull
# it. Without a reachable registry, a local stand-in is built once and then reused:
# LOCAL_BASE_IMAGE (default tidelog-base:bookworm-python3.11), Debian bookworm from
# `debootstrap --variant=minbase` with python3, python3-venv and ca-certificates,
# brought in with `docker import`. Debian's mirror is the one this host's apt uses
# (sources.list, sources.list.d, one-line or deb822), or DEBIAN_MIRROR if set.
#
# Progress goes to stderr; stdout holds only the image name. Needs a running Docker
# engine (tools/images/dockerd.sh) and, for the local build, root or sudo.
#
# Environment: BASE_IMAGE, LOCAL_BASE_IMAGE, PULL_TIMEOUT (seconds, default 20),
# DEBIAN_MIRROR, DEBIAN_SUITE (default bookworm).
set -euo pipefail

base_image="${BASE_IMAGE:-python:3.11-slim-bookworm}"
local_image="${LOCAL_BASE_IMAGE:-tidelog-base:bookworm-python3.11}"
pull_timeout="${PULL_TIMEOUT:-20}"
suite="${DEBIAN_SUITE:-bookworm}"

name=base-image say_to=2
# shellcheck source=tools/images/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if image_available "$base_image" "$pull_timeout"; then
    echo "$base_image"
    exit 0
fi
say "using $local_image instead"
if have_image "$local_image"; then
    echo "$local_image"
    exit 0
fi

# `deb URI SUITE` lines for every repository of $suite this host's apt knows (apt
# itself parses its configuration, so both formats and disabled files are handled).
host_repositories() {
    # shellcheck disable=SC2016 # apt's own $(...) placeholders, not the shell's
    apt-get indextargets --no-release-info \
        --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)' 2>/dev/null |
        awk -v suite="$suite" '$1 == "deb" && ($3 == suite || index($3, suite "-") == 1)' |
        sort -u
}

mirror="${DEBIAN_MIRROR:-}"
repositories=""
if [ -z "$mirror" ]; then
    command -v apt-get >/dev/null || die "no apt here to take Debian's mirror from; set DEBIAN_MIRROR"
    repositories=$(host_repositories)
    mirror=$(awk -v suite="$suite" '$3 == suite { print $2; exit }' <<<"$repositories")
    [ -n "$mirror" ] || die "this host's apt has no $suite repository; set DEBIAN_MIRROR"
fi
if [ -z "$repositories" ]; then
    repositories="deb $mirror $suite main"
fi

need_root "building $local_image"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/tidelog-base.XXXXXX")
root="$work/root"
cleanup() {
    "${as_root[@]}" umount "$root/proc" 2>/dev/null || true
    "${as_root[@]}" rm -rf "$work"
}
trap cleanup EXIT

if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    apt_install "$work/apt.log" debootstrap
fi

started=$(now)
say "debootstrap $suite from $mirror (log $work/debootstrap.log)"
if ! "${as_root[@]}" debootstrap --variant=minbase --components=main \
    --include=python3,python3-venv,ca-certificates "$suite" "$root" "$mirror" \
    >"$work/debootstrap.log" 2>&1; then
    tail -n 15 "$work/debootstrap.log" >&2
    die "debootstrap failed"
fi
say "debootstrap done ($(since "$started"))"

# The image's apt uses the same repositories as the host, updates and security included,
# and takes their fixes now.
started=$(now)
awk '{ print $1, $2, $3, $4 }' <<<"$repositories" |
    "${as_root[@]}" tee "$root/etc/apt/sources.list" >/dev/null
"${as_root[@]}" mount -t proc proc "$root/proc"
"${as_root[@]}" chroot "$root" /bin/sh -ec '
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get upgrade -y -q
    apt-get clean
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
    rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/*
' >"$work/upgrade.log" 2>&1 || { tail -n 15 "$work/upgrade.log" >&2; die "apt-get upgrade failed"; }
"${as_root[@]}" umount "$root/proc"
say "updates applied ($(since "$started"))"

started=$(now)
"${as_root[@]}" tar --numeric-owner -C "$root" -c . |
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' \
        --message "debootstrap --variant=minbase $suite + python3, python3-venv, ca-certificates" \
        - "$local_image" >/dev/null
say "imported $local_image ($(since "$started"))"
echo "$local_image"
