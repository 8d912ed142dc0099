"""The operator's certificate authorities: issue, reload from PEM, renew and replace,
proved with real TLS handshakes over a socket pair, and the facts its deciders read."""

from __future__ import annotations

import datetime
import hashlib
import socket
import ssl
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from tidelog.security.certificates import (
    CertificateAuthority,
    Issued,
    certificate_facts,
    certificates_in,
    issued_by,
)

HOST = "broker-0.tidelog.test"
JAN_1 = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
DAY = datetime.timedelta(days=1)


def handshake(server: Issued, trusted_pem: bytes, tmp_path: Path) -> None:
    """A TLS handshake over a socket pair between a server presenting ``server``'s
    certificate alone (no chain, so the client's trust decides) and a client trusting
    ``trusted_pem``; the client's ``ssl.SSLCertVerificationError`` if it refuses."""
    certificate, key = tmp_path / "server.crt", tmp_path / "server.key"
    certificate.write_bytes(server.certificate_pem)
    key.write_bytes(server.key_pem())
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(certificate, key)
    client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client_context.load_verify_locations(cadata=trusted_pem.decode())
    server_end, client_end = socket.socketpair()
    for end in (server_end, client_end):
        end.settimeout(30)

    def serve() -> None:
        try:
            with server_context.wrap_socket(server_end, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            server_end.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        served = pool.submit(serve)
        try:
            with client_context.wrap_socket(client_end, server_hostname=HOST) as client:
                assert client.getpeercert()["subject"] == ((("commonName", "broker-0"),),)
        finally:
            client_end.close()
            served.result(timeout=30)


def test_a_leaf_verifies_under_the_ca_that_issued_it(tmp_path: Path) -> None:
    ca = CertificateAuthority()
    handshake(ca.issue("CN=broker-0", hosts=[HOST]), ca.certificate_pem, tmp_path)


def test_a_renewed_ca_certificate_alone_verifies_the_leaves_of_the_old_one(
    tmp_path: Path,
) -> None:
    ca = CertificateAuthority("CN=demo-cluster-ca v0,O=tidelog.dev")
    renewed = ca.renewed(valid_days=30)
    assert renewed.certificate.serial_number != ca.certificate.serial_number
    handshake(ca.issue("CN=broker-0", hosts=[HOST]), renewed.certificate_pem, tmp_path)
    # and the other way round: a broker reissued by the renewed CA, a client not yet told
    handshake(renewed.issue("CN=broker-0", hosts=[HOST]), ca.certificate_pem, tmp_path)


def test_a_replaced_ca_alone_refuses_the_leaves_of_the_old_one(tmp_path: Path) -> None:
    old = CertificateAuthority("CN=demo-cluster-ca v0,O=tidelog.dev")
    new = CertificateAuthority("CN=demo-cluster-ca v1,O=tidelog.dev")
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(old.issue("CN=broker-0", hosts=[HOST]), new.certificate_pem, tmp_path)


def test_trusting_old_and_new_accepts_leaves_of_both_after_a_replacement(
    tmp_path: Path,
) -> None:
    old = CertificateAuthority("CN=demo-cluster-ca v0,O=tidelog.dev")
    new = CertificateAuthority("CN=demo-cluster-ca v1,O=tidelog.dev")
    bundle = old.certificate_pem + new.certificate_pem
    for ca in (old, new):
        handshake(ca.issue("CN=broker-0", hosts=[HOST]), bundle, tmp_path)


@pytest.mark.parametrize(("rsa_bits", "password"), [(None, None), (2048, "secret")])
def test_a_ca_reloaded_from_its_pem_issues_leaves_that_verify(
    tmp_path: Path, rsa_bits: int | None, password: str | None
) -> None:
    ca = CertificateAuthority(rsa_bits=rsa_bits)
    loaded = CertificateAuthority.from_pem(ca.certificate_pem, ca.key_pem(password), password)
    assert loaded.certificate == ca.certificate
    leaf = loaded.issue("CN=broker-0", hosts=[HOST])
    assert issued_by(leaf.certificate_pem, ca.certificate_pem)
    handshake(leaf, ca.certificate_pem, tmp_path)


def test_a_key_that_is_not_the_certificates_is_refused() -> None:
    ca, other = CertificateAuthority(), CertificateAuthority()
    with pytest.raises(ValueError, match="not the key of CN=tidelog-ca"):
        CertificateAuthority.from_pem(ca.certificate_pem, other.key_pem())


def test_a_certificate_that_is_not_a_cas_is_refused() -> None:
    leaf = CertificateAuthority().issue("CN=broker-0")
    with pytest.raises(ValueError, match="CN=broker-0 is not a CA certificate"):
        CertificateAuthority.from_pem(leaf.certificate_pem, leaf.key_pem())


def test_a_bundle_is_not_one_ca() -> None:
    old, new = CertificateAuthority(), CertificateAuthority()
    with pytest.raises(ValueError, match="the PEM holds 2"):
        CertificateAuthority.from_pem(old.certificate_pem + new.certificate_pem, old.key_pem())


def test_dates_come_from_the_injected_clock_and_leaves_never_outlive_their_ca() -> None:
    ca = CertificateAuthority(valid_days=30, now=JAN_1)
    assert ca.certificate.not_valid_before_utc == JAN_1 - DAY
    assert ca.certificate.not_valid_after_utc == JAN_1 + 30 * DAY

    short = ca.issue("CN=broker-0", valid_days=5, now=JAN_1 + 10 * DAY)
    assert short.certificate.not_valid_before_utc == JAN_1 + 9 * DAY
    assert short.certificate.not_valid_after_utc == JAN_1 + 15 * DAY

    clamped = ca.issue("CN=broker-0", valid_days=365, now=JAN_1 + 10 * DAY)
    assert clamped.certificate.not_valid_after_utc == ca.certificate.not_valid_after_utc


def test_a_renewal_keeps_key_subject_and_key_identifier_and_moves_the_dates() -> None:
    ca = CertificateAuthority("CN=demo-cluster-ca v0,O=tidelog.dev", valid_days=30, now=JAN_1)
    renewed = ca.renewed(valid_days=60, now=JAN_1 + 20 * DAY)
    assert renewed.key_pem() == ca.key_pem()
    before, after = (
        certificate_facts(ca.certificate_pem),
        certificate_facts(renewed.certificate_pem),
    )
    assert after.subject == after.issuer == before.subject == "CN=demo-cluster-ca v0,O=tidelog.dev"
    assert after.subject_key_id == after.authority_key_id == before.subject_key_id
    assert after.serial != before.serial
    assert (after.not_before, after.not_after) == (JAN_1 + 19 * DAY, JAN_1 + 80 * DAY)


def test_a_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        CertificateAuthority(now=datetime.datetime(2020, 1, 1))


def test_facts_of_a_ca_and_of_a_leaf() -> None:
    ca = CertificateAuthority("CN=demo-clients-ca v0,O=tidelog.dev", now=JAN_1)
    leaf = ca.issue("CN=alice,OU=eng", hosts=[HOST, "127.0.0.1"], valid_days=10, now=JAN_1)
    ca_facts, leaf_facts = (
        certificate_facts(ca.certificate_pem),
        certificate_facts(leaf.certificate_pem),
    )
    der = leaf.certificate.public_bytes(serialization.Encoding.DER)
    assert leaf_facts.sha256_fingerprint == hashlib.sha256(der).hexdigest()
    assert leaf_facts.authority_key_id == ca_facts.subject_key_id is not None
    assert leaf_facts.subject_key_id not in (None, ca_facts.subject_key_id)
    assert (ca_facts.is_ca, leaf_facts.is_ca) == (True, False)
    assert leaf_facts.subject == "CN=alice,OU=eng"
    assert leaf_facts.issuer == ca_facts.subject == "CN=demo-clients-ca v0,O=tidelog.dev"
    assert leaf_facts.serial == leaf.certificate.serial_number
    assert (leaf_facts.not_before, leaf_facts.not_after) == (JAN_1 - DAY, JAN_1 + 10 * DAY)
    assert leaf_facts.dns_names == (HOST,)
    assert ca_facts.dns_names == ()


def test_a_bundle_splits_in_order_and_has_no_single_facts() -> None:
    old, new = CertificateAuthority("CN=ca v0"), CertificateAuthority("CN=ca v1")
    bundle = old.certificate_pem + new.certificate_pem
    assert certificates_in(bundle) == [old.certificate, new.certificate]
    with pytest.raises(ValueError, match="the PEM holds 2"):
        certificate_facts(bundle)


def test_issued_by_checks_the_signature_not_only_the_name() -> None:
    ca = CertificateAuthority()
    leaf = ca.issue("CN=broker-0").certificate_pem
    same_name_other_key = CertificateAuthority()
    assert issued_by(leaf, ca.certificate_pem)
    assert issued_by(leaf, ca.renewed(valid_days=30).certificate_pem)
    assert not issued_by(leaf, same_name_other_key.certificate_pem)
    assert not issued_by(leaf, CertificateAuthority("CN=tidelog-ca v1").certificate_pem)
