"""The principal of a client certificate: its subject as Java's ``X500Principal`` writes
it (RFC 2253), mapped by Kafka's ``ssl.principal.mapping.rules``.

The subject is written most specific attribute first (``CN=alice,OU=eng,O=acme,C=GB``),
with RFC 2253's keywords (CN, C, L, ST, O, OU, STREET, DC, UID); any other attribute as
its dotted OID and ``#`` and the hex of its DER value, as Java writes ``emailAddress``.

Rules, Kafka's syntax: a comma- or newline-separated list of ``DEFAULT`` and
``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash
(lower- or upper-case the result). The first rule whose pattern matches the whole
subject gives the name: each match of the pattern replaced by the replacement, where
``$1`` names a group (Java's syntax) and ``\\/`` is a slash. ``DEFAULT`` gives the
subject itself. No rule matching is an error: the connection is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509
from cryptography.x509.oid import NameOID

from tidelog.server.config_key import ConfigError

__all__ = ["PrincipalMapper", "subject_name"]

_KEYWORDS = {
    NameOID.COMMON_NAME: "CN",
    NameOID.COUNTRY_NAME: "C",
    NameOID.LOCALITY_NAME: "L",
    NameOID.STATE_OR_PROVINCE_NAME: "ST",
    NameOID.ORGANIZATION_NAME: "O",
    NameOID.ORGANIZATIONAL_UNIT_NAME: "OU",
    NameOID.STREET_ADDRESS: "STREET",
    NameOID.DOMAIN_COMPONENT: "DC",
    NameOID.USER_ID: "UID",
}
_SPECIAL = re.compile(r'([,+"\\<>;])')


def _escaped(value: str) -> str:
    value = _SPECIAL.sub(r"\\\1", value)
    if value[:1] in ("#", " "):
        value = "\\" + value
    if value.endswith(" ") and not value.endswith("\\ "):
        value = value[:-1] + "\\ "
    return value


def _der_hex(attribute: x509.NameAttribute) -> str:
    """The attribute's value as DER (its string type, a length, the bytes), in hex."""
    data = attribute.value.encode() if isinstance(attribute.value, str) else attribute.value
    size = len(data)
    length = bytes([size]) if size < 0x80 else bytes([0x81, size])
    return (bytes([attribute._type.value]) + length + data).hex()


def _attribute(attribute: x509.NameAttribute) -> str:
    keyword = _KEYWORDS.get(attribute.oid)
    if keyword is None:
        return f"{attribute.oid.dotted_string}=#{_der_hex(attribute)}"
    return f"{keyword}={_escaped(attribute.value)}"


def subject_name(certificate: x509.Certificate) -> str:
    """The certificate's subject, as ``X500Principal.getName()`` writes it."""
    return ",".join(
        "+".join(_attribute(a) for a in rdn) for rdn in reversed(certificate.subject.rdns)
    )


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(self.replacement, name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


_RULE = re.compile(
    r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)"
    r"/(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?))\s*(?:[,\n]|$)"
)


def _python_replacement(java: str) -> str:
    """Java's replacement syntax (``$1``, ``\\x`` a literal x) as ``re.sub``'s."""
    out = []
    i = 0
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
        elif char == "$" and (match := re.match(r"\$(\d+)", java[i:])):
            out.append(f"\\g<{match[1]}>")
            i += len(match[0])
        else:
            out.append("\\\\" if char == "\\" else char)
            i += 1
    return "".join(out)


class PrincipalMapper:
    """``ssl.principal.mapping.rules`` parsed; ConfigError names a rule it cannot read."""

    def __init__(self, rules: str = "DEFAULT"):
        self.rules: list[_Rule] = []
        position, text = 0, rules.strip()
        while position < len(text):
            match = _RULE.match(text, position)
            if match is None or match.end() == position:
                raise ConfigError(
                    f"Invalid value {rules} for configuration ssl.principal.mapping.rules: "
                    f"invalid rule at {text[position:]!r}"
                )
            position = match.end()
            if match["default"]:
                self.rules.append(_Rule(None))
                continue
            try:
                pattern = re.compile(match["pattern"])
            except re.error as error:
                raise ConfigError(
                    f"Invalid value {rules} for configuration ssl.principal.mapping.rules: "
                    f"pattern {match['pattern']!r}: {error}"
                ) from None
            replacement = _python_replacement(match["replacement"])
            self.rules.append(_Rule(pattern, replacement, match["case"]))

    def name(self, subject: str) -> str:
        """The principal's name for a certificate subject; ValueError if no rule applies."""
        for rule in self.rules:
            result = rule.apply(subject)
            if result is not None:
                return result
        raise ValueError(f"no rule of ssl.principal.mapping.rules applies to {subject!r}")
