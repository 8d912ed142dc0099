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

# Apache ZooKeeper's server (tidelog-zookeeper: tests and `make run`), cached per version.
ZOOKEEPER_VERSION := 3.8.4
ZOOKEEPER_LIBS := $(CACHE_DIR)/zookeeper-$(ZOOKEEPER_VERSION)/libs
ZOOKEEPER_STAMP := $(ZOOKEEPER_LIBS)/.complete

export TIDELOG_ZOOKEEPER_LIBS := $(ZOOKEEPER_LIBS)

.PHONY: setup run test lint bench bench-storage kafka-libs zookeeper-libs clean

setup: $(STAMP) zookeeper-libs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[broker,dev]'
	touch $@

kafka-libs: $(KAFKA_STAMP)

# Apache Kafka's jars and their dependencies from Maven Central, cached per version.
# The directory is emptied first so that a changed pom leaves no stale jars behind.
$(KAFKA_STAMP): tools/kafka-libs/pom.xml
	rm -rf $(KAFKA_LIBS)
	mvn --batch-mode --quiet -f tools/kafka-libs/pom.xml \
	    -Dkafka.version=$(KAFKA_VERSION) dependency:copy-dependencies \
	    -DoutputDirectory=$(KAFKA_LIBS)
	touch $@

zookeeper-libs: $(ZOOKEEPER_STAMP)

# ZooKeeper's server jars from Maven Central, on their own (never Kafka's copies), the
# same way as Kafka's above.
$(ZOOKEEPER_STAMP): tools/zookeeper/pom.xml
	rm -rf $(ZOOKEEPER_LIBS)
	mvn --batch-mode --quiet -f tools/zookeeper/pom.xml \
	    -Dzookeeper.version=$(ZOOKEEPER_VERSION) dependency:copy-dependencies \
	    -DoutputDirectory=$(ZOOKEEPER_LIBS)
	touch $@

# Apache Kafka's protocol message definitions (JSON from the kafka-clients jar), committed
# under broker-image/tidelog/protocol/messages/ so that the broker never needs Java.
.PHONY: protocol-messages
protocol-messages: kafka-libs
	$(PYTHON) tools/protocol/extract_messages.py --libs $(KAFKA_LIBS) \
	    --kafka-version $(KAFKA_VERSION)

# A local cluster on 127.0.0.1: ZooKeeper, three brokers and a demo topic; Ctrl-C stops it.
run: setup
	$(BIN)/tidelog-local start

test: setup kafka-libs
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# tidelog side by side with Apache Kafka, one run (~9.5 min); BENCH_ARGS=--quick for a tiny one.
bench: setup kafka-libs
	$(BIN)/python bench/compare.py $(BENCH_ARGS)

bench-storage: setup
	$(BIN)/python bench/storage.py

clean:
	rm -rf $(VENV) .pytest_cache
