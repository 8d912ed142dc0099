"""ZooKeeper and brokers from the ``tidelog-broker`` image as containers on a private
Docker network, driven through the docker CLI.

Brokers reach ZooKeeper and each other by name on the network (listener INTERNAL,
also the inter-broker listener); clients on the host reach each broker through a
published loopback port (listener EXTERNAL), which the broker advertises as such. The
broker's configuration comes only from ``TIDELOG_CONFIG_*`` variables over the image's
default file, as an operator would set it.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Mapping

from tidelog.server.env_overrides import variable_name
from tidelog.server.process import free_port

__all__ = ["IMAGE_ENV_VAR", "DockerCluster", "docker"]

IMAGE_ENV_VAR = "TIDELOG_BROKER_IMAGE"
INTERNAL_PORT = 9092
EXTERNAL_PORT = 9094
ZOOKEEPER_PORT = 2181  # the image's default


def docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def local_image(env_var: str) -> str:
    """The image ``make images`` built, named by the Makefile in ``env_var``; an error,
    never a skip."""
    image = os.environ.get(env_var)
    if not image:
        raise RuntimeError(f"${env_var} is unset: run the tests through `make test`")
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True).returncode:
        raise RuntimeError(f"image {image} not found: run `make images`")
    return image


def broker_image() -> str:
    return local_image(IMAGE_ENV_VAR)


def config_environment(config: Mapping[str, str]) -> list[str]:
    """``docker run`` arguments setting each property through its environment variable."""
    arguments = []
    for key, value in config.items():
        arguments += ["--env", f"{variable_name(key)}={value}"]
    return arguments


class DockerCluster:
    """ZooKeeper plus brokers 1..size, each a container named ``<prefix>-<name>``."""

    def __init__(self, image: str, size: int = 3, config: Mapping[str, str] | None = None):
        self.image = image
        self.prefix = f"tidelog-test-{uuid.uuid4().hex[:8]}"
        self.network = self.prefix
        self.config = dict(config or {})
        self.external_ports = {broker_id: free_port() for broker_id in range(1, size + 1)}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.external_ports.values())

    def container(self, name: str) -> str:
        return f"{self.prefix}-{name}"

    def __enter__(self) -> DockerCluster:
        docker("network", "create", self.network)
        try:
            # The image's entrypoint: 0.0.0.0:2181, data in /var/lib/tidelog/zookeeper.
            self._run("zookeeper", "tidelog-zookeeper")
            for broker_id in self.external_ports:
                self._run_broker(broker_id)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        names = docker("ps", "-aq", "--filter", f"name={self.prefix}-", check=False).split()
        if names:
            docker("rm", "--force", "--volumes", *names, check=False)
        docker("network", "rm", self.network, check=False)

    def _run(self, name: str, *command: str, options: tuple[str, ...] = ()) -> None:
        docker(
            "run",
            "--detach",
            f"--name={self.container(name)}",
            f"--network={self.network}",
            f"--network-alias={name}",
            *options,
            self.image,
            *command,
        )

    def _run_broker(self, broker_id: int) -> None:
        name = f"broker-{broker_id}"
        external = self.external_ports[broker_id]
        config = {
            "broker.id": str(broker_id),
            "zookeeper.connect": f"zookeeper:{ZOOKEEPER_PORT}",
            "listeners": f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{EXTERNAL_PORT}",
            "advertised.listeners": f"INTERNAL://{name}:{INTERNAL_PORT},"
            f"EXTERNAL://127.0.0.1:{external}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            **self.config,
        }
        self._run(
            name,
            options=(
                f"--publish=127.0.0.1:{external}:{EXTERNAL_PORT}",
                # The log dir on a volume of its own, as a PersistentVolumeClaim would be:
                # it outlives the process, and `docker start` finds it again.
                "--volume=/var/lib/tidelog/data-0",
                *config_environment(config),
            ),
        )

    # -- faults ----------------------------------------------------------------------

    def kill(self, broker_id: int) -> None:
        docker("kill", self.container(f"broker-{broker_id}"))

    def start(self, broker_id: int) -> None:
        docker("start", self.container(f"broker-{broker_id}"))

    def disconnect(self, broker_id: int) -> None:
        docker("network", "disconnect", self.network, self.container(f"broker-{broker_id}"))

    def reconnect(self, broker_id: int) -> None:
        name = f"broker-{broker_id}"
        docker("network", "connect", f"--alias={name}", self.network, self.container(name))

    # -- what the containers say -----------------------------------------------------

    def state(self, name: str) -> dict:
        return json.loads(docker("inspect", "--format", "{{json .State}}", self.container(name)))

    def logs(self, name: str) -> str:
        result = subprocess.run(
            ["docker", "logs", self.container(name)], capture_output=True, text=True, timeout=30
        )
        return result.stdout + result.stderr
