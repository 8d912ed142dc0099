"""The versions ``message.format.version`` may name: Kafka 3.9's MetadataVersion.

Kafka 3.9 validates the deprecated ``message.format.version`` (and
``log.message.format.version``) by parsing it as a MetadataVersion and ignores it
otherwise (KIP-724). The same parse is done here, so tidelog accepts exactly the strings
Kafka 3.9 accepts:

- a version's full name, ``<release>-IV<n>`` (``3.0-IV1``, ``0.10.0-IV0``), or the bare
  release for the four that have no IV (``0.8.0`` ... ``0.9.0``);
- a release's short name (``3.0``, ``0.10.0``): its newest production IV (those up to
  3.9-IV0, Kafka 3.9's latest production version; so ``4.0`` is refused, while
  ``4.0-IV0`` is taken);
- anything longer, of which only the first three dot-separated parts count for a
  version starting with ``0.`` and the first two otherwise: ``0.10.0.0`` is ``0.10.0``,
  ``3.0.1`` is ``3.0``, ``2.1.0-IV2`` is ``2.1`` (and so is ``2.1.anything``);
- trailing empty parts are dropped before counting (Java's ``String.split``): ``3.0.``
  has two parts, so it is taken whole, and refused.

Case matters (``3.0-iv1`` is refused), and the input is not trimmed here (Kafka's
ConfigDef trims a string config before validating it; so does ``LogConfig``'s parsing).
"""

from __future__ import annotations

__all__ = ["METADATA_VERSIONS", "parse_metadata_version"]

# Each release with the number of its IVs; 0: a release named without an IV.
_RELEASES = {
    "0.8.0": 0,
    "0.8.1": 0,
    "0.8.2": 0,
    "0.9.0": 0,
    "0.10.0": 2,
    "0.10.1": 3,
    "0.10.2": 1,
    "0.11.0": 3,
    "1.0": 1,
    "1.1": 1,
    "2.0": 2,
    "2.1": 3,
    "2.2": 2,
    "2.3": 2,
    "2.4": 2,
    "2.5": 1,
    "2.6": 1,
    "2.7": 3,
    "2.8": 2,
    "3.0": 2,
    "3.1": 1,
    "3.2": 1,
    "3.3": 4,
    "3.4": 1,
    "3.5": 3,
    "3.6": 3,
    "3.7": 5,
    "3.8": 1,
    "3.9": 1,
    "4.0": 2,  # unstable in 3.9: known by full name only
}
_LATEST_PRODUCTION = "3.9-IV0"

# Every full version name, oldest first.
METADATA_VERSIONS: tuple[str, ...] = tuple(
    name
    for release, ivs in _RELEASES.items()
    for name in ([release] if ivs == 0 else [f"{release}-IV{n}" for n in range(ivs)])
)

_PRODUCTION = METADATA_VERSIONS[: METADATA_VERSIONS.index(_LATEST_PRODUCTION) + 1]

# Full names, and each release's short name for its newest production version (later
# versions of one release overwrite earlier ones).
_BY_NAME = {name: name for name in METADATA_VERSIONS} | {
    name.split("-IV")[0]: name for name in _PRODUCTION
}


def parse_metadata_version(text: str) -> str:
    """The full name of the version ``text`` names (``0.10.0.0`` → ``0.10.0-IV1``), as
    Kafka 3.9's ``MetadataVersion.fromVersionString`` reads it; ValueError when Kafka
    refuses it."""
    parts = text.split(".")
    while parts and not parts[-1]:
        parts.pop()
    significant = 3 if text.startswith("0.") else 2
    key = text if len(parts) <= significant else ".".join(parts[:significant])
    try:
        return _BY_NAME[key]
    except KeyError:
        raise ValueError(f"Version {text} is not a valid version") from None
