#!/usr/bin/env bash
# The Spark image's entrypoint: the two roles of Spark on Kubernetes, or any command.
#
#   driver ARGS...   what a driver pod runs: spark-submit in client mode inside the pod
#                    (the submitter ran it in cluster mode), bound to the pod's address
#   executor         what an executor pod runs: Spark's Kubernetes executor backend, told
#                    where its driver is by the SPARK_* variables the driver sets on it
#   submit ARGS...   spark-submit as it is (what the operator's submitter Job runs:
#                    --master k8s://... --deploy-mode cluster)
#   COMMAND ...      run as it is (tidelog-bars, tidelog-ticks, python, bash, ...)
set -euo pipefail

# Hadoop's login inside Spark wants a user name: run as uid 1001 (tidelog), the image's
# user, or another uid that /etc/passwd knows.
classpath="${SPARK_HOME}/jars/*"
[ -n "${SPARK_EXTRA_CLASSPATH:-}" ] && classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
[ -d "${SPARK_CONF_DIR:-}" ] && classpath="$SPARK_CONF_DIR:$classpath"

require() {
    local variable
    for variable in "$@"; do
        [ -n "${!variable:-}" ] || { echo "tidelog-spark: executor needs $variable" >&2; exit 2; }
    done
}

case "${1:-}" in
driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" --deploy-mode client \
        --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS:-0.0.0.0}" "$@"
    ;;
submit)
    shift
    exec "$SPARK_HOME/bin/spark-submit" "$@"
    ;;
executor)
    shift
    require SPARK_DRIVER_URL SPARK_EXECUTOR_ID SPARK_EXECUTOR_CORES SPARK_EXECUTOR_MEMORY \
        SPARK_APPLICATION_ID SPARK_EXECUTOR_POD_IP SPARK_RESOURCE_PROFILE_ID \
        SPARK_EXECUTOR_POD_NAME
    # The driver passes its JVM options for executors as SPARK_JAVA_OPT_0, _1, ... in order.
    java_options=()
    while IFS= read -r option; do
        java_options+=("$option")
    done < <(env | sed -n 's/^SPARK_JAVA_OPT_\([0-9]*\)=/\1 /p' | sort -n | cut -d' ' -f2-)
    exec "$JAVA_HOME/bin/java" "${java_options[@]}" \
        "-Xms$SPARK_EXECUTOR_MEMORY" "-Xmx$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
        --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
        --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
        --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
        --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
"")
    echo "usage: driver SPARK-SUBMIT-ARGS... | executor | submit SPARK-SUBMIT-ARGS... | COMMAND..." >&2
    exit 2
    ;;
*)
    exec "$@"
    ;;
esac
