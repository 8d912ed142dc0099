# Every entry point of the project. `make setup` is idempotent: it only reinstalls
# when pyproject.toml changed since the last install.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tidelog

# Apache Kafka, used only as a reference: byte-compatibility tests and benchmarks.
KAFKA_VERSION := 3.9.1
KAFKA_LIBS := $(CACHE_DIR)/kafka-$(KAFKA_VERSION)/libs
KAFKA_STAMP := $(KAFKA_LIBS)/.complete

export TIDELOG_KAFKA_LIBS := $(KAFKA_LIBS)

# Maven 3.8 does not lock its local repository against a second mvn writing to it, and
# the set-up runs its steps side by side (`make test`): the Maven steps take turns.
MVN := mkdir -p $(CACHE_DIR) && flock $(CACHE_DIR)/.maven.lock mvn --batch-mode --quiet

# Apache ZooKeeper's server (tidelog-zookeeper: tests and `make run`), cached per version.
ZOOKEEPER_VERSION := 3.8.4
ZOOKEEPER_LIBS := $(CACHE_DIR)/zookeeper-$(ZOOKEEPER_VERSION)/libs
ZOOKEEPER_STAMP := $(ZOOKEEPER_LIBS)/.complete

export TIDELOG_ZOOKEEPER_LIBS := $(ZOOKEEPER_LIBS)

# Spark's Kafka connector for the PySpark of pyproject.toml (the `spark` extra), cached
# per version; tidelog_spark puts these jars on Spark's classpath.
SPARK_VERSION := $(shell sed -n 's/.*"pyspark==\([^"]*\)".*/\1/p' pyproject.toml)
SPARK_LIBS := $(CACHE_DIR)/spark-$(SPARK_VERSION)/libs
SPARK_STAMP := $(SPARK_LIBS)/.complete

export TIDELOG_SPARK_LIBS := $(SPARK_LIBS)

# Kubernetes-side tools, built from their Go modules (tools/k8s/build.sh) and cached per
# version: a real API server for the operator's tests, kubectl, helm and kind, and what the
# kind node image holds (kubelet, kubeadm, the control plane, kube-proxy, etcd, CoreDNS).
# One Kubernetes version throughout: the kubernetes Python client (pyproject.toml) and
# kind's node image follow it, and etcd and CoreDNS are the versions kubeadm deploys
# with it (tools/kind/node-image.sh checks that). kube-router, the e2e cluster's
# NetworkPolicy enforcer, is built in tools/kube-router/, whose go.mod requires the same
# version: v2.1.0, the only one the Go module proxy serves.
KUBERNETES_VERSION := v1.31.4
ETCD_VERSION := v3.5.15
COREDNS_VERSION := v1.11.3
HELM_VERSION := v3.16.4
KIND_VERSION := v0.24.0
KUBE_ROUTER_VERSION := v2.1.0
K8S_TOOLS := $(CACHE_DIR)/k8s
K8S_TOOL_BUILDS := kubernetes-$(KUBERNETES_VERSION) etcd-$(ETCD_VERSION) \
    coredns-$(COREDNS_VERSION) helm-$(HELM_VERSION) kind-$(KIND_VERSION) \
    kube-router-$(KUBE_ROUTER_VERSION)
K8S_TOOL_DIRS := $(addprefix $(K8S_TOOLS)/,$(K8S_TOOL_BUILDS))
empty :=
space := $(empty) $(empty)

# Where the tests look for these binaries, as a PATH-like list.
export TIDELOG_K8S_PATH := $(subst $(space),:,$(K8S_TOOL_DIRS))

# Container images (tools/images/build.sh). The Dockerfiles build FROM $(BASE_IMAGE); where
# no registry answers, a local Debian stand-in with the same Python is built instead.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
BASE_IMAGE ?= python:3.11-slim-bookworm
export TIDELOG_BROKER_IMAGE := tidelog-broker:$(VERSION)
export TIDELOG_OPERATOR_IMAGE := tidelog-operator:$(VERSION)
export TIDELOG_SPARK_IMAGE := tidelog-spark:$(VERSION)

# kind's node image (tools/kind/node-image.sh): kindest/node for KUBERNETES_VERSION where a
# registry serves it, else one built here from the binaries of k8s-tools.
export KUBERNETES_VERSION ETCD_VERSION COREDNS_VERSION K8S_TOOLS

# kube-router's image (tools/kind/kube-router-image.sh), which the e2e fixture loads into
# every node of its cluster and runs there to enforce NetworkPolicies (docs/e2e.md).
export TIDELOG_KUBE_ROUTER_IMAGE := tidelog-kube-router:$(KUBE_ROUTER_VERSION)

.PHONY: setup native run test e2e lint bench bench-storage kafka-libs zookeeper-libs spark-libs \
    k8s-tools k8s-env \
    images kind-node-image kube-router-image go-test clean

setup: $(STAMP) native zookeeper-libs spark-libs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[broker,operator,spark,dev]'
	touch $@

# The log cleaner's compiled helper (broker-image/native/, Rust through maturin): built
# once into a wheel that the venv and the broker image install. Cargo comes from rustup
# (https://rustup.rs); its crates from Rust's package registry.
NATIVE_DIR := broker-image/native
NATIVE_SOURCES := $(NATIVE_DIR)/Cargo.toml $(NATIVE_DIR)/Cargo.lock $(NATIVE_DIR)/pyproject.toml \
    $(wildcard $(NATIVE_DIR)/src/*.rs)
NATIVE_WHEELS := build/native
NATIVE_STAMP := $(VENV)/.native-installed
export PATH := $(PATH):$(HOME)/.cargo/bin

native: $(NATIVE_STAMP)

$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES)
	@command -v cargo >/dev/null || { echo "make setup: the log cleaner's helper needs Rust's cargo; install it with rustup (https://rustup.rs)" >&2; exit 1; }
	rm -rf $(NATIVE_WHEELS)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir $(NATIVE_WHEELS) ./$(NATIVE_DIR)
	$(BIN)/python -m pip install --quiet --no-deps --force-reinstall $(NATIVE_WHEELS)/tidelog_native-*.whl
	touch $@

kafka-libs: $(KAFKA_STAMP)

# Apache Kafka's jars and their dependencies from Maven Central, cached per version.
# The directory is emptied first so that a changed pom leaves no stale jars behind.
$(KAFKA_STAMP): tools/kafka-libs/pom.xml
	rm -rf $(KAFKA_LIBS)
	$(MVN) -f tools/kafka-libs/pom.xml \
	    -Dkafka.version=$(KAFKA_VERSION) dependency:copy-dependencies \
	    -DoutputDirectory=$(KAFKA_LIBS)
	touch $@

zookeeper-libs: $(ZOOKEEPER_STAMP)

# ZooKeeper's server jars from Maven Central, on their own (never Kafka's copies), the
# same way as Kafka's above.
$(ZOOKEEPER_STAMP): tools/zookeeper/pom.xml
	rm -rf $(ZOOKEEPER_LIBS)
	$(MVN) -f tools/zookeeper/pom.xml \
	    -Dzookeeper.version=$(ZOOKEEPER_VERSION) dependency:copy-dependencies \
	    -DoutputDirectory=$(ZOOKEEPER_LIBS)
	touch $@

spark-libs: $(SPARK_STAMP)

# The jars of Spark's Kafka source and sink beyond PySpark's own, the same way.
$(SPARK_STAMP): tools/spark-libs/pom.xml pyproject.toml
	rm -rf $(SPARK_LIBS)
	$(MVN) -f tools/spark-libs/pom.xml \
	    -Dspark.version=$(SPARK_VERSION) dependency:copy-dependencies \
	    -DoutputDirectory=$(SPARK_LIBS)
	touch $@

# The script returns at once for a tool whose cached build is complete. A build is named
# TOOL-vVERSION (a TOOL may hold a dash).
k8s-tools:
	@for build in $(K8S_TOOL_BUILDS); do \
	    tools/k8s/build.sh "$${build%-v*}" "v$${build##*-v}" $(K8S_TOOLS) || exit 1; \
	done

# `eval "$(make -s k8s-env)"` puts the cached tools on a shell's PATH, and tells the
# tests run outside make where they are.
k8s-env: k8s-tools
	@echo 'export PATH="$(TIDELOG_K8S_PATH):$$PATH"'
	@echo 'export TIDELOG_K8S_PATH="$(TIDELOG_K8S_PATH)"'

# The broker, operator and Spark images: starts a Docker engine if none answers (Debian's
# docker.io, as root), then builds broker-image/Dockerfile, operator/Dockerfile and
# spark/Dockerfile from wheels made here.
images: setup
	tools/images/build.sh PYTHON=$(BIN)/python ZOOKEEPER_LIBS=$(ZOOKEEPER_LIBS) \
	    BASE_IMAGE=$(BASE_IMAGE) IMAGE=$(TIDELOG_BROKER_IMAGE) \
	    OPERATOR_IMAGE=$(TIDELOG_OPERATOR_IMAGE) SPARK_IMAGE=$(TIDELOG_SPARK_IMAGE) \
	    SPARK_LIBS=$(SPARK_LIBS) NATIVE_WHEELS=$(NATIVE_WHEELS)

kind-node-image: k8s-tools images
	tools/kind/node-image.sh >/dev/null

kube-router-image: k8s-tools
	tools/kind/kube-router-image.sh IMAGE=$(TIDELOG_KUBE_ROUTER_IMAGE) \
	    BINARY=$(K8S_TOOLS)/kube-router-$(KUBE_ROUTER_VERSION)/kube-router >/dev/null

# Apache Kafka's protocol message definitions (JSON from the kafka-clients jar), committed
# under broker-image/tidelog/protocol/messages/ so that the broker never needs Java.
.PHONY: protocol-messages
protocol-messages: kafka-libs
	$(PYTHON) tools/protocol/extract_messages.py --libs $(KAFKA_LIBS) \
	    --kafka-version $(KAFKA_VERSION)

# The local story (tidelog_spark/demo.py): ZooKeeper and three brokers on 127.0.0.1, the
# tick generator and the Spark pipeline, with a live table of the bars; Ctrl-C stops all.
run: setup
	$(BIN)/tidelog-demo

# Set-up steps made side by side wherever one does not need another: from empty caches
# the Go builds of k8s-tools are most of the set-up, and pip, Maven, debootstrap and the
# image builds, which in part wait for downloads and the disk, fit beside them (measured:
# 21.5 minutes, against 26 one step after another; docs/e2e.md).
SETUP_JOBS ?= 4
side_by_side = $(MAKE) --no-print-directory --jobs=$(SETUP_JOBS) $(1)

# The whole suite: the Go tools' tests, then pytest in two parts (conftest.py): the light
# tests shared between TEST_WORKERS pytest-xdist workers (one module per unit of work),
# then the heavy ones alone: the Spark tests, the bench harness's smoke run and the kind
# cluster's tests, last. The heavy part runs after a light one with failures too (all
# failures in one run), not after an interrupted one. Each part closes with its slowest
# tests' times, to keep the suite's time in view.
TEST_WORKERS ?= 2
XDIST := $(if $(filter-out 1,$(TEST_WORKERS)),--numprocesses $(TEST_WORKERS) --dist loadgroup)
test:
	$(call side_by_side,setup kafka-libs k8s-tools images kind-node-image kube-router-image go-test)
	$(BIN)/pytest $(XDIST) -m "not heavy" --durations=20; light=$$?; \
	if [ $$light -gt 1 ]; then exit $$light; fi; \
	$(BIN)/pytest -m heavy --durations=20; heavy=$$?; \
	[ $$light -eq 0 ] && [ $$heavy -eq 0 ]

# The kind end-to-end tests alone (e2e/conftest.py: E2E_KEEP=1 keeps the cluster).
e2e:
	$(call side_by_side,setup k8s-tools images kind-node-image kube-router-image)
	$(BIN)/pytest --durations=0 e2e

go-test:
	cd tools/go && go vet ./... && go test ./...

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# tidelog side by side with Apache Kafka, one run (35-50 min on 2 cores); BENCH_ARGS=--quick for a tiny one.
bench: setup kafka-libs
	$(BIN)/python bench/compare.py $(BENCH_ARGS)

bench-storage: setup
	$(BIN)/python bench/storage.py

clean:
	rm -rf $(VENV) .pytest_cache $(NATIVE_WHEELS) $(NATIVE_DIR)/target
