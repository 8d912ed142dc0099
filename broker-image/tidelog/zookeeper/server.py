"""One Apache ZooKeeper server process, standalone or one of an ensemble, run with Java
from a per-version jar cache.

:class:`ZooKeeperServer` writes ``zoo.cfg`` into its data directory, runs
``org.apache.zookeeper.server.ZooKeeperServerMain`` (standalone) or, given the ensemble's
``servers`` and its own ``my_id``, ``org.apache.zookeeper.server.quorum.QuorumPeerMain``
(with the ``myid`` file, peers listening on all addresses), and waits until the server answers
``ruok`` with ``imok`` and ``srvr`` says it serves requests (its port opens before its
data is loaded). The JVM's output goes to ``zookeeper.log`` in the data directory,
appended across restarts. A restart keeps the data directory and the port, so connect
strings handed out before stay valid.

With ``tls`` (:class:`ZooKeeperTls`), the server also serves TLS on a second port
(``secure_port``, through ZooKeeper's Netty connection factory), asks clients there for
certificates signed by the truststore's CAs (``ssl.clientAuth``) and authenticates them
by their certificate (ZooKeeper's x509 provider), so that znodes created with the
``auth`` ACL scheme (Kafka's ``zookeeper.set.acl``) belong to the certificate's subject.
Keystore and truststore are PEM files. The plain port stays open: the readiness probes
(four-letter words) use it, and what the ACLs protect is the same on both ports; it may
listen on another address than the secure one (``host`` and ``secure_host``: loopback
for the probes, every address for the clients). With ``ZooKeeperTls.quorum`` the members
of an ensemble also talk to each other over mutual TLS with the same files.

Reload (ZooKeeper 3.8.4, as cached): the quorum's files are reloaded when an entry of their
own name in their directory is created or modified (``sslQuorumReloadCertFiles``; a file
that fails to load keeps the old certificates), so not by a Kubernetes Secret volume's
update, which swaps its ``..data`` symlink only. The secure client port never reloads
(``zookeeper.client.certReload`` came with 3.8.5).

The jars come from ``make zookeeper-libs``: the directory named by ``TIDELOG_ZOOKEEPER_LIBS``
(the Makefile exports it), else the newest complete ``zookeeper-<version>/libs`` in
tidelog's cache directory.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from tidelog.child_process import die_with_parent

__all__ = [
    "LIBS_ENV_VAR",
    "ZooKeeperError",
    "ZooKeeperServer",
    "ZooKeeperSetupError",
    "ZooKeeperStartError",
    "ZooKeeperTls",
    "find_java",
    "four_letter_word",
    "zookeeper_libs",
]

LIBS_ENV_VAR = "TIDELOG_ZOOKEEPER_LIBS"
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
QUORUM_MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
CONFIG_NAME = "zoo.cfg"
LOG_NAME = "zookeeper.log"

# A small heap and a JIT that stops at C1: the server idles most of the time, and the
# JVM starts noticeably faster this way.
JVM_FLAGS = (
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-Djava.awt.headless=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
)

_HOW_TO_FIX = "run `make zookeeper-libs` (needs Java 17 and Maven)"
_POLL_INTERVAL_S = 0.05
# Short: whatever else may hold the port accepts the probe and never answers it.
_PROBE_TIMEOUT_S = 0.5
_EVERY_ADDRESS = ("0.0.0.0", "::")
# The first line of a Java stack trace, e.g. "java.net.BindException: Address already in use".
_THROWABLE = re.compile(
    r"^(Error: |(Exception in thread \S+ )?([\w$]+\.)+[\w$]*(Exception|Error)\b)"
)


class ZooKeeperError(RuntimeError):
    """Base class: the server could not be run as asked."""


class ZooKeeperSetupError(ZooKeeperError):
    """This machine lacks something: ZooKeeper's jars, a Java runtime or TLS files."""


class ZooKeeperStartError(ZooKeeperError):
    """The server process exited or did not answer while starting."""


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tidelog"


def _version_key(libs: Path) -> tuple[int, ...]:
    version = libs.parent.name.removeprefix("zookeeper-")
    return tuple(int(part) for part in re.findall(r"\d+", version))


def zookeeper_libs(directory: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding ZooKeeper's jars: ``directory`` if given, else the one
    ``TIDELOG_ZOOKEEPER_LIBS`` names, else the newest in the cache.

    Raises :class:`ZooKeeperSetupError` when the jars are not there.
    """
    value = directory or os.environ.get(LIBS_ENV_VAR)
    if value:
        libs = Path(value).expanduser()
    else:
        complete = [p.parent for p in _cache_dir().glob("zookeeper-*/libs/.complete")]
        if not complete:
            raise ZooKeeperSetupError(
                f"ZooKeeper's jars are not in {_cache_dir()}/zookeeper-<version>/libs "
                f"({LIBS_ENV_VAR} is not set); {_HOW_TO_FIX}"
            )
        libs = max(complete, key=_version_key)
    if not any(libs.glob("zookeeper-[0-9]*.jar")) or not any(libs.glob("zookeeper-jute-*.jar")):
        raise ZooKeeperSetupError(f"ZooKeeper's jars are not in {libs}; {_HOW_TO_FIX}")
    return libs


def find_java() -> str:
    """``$JAVA_HOME/bin/java``, else ``java`` on the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and Path(java_home, "bin", "java").is_file():
        return str(Path(java_home, "bin", "java"))
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperSetupError("no `java` found (JAVA_HOME or PATH); ZooKeeper needs Java 17")
    return java


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send one of ZooKeeper's four-letter commands and return the whole answer.

    Raises :class:`OSError` when nothing listens or the server closes without answering.
    """
    chunks = []
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _properties_value(value: object) -> str:
    return str(value).replace("\\", "\\\\")


_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]+)-----")


@dataclass(frozen=True)
class ZooKeeperTls:
    """TLS for a server's secure port: ``keystore`` a PEM file with the server's private
    key and certificate chain, ``truststore`` a PEM file of the CAs whose clients it
    accepts; ``client_auth`` ZooKeeper's ``ssl.clientAuth`` (need, want or none).

    With ``quorum``, an ensemble member also speaks mutual TLS to its peers
    (``sslQuorum``, ``ssl.quorum.*``) with the same files. ``quorum_hostname_verification``
    (ZooKeeper's default) checks both ends: the peer dialed must name the address or host
    it was dialed at, and a peer that connects the address it connects from (or that
    address's reverse-DNS name). Without it any certificate of the truststore's CAs may
    join the quorum.
    """

    keystore: Path
    truststore: Path
    client_auth: str = "need"
    quorum: bool = False
    quorum_hostname_verification: bool = True

    def check_files(self) -> None:
        """Raise :class:`ZooKeeperSetupError` unless the keystore holds a private key and
        a certificate and the truststore a certificate (ZooKeeper would only find out at
        the first TLS connection)."""
        for path, what, needed in (
            (self.keystore, "keystore", ("PRIVATE KEY", "CERTIFICATE")),
            (self.truststore, "truststore", ("CERTIFICATE",)),
        ):
            try:
                blocks = {m.group(1).decode() for m in _PEM_BLOCK.finditer(Path(path).read_bytes())}
            except OSError as exc:
                raise ZooKeeperSetupError(
                    f"cannot read the TLS {what} {path}: {exc.strerror}"
                ) from None
            for kind in needed:
                if not any(block.endswith(kind) for block in blocks):
                    raise ZooKeeperSetupError(f"the TLS {what} {path} holds no PEM {kind.lower()}")


class ZooKeeperServer:
    """A ZooKeeper server on ``host:port`` keeping its data in ``data_dir``: standalone,
    or server ``my_id`` of the ensemble ``servers`` (id → ``host:peer-port:election-port``,
    itself included), which serves once a quorum of them is up.

    With ``tls``, the secure port ``secure_port`` listens on ``secure_host`` (``host``
    unless given; ``0.0.0.0`` for every address). ``port=0`` and ``secure_port=0`` pick a
    free port at the first start and keep it for restarts.
    Use as a context manager (start on enter, stop on exit) or call :meth:`start` and
    :meth:`stop`.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        tick_time: int = 2000,
        max_client_cnxns: int = 60,
        libs: str | os.PathLike[str] | None = None,
        java: str | None = None,
        servers: Mapping[int, str] | None = None,
        my_id: int | None = None,
        tls: ZooKeeperTls | None = None,
        secure_port: int = 0,
        secure_host: str | None = None,
    ) -> None:
        if (servers is None) != (my_id is None) or (servers and my_id not in servers):
            raise ZooKeeperError("an ensemble member needs the servers and its own id among them")
        if tls is not None and tls.quorum and not servers:
            raise ZooKeeperError("quorum TLS needs an ensemble: give the servers and my_id")
        self.data_dir = Path(data_dir).absolute()
        self.host = host
        self.secure_host = secure_host or host
        self.tick_time = tick_time
        self.max_client_cnxns = max_client_cnxns
        self._port: int | None = port or None
        self._libs = Path(libs) if libs is not None else None
        self._java = java
        self.servers = dict(servers or {})
        self.my_id = my_id
        self.tls = tls
        self._given_ports = (self._port, secure_port or None)
        self._secure_port: int | None = secure_port or None
        self._process: subprocess.Popen[bytes] | None = None
        self._log_offset = 0  # where the current run's output starts in the log

    # ---------------------------------------------------------------------------------
    # What clients need

    @property
    def port(self) -> int:
        if self._port is None:
            raise ZooKeeperError("the port is picked at the first start(); start the server")
        return self._port

    @property
    def connect_string(self) -> str:
        """``host:port``, for kazoo's ``hosts`` or Kafka's ``zookeeper.connect``."""
        return f"{self.host}:{self.port}"

    @property
    def secure_port(self) -> int:
        """The TLS port (with ``tls``), picked at the first start and kept for restarts."""
        if self.tls is None or self._secure_port is None:
            raise ZooKeeperError("no TLS port: give the server tls= and start it")
        return self._secure_port

    @property
    def secure_connect_string(self) -> str:
        """``secure_host:secure_port``, for a client with ``zookeeper.ssl.client.enable``
        (``host`` stands in for a ``secure_host`` of every address)."""
        return f"{self._secure_reach}:{self.secure_port}"

    @property
    def _secure_reach(self) -> str:
        """Where the secure port is reached: its own address, or ``host`` when it
        listens on every address."""
        return self.host if self.secure_host in _EVERY_ADDRESS else self.secure_host

    @property
    def config_path(self) -> Path:
        return self.data_dir / CONFIG_NAME

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_NAME

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ---------------------------------------------------------------------------------
    # Lifecycle

    def start(self, timeout: float = 30.0, *, wait: bool = True) -> ZooKeeperServer:
        """Start the JVM and return once the server serves requests (with ``wait``
        false, at once: members of an ensemble serve only together, so each is
        launched first and waited for with :meth:`wait_until_serving`).

        Raises :class:`ZooKeeperSetupError` when jars or Java are missing and
        :class:`ZooKeeperStartError` when the server exits or stays silent for ``timeout``
        seconds (the process is stopped then).
        """
        if self.is_running:
            raise ZooKeeperError(f"ZooKeeper is already running at {self.connect_string}")
        libs = zookeeper_libs(self._libs)
        java = self._java or find_java()
        if self.tls is not None:
            self.tls.check_files()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Only a port we picked ourselves may be lost to a race with another process.
        picking = self._port is None or (self.tls is not None and self._secure_port is None)
        attempts = 3 if picking else 1
        for attempt in range(1, attempts + 1):
            if self._port is None:
                self._port = _free_port(self.host)
            if self.tls is not None and self._secure_port is None:
                self._secure_port = _free_port(self.secure_host)
            try:
                self._launch(java, libs)
                if not wait:
                    return self
                self.wait_until_serving(timeout)
            except _PortTaken:
                if attempt == attempts:
                    raise
                self._port, self._secure_port = self._given_ports
            else:
                break
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; a no-op when not running."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def restart(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Stop and start again on the same port with the same data directory."""
        self.stop()
        return self.start(timeout)

    def wait(self) -> int:
        """Block until the server process exits; its exit status."""
        if self._process is None:
            raise ZooKeeperError("ZooKeeper is not running")
        return self._process.wait()

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"ZooKeeperServer({self.host}:{self._port}, {self.data_dir}, {state})"

    # ---------------------------------------------------------------------------------
    # Internals

    def _write_config(self) -> None:
        settings = {
            "tickTime": self.tick_time,
            "dataDir": self.data_dir,
            "clientPortAddress": self.host,
            "clientPort": self.port,
            "maxClientCnxns": self.max_client_cnxns,
            # The AdminServer would bind 8080 (and its Jetty is not among the jars).
            "admin.enableServer": "false",
            # cons names each connection's session: which server a broker talks to.
            "4lw.commands.whitelist": "ruok,srvr,stat,cons",
        }
        if self.tls is not None:
            settings.update(self._tls_settings())
        if self.servers:
            (self.data_dir / "myid").write_text(f"{self.my_id}\n")
            settings.update({"initLimit": 10, "syncLimit": 5, "quorumListenOnAllIPs": "true"})
            if self.tls is not None and self.tls.quorum:
                settings.update(self._quorum_tls_settings())
            settings.update({f"server.{i}": peer for i, peer in sorted(self.servers.items())})
        lines = [f"{key}={_properties_value(value)}" for key, value in settings.items()]
        self.config_path.write_text("\n".join(["# written by tidelog-zookeeper", *lines, ""]))

    def _tls_settings(self) -> dict[str, object]:
        tls = self.tls
        return {
            "secureClientPortAddress": self.secure_host,
            "secureClientPort": self._secure_port,
            "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
            "ssl.keyStore.location": Path(tls.keystore).absolute(),
            "ssl.keyStore.type": "PEM",
            "ssl.trustStore.location": Path(tls.truststore).absolute(),
            "ssl.trustStore.type": "PEM",
            "ssl.clientAuth": tls.client_auth,
            # Clients connect by address; their certificates name them, not their IPs.
            "ssl.hostnameVerification": "false",
            "authProvider.x509": "org.apache.zookeeper.server.auth.X509AuthenticationProvider",
        }

    def _quorum_tls_settings(self) -> dict[str, object]:
        """Mutual TLS between the members (QuorumX509Util's ``ssl.quorum.`` keys). PEM
        stores need no password: ZooKeeper reads an unencrypted key when it is empty."""
        tls = self.tls
        return {
            "sslQuorum": "true",
            "ssl.quorum.keyStore.location": Path(tls.keystore).absolute(),
            "ssl.quorum.keyStore.type": "PEM",
            "ssl.quorum.trustStore.location": Path(tls.truststore).absolute(),
            "ssl.quorum.trustStore.type": "PEM",
            "ssl.quorum.clientAuth": "need",
            "ssl.quorum.hostnameVerification": str(tls.quorum_hostname_verification).lower(),
            "sslQuorumReloadCertFiles": "true",
        }

    def _launch(self, java: str, libs: Path) -> None:
        self._write_config()
        main_class = QUORUM_MAIN_CLASS if self.servers else MAIN_CLASS
        command = [java, *JVM_FLAGS, "-cp", f"{libs}/*", main_class, str(self.config_path)]
        with self.log_path.open("ab") as log:
            self._log_offset = log.tell()
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            log.write(f"--- {stamp} tidelog-zookeeper: {' '.join(command)}\n".encode())
            log.flush()
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
                start_new_session=True,  # Ctrl-C in a terminal reaches us, not the JVM
                preexec_fn=die_with_parent(),
            )

    def _serving(self) -> bool:
        """``ruok`` alone is not enough: it answers ``imok`` before the data is loaded.
        A standalone server opens its secure port only after it serves on the plain one;
        its log says when (a probe of that port would log a failed TLS handshake)."""
        try:
            if four_letter_word(self.host, self.port, "ruok", _PROBE_TIMEOUT_S) != "imok":
                return False
            if "Mode: " not in four_letter_word(self.host, self.port, "srvr", _PROBE_TIMEOUT_S):
                return False
        except OSError:
            return False
        return self.tls is None or f" bound to port {self._secure_port}\n" in (
            self._output_since_launch()
        )

    def wait_until_serving(self, timeout: float = 30.0) -> None:
        """Return once the launched server serves requests; ZooKeeperStartError (and
        the process stopped) when it exits or stays silent for ``timeout`` seconds."""
        if self._process is None:
            raise ZooKeeperError("ZooKeeper is not running")
        deadline = time.monotonic() + timeout
        while True:
            status = self._process.poll()
            if status is not None:
                self._process = None
                output = self._output_since_launch()
                if "Address already in use" in output:
                    secure = f" or {self.secure_host}:{self._secure_port}" if self.tls else ""
                    raise _PortTaken(
                        f"cannot listen on {self.connect_string}{secure}: address in use"
                    )
                self._fail(f"ZooKeeper exited with status {status} while starting", output)
            if self._serving():
                return
            if time.monotonic() > deadline:
                self.stop()
                self._fail(
                    f"ZooKeeper did not serve on {self.connect_string} within {timeout:g} s",
                    self._output_since_launch(),
                )
            time.sleep(_POLL_INTERVAL_S)

    def _output_since_launch(self) -> str:
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            return log.read().decode("utf-8", "replace")

    def _fail(self, what: str, output: str) -> NoReturn:
        """Raise with the first error the JVM logged, if any, and where the log is."""
        lines = output.splitlines()
        throwables = (line for line in lines if _THROWABLE.match(line))
        cause = next(throwables, None) or next((line for line in lines if " ERROR " in line), "")
        detail = f" ({cause})" if cause else ""
        raise ZooKeeperStartError(f"{what}{detail}; see {self.log_path}")


class _PortTaken(ZooKeeperStartError):
    pass
