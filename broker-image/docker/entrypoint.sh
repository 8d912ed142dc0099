#!/bin/sh
# The broker image's entrypoint (run under tini, which forwards SIGTERM).
#
#   IMAGE                          the broker with /etc/tidelog/server.properties
#   IMAGE --override k=v ...       the same with tidelog-server options
#   IMAGE tidelog-server FILE ...  the broker with another file
#   IMAGE tidelog-zookeeper ...    ZooKeeper on 0.0.0.0:2181 with its data in
#                                  /var/lib/tidelog/zookeeper; later options win
#   IMAGE COMMAND ...              any other command
#
# The arguments of the server it starts go to /tmp/tidelog-healthcheck.args, from which
# the image's HEALTHCHECK (`tidelog-healthcheck @FILE`) knows what to check.
set -eu

config=/etc/tidelog/server.properties
args_file=/tmp/tidelog-healthcheck.args

if [ "$#" -eq 0 ]; then
    set -- tidelog-server "$config"
elif [ "${1#-}" != "$1" ]; then
    set -- tidelog-server "$config" "$@"
fi

# The file is a convenience for the HEALTHCHECK: a read-only /tmp must not stop a server.
record() { printf '%s\n' "$@" 2>/dev/null >"$args_file" || true; }

case "$1" in
tidelog-server)
    shift
    record "$@"
    exec tidelog-server "$@"
    ;;
tidelog-zookeeper)
    shift
    set -- --host 0.0.0.0 --port 2181 --data-dir /var/lib/tidelog/zookeeper "$@"
    host=0.0.0.0 port=2181 previous=""
    for arg in "$@"; do
        case "$previous" in --host) host="$arg" ;; --port) port="$arg" ;; esac
        case "$arg" in --host=*) host="${arg#--host=}" ;; --port=*) port="${arg#--port=}" ;; esac
        previous="$arg"
    done
    case "$host" in 0.0.0.0 | "") host=127.0.0.1 ;; esac
    record --zookeeper "$host:$port"
    exec tidelog-zookeeper "$@"
    ;;
esac
rm -f "$args_file" 2>/dev/null || true
exec "$@"
