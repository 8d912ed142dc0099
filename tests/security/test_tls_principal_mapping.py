"""A client certificate's principal: the subject as Java's X500Principal writes it
(RFC 2253), then Kafka's ssl.principal.mapping.rules."""

from __future__ import annotations

import pytest
from cryptography import x509

from tidelog.security.certificates import CertificateAuthority
from tidelog.security.principal_mapping import PrincipalMapper, subject_name
from tidelog.server.config_key import ConfigError

CA = CertificateAuthority()


def subject_of(rfc4514: str) -> str:
    return subject_name(CA.issue(rfc4514).certificate)


def test_the_subject_is_written_most_specific_first_with_rfc2253_keywords() -> None:
    assert subject_of("CN=alice,OU=eng,O=Acme Ltd,L=Leeds,ST=Yorks,C=GB") == (
        "CN=alice,OU=eng,O=Acme Ltd,L=Leeds,ST=Yorks,C=GB"
    )
    assert subject_of("CN=a\\,b,O=x\\+y") == "CN=a\\,b,O=x\\+y"
    assert subject_of("CN=bob+UID=42,DC=example,DC=com") in (
        "CN=bob+UID=42,DC=example,DC=com",
        "UID=42+CN=bob,DC=example,DC=com",
    )


def test_attributes_without_a_keyword_are_an_oid_and_their_der_in_hex() -> None:
    name = x509.Name(
        [
            x509.NameAttribute(x509.NameOID.EMAIL_ADDRESS, "a@b.c"),
            x509.NameAttribute(x509.NameOID.COMMON_NAME, "alice"),
        ]
    )
    subject = subject_of(name.rfc4514_string())
    assert subject == "CN=alice,1.2.840.113549.1.9.1=#1605614062 2e63".replace(" ", "")


@pytest.mark.parametrize(
    ("rules", "subject", "name"),
    [
        ("DEFAULT", "CN=alice,OU=eng", "CN=alice,OU=eng"),
        ("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/", "CN=alice,OU=eng", "alice@eng"),
        ("RULE:^CN=(.*?),OU=(.*?)$/$1/U, DEFAULT", "CN=alice,OU=eng", "ALICE"),
        ("RULE:^CN=(.*?),OU=ops$/$1/L,DEFAULT", "CN=Alice,OU=eng", "CN=Alice,OU=eng"),
        ("RULE:^CN=([^,]*).*$/$1/L", "CN=Alice,OU=eng,O=x", "alice"),
        ("RULE:^CN=(.*)$/u\\/$1/\nDEFAULT", "CN=bob", "u/bob"),
        ("RULE:(.*)/$1x/", "abc", "abcxx"),  # every match replaced, as Java's replaceAll
    ],
)
def test_kafka_mapping_rules(rules: str, subject: str, name: str) -> None:
    assert PrincipalMapper(rules).name(subject) == name


def test_no_rule_applying_refuses_the_principal() -> None:
    with pytest.raises(ValueError, match="no rule"):
        PrincipalMapper("RULE:^CN=(.*),OU=ops$/$1/").name("CN=alice,OU=eng")


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*)/$1", "NONSENSE", "RULE:(/$1/"])
def test_rules_that_cannot_be_read_are_refused(rules: str) -> None:
    with pytest.raises(ConfigError, match="ssl.principal.mapping.rules"):
        PrincipalMapper(rules)
