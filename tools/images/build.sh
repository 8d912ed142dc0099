#!/usr/bin/env bash
# `make images`: build the broker image (by default tidelog-broker:<version>, and :latest),
# the operator image (tidelog-operator:<version>, and :latest) and the Spark image
# (tidelog-spark:<version>, and :latest).
#
#   tools/images/build.sh [NAME=VALUE ...]
#
# Steps: a Docker engine (dockerd.sh) → the base image (base-image.sh) → a staging
# directory with the wheels of tidelog[broker], ZooKeeper's jars and broker-image/docker/
# → docker build -f broker-image/Dockerfile <staging>; then a staging directory with the
# wheels of tidelog[operator] → docker build -f operator/Dockerfile; then one with the
# wheels of tidelog[spark] and the Spark connector's jars → docker build -f
# spark/Dockerfile. A second run with
# nothing changed reuses Docker's layer cache and takes seconds.
#
# Settings, from the environment or as NAME=VALUE arguments:
#   PYTHON          the venv's python, whose pip builds the wheels (default .venv/bin/python);
#                   its version must be the base image's (3.11)
#   ZOOKEEPER_LIBS  ZooKeeper's jars (default: the newest complete
#                   ${XDG_CACHE_HOME:-~/.cache}/tidelog/zookeeper-*/libs, `make zookeeper-libs`)
#   BASE_IMAGE      default python:3.11-slim-bookworm; a local Debian stand-in is built when
#                   it cannot be pulled (base-image.sh)
#   IMAGE           the tag, default tidelog-broker:<version>; :latest is tagged beside it
#   OPERATOR_IMAGE  the operator's tag, default tidelog-operator:<version>, and :latest
#   SPARK_IMAGE     the Spark image's tag, default tidelog-spark:<version>, and :latest
#   SPARK_LIBS      the Kafka connector's jars for the venv's PySpark (default
#                   ${XDG_CACHE_HOME:-~/.cache}/tidelog/spark-<version>/libs, `make spark-libs`)
#   NATIVE_WHEELS   the wheel of the log cleaner's compiled helper (default build/native,
#                   `make native`), installed in the broker image
#   STAGING         default build/images/broker (the others: build/images/operator, .../spark)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

name=images say_to=1
# shellcheck source=tools/images/common.sh
source "$here/common.sh"
export_assignments "$@"

python="${PYTHON:-.venv/bin/python}"
staging="${STAGING:-build/images/broker}"
cache_dir="${XDG_CACHE_HOME:-$HOME/.cache}/tidelog"
total_started=$(now)

[ -x "$python" ] || die "no python at $python (run \`make setup\`, or set PYTHON)"
version=$("$python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
tag="${IMAGE:-tidelog-broker:$version}"
operator_tag="${OPERATOR_IMAGE:-tidelog-operator:$version}"
operator_staging="$(dirname "$staging")/operator"
spark_tag="${SPARK_IMAGE:-tidelog-spark:$version}"
spark_staging="$(dirname "$staging")/spark"
spark_version=$("$python" -c 'import pyspark; print(pyspark.__version__)') ||
    die "PySpark is not installed in $python's venv (run \`make setup\`)"
spark_libs="${SPARK_LIBS:-$cache_dir/spark-$spark_version/libs}"
compgen -G "$spark_libs/spark-sql-kafka-0-10_*-$spark_version.jar" >/dev/null ||
    die "Spark's Kafka connector is not in $spark_libs; run \`make spark-libs\`"

native_wheels="${NATIVE_WHEELS:-build/native}"
compgen -G "$native_wheels/tidelog_native-*.whl" >/dev/null ||
    die "the log cleaner's helper is not built in $native_wheels; run \`make native\`"

zookeeper_libs="${ZOOKEEPER_LIBS:-}"
if [ -z "$zookeeper_libs" ]; then
    complete=$(printf '%s\n' "$cache_dir"/zookeeper-*/libs/.complete | sort -V | tail -n 1)
    [ -e "$complete" ] && zookeeper_libs="${complete%/.complete}"
fi
if [ -z "$zookeeper_libs" ] || ! compgen -G "$zookeeper_libs/zookeeper-[0-9]*.jar" >/dev/null; then
    die "ZooKeeper's jars are not in ${zookeeper_libs:-$cache_dir/zookeeper-<version>/libs}; run \`make zookeeper-libs\`"
fi

step=$(now)
"$here/dockerd.sh"
say "docker engine ready ($(since "$step"))"

step=$(now)
base=$("$here/base-image.sh")
say "base image $base ($(since "$step"))"

# The wheels are built here for the image's Python: both must be the same version.
image_python=$(docker run --rm --entrypoint python3 "$base" \
    -c 'import sys; print("%d.%d" % sys.version_info[:2])')
host_python=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[ "$image_python" = "$host_python" ] ||
    die "$python is Python $host_python but $base has Python $image_python; set PYTHON"

step=$(now)
build_dir=$(dirname "$staging")
source_copy="$build_dir/tidelog-source"
rm -rf "$staging" "$source_copy"
mkdir -p "$staging/wheels/deps" "$staging/wheels/tidelog" "$staging/zookeeper/libs" \
    "$staging/docker" "$source_copy"
# What the wheel is made of, copied, so that setuptools' build/ never leaks stale files
# into it. A fixed timestamp makes an unchanged tree give a byte-identical wheel.
tar -C "$repo" --exclude=__pycache__ --exclude='*.pyc' -c \
    pyproject.toml README.md broker-image/tidelog operator/tidelog_operator spark/tidelog_spark |
    tar -C "$source_copy" -x
wheels_of() {  # extra, staging directory
    SOURCE_DATE_EPOCH=315532800 "$python" -m pip wheel --quiet --disable-pip-version-check \
        --wheel-dir "$2/wheels/deps" "${source_copy}[$1]" ||
        die "building the wheels of tidelog[$1] failed"
    mkdir -p "$2/wheels/tidelog"
    mv "$2"/wheels/deps/tidelog-*.whl "$2/wheels/tidelog/"
}
rm -rf "$operator_staging" "$spark_staging"
wheels_of broker "$staging"
cp -p "$native_wheels"/tidelog_native-*.whl "$staging/wheels/deps/"
wheels_of operator "$operator_staging"
wheels_of spark "$spark_staging"
rm -rf "$source_copy"
cp -p "$zookeeper_libs"/*.jar "$staging/zookeeper/libs/"
cp -p broker-image/docker/entrypoint.sh broker-image/docker/server.properties "$staging/docker/"
chmod 0755 "$staging/docker/entrypoint.sh"
mkdir -p "$spark_staging/spark-libs" "$spark_staging/docker"
cp -p "$spark_libs"/*.jar "$spark_staging/spark-libs/"
install -m 0755 spark/docker/entrypoint.sh "$spark_staging/docker/entrypoint.sh"
wheels=("$staging"/wheels/*/*.whl)
jars=("$staging"/zookeeper/libs/*.jar)
say "staged ${#wheels[@]} wheels and ${#jars[@]} jars in $staging ($(since "$step"))"

# docker build DOCKERFILE into TAG and TAG's :latest from STAGING, logging to LOG.
build_image() {  # dockerfile tag staging log
    local started
    started=$(now)
    say "docker build $2 (log $4)"
    if ! docker build --file "$1" \
        --build-arg BASE_IMAGE="$base" --build-arg TIDELOG_VERSION="$version" \
        --tag "$2" --tag "${2%:*}:latest" "$3" >"$4" 2>&1; then
        tail -n 25 "$4" >&2
        die "docker build of $2 failed; see $4"
    fi
    size=$(docker image inspect --format '{{.Size}}' "$2" |
        awk '{ printf "%.0f MB", $1 / 1000000 }')
    say "built $2 and ${2%:*}:latest, $size ($(since "$started"))"
}
build_image broker-image/Dockerfile "$tag" "$staging" "$build_dir/docker-build.log"
build_image operator/Dockerfile "$operator_tag" "$operator_staging" \
    "$build_dir/docker-build-operator.log"
build_image spark/Dockerfile "$spark_tag" "$spark_staging" "$build_dir/docker-build-spark.log"
say "done ($(since "$total_started"))"
