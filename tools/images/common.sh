# shellcheck shell=bash
# Shared by the scripts of tools/images/: sourced after setting `name` (the progress
# prefix) and `say_to` (1 for stdout, 2 for stderr).

say() { printf '%s: %s\n' "${name:?}" "$*" >&"${say_to:?}"; }
die() { printf '%s: %s\n' "${name:?}" "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v start="$1" -v end="$(now)" 'BEGIN { printf "%.1f s", end - start }'; }

# `"${as_root[@]}" command` runs command as root: directly, or through sudo.
as_root=()
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then
    as_root=(sudo)
fi
need_root() {
    [ "$(id -u)" -eq 0 ] || [ "${#as_root[@]}" -gt 0 ] || die "$1 needs root or sudo"
}

# Install Debian packages, running `apt-get update` first only when needed (a machine
# that never ran it knows no package yet). Usage: apt_install LOG PACKAGE...
apt_install() {
    local log=$1
    shift
    local install=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q
        --no-install-recommends "$@")
    "${install[@]}" >>"$log" 2>&1 ||
        { "${as_root[@]}" apt-get update -q >>"$log" 2>&1 && "${install[@]}" >>"$log" 2>&1; } ||
        die "installing $* failed; last lines of $log:
$(tail -n 15 "$log")"
}

# Export every NAME=VALUE argument of a script; anything else is a usage error.
export_assignments() {
    local assignment
    for assignment in "$@"; do
        case "$assignment" in
        *=*) export "${assignment?}" ;;
        *) echo "usage: $0 [NAME=VALUE ...]" >&2; exit 2 ;;
        esac
    done
}

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# Succeed when Docker has the image or pulls it within TIMEOUT seconds (no registry
# answers on some machines). Usage: image_available IMAGE TIMEOUT
image_available() {
    local image=$1 timeout=$2 started
    have_image "$image" && return 0
    started=$(now)
    if timeout "$timeout" docker pull --quiet "$image" >/dev/null 2>&1; then
        say "pulled $image ($(since "$started"))"
        return 0
    fi
    say "cannot pull $image ($(since "$started"))"
    return 1
}
