"""The renewal of a Cluster's CA (the cluster CA or the clients CA), pure: what the pass
observed of it (:class:`CaObserved`), the spec's :class:`CaPolicy`, and one decision,
:class:`RenewalStep`, from :func:`renewal_step`, the one function that owns every
transition. The commands it decides act in ``ca_renewal_commands``.

A renewal trusts the new CA beside the old everywhere before any leaf changes, then
reissues the leaves from the new CA, then trusts the new CA alone:

- **Trust**: ``RenewCa`` has written generation ``to`` to the CA Secret, the old
  certificate kept as ``ca-previous.crt``; the certificate step writes the bundle (every
  certificate trusted: current and previous) and the pods that mount it roll (their
  templates carry a hash of it). No leaf of this CA is issued meanwhile
  (``signing_paused``): a leaf of a new key would not be trusted yet.
- **Reissue**: the certificate step reissues this CA's leaves of an older generation;
  the brokers serve theirs (reloaded, no restart), ZooKeeper rolls.
- **Drop**: ``ForgetPreviousCa`` drops the previous certificate; the bundle trusts the
  current one alone and the pods roll again.

Each step is *done* by observation only (the Secret, the bundle, the leaves, the pods)
and every command is idempotent, so an operator stopped at any point resumes: a step
whose command did not take effect gives it again. The Secret is the durable record;
the status (``status.certificates.clusterCa`` / ``.clientsCa``, :class:`CaRecord`) says
which step runs. Should the status lag the Secret (the pass stopped after ``RenewCa``,
before its status write), the renewal resumes at Trust.

A renewal starts (``now`` against the current certificate's ``notAfter``):

- *Imminent*: less than 24 h left, or expired: at once, maintenance windows or not (a
  CA must never expire waiting for a window);
- a force annotation on the CA Secret (*ForceRenew*: same key; *ForceReplace*: new key)
  or the renewal period reached (*Expiry*: ``now >= notAfter - renewalDays``, same key):
  inside a maintenance window, or at once when none is configured.

Once started, a renewal goes on outside windows: a CA trusted half-way (new leaves that
some pods do not trust yet, or an old CA trusted long after) is worse than a roll
outside the window, and every step waits for the roller, which keeps every partition at
``min.insync.replicas``. A force annotation seen while a renewal runs does not start
another: ``RenewCa`` is given again, which writes nothing (the Secret is at ``to``) and
removes the annotation.

The table, first matching row deciding (N: the Secret's generation; T: the renewal's
``to``; "window open": no window configured, or ``now`` inside one):

===  =======  ============================================  ===========  =======================
row  step     observed                                      action       commands; record
===  =======  ============================================  ===========  =======================
1    any      no CA certificate                             NOTHING      -; unchanged
2    none     N > recorded generation, or no record and a   (resume)     renewal {to N, Trust},
              previous certificate in the Secret                         then as rows 10-13
3    none     less than 24 h left, or expired               START        RenewCa(N+1); Trust
4    none     a force annotation, window open               START        RenewCa(N+1); Trust
5    none     renewal period reached, window open           START        RenewCa(N+1); Trust
6    none     a force annotation, or renewal period         WAIT_WINDOW  -; {N, notAfter}
              reached
7    none     otherwise                                     NOTHING      -; {N, notAfter}
8    any      N > T (the Secret moved on)                   (resume)     renewal {to N, Trust}
9    Reissue  N < T (the CA was made anew)                  NOTHING      -; {N, notAfter}: the
     Drop                                                                renewal is abandoned
10   any      a force annotation                            (and on)     + RenewCa(T), which
                                                                         removes it
11   Trust    N < T (RenewCa has not taken effect)          TRUST        RenewCa(T); unchanged
12   Trust    bundle not {current, previous}, or not        TRUST        -; unchanged
              rolled
13   Trust    otherwise                                     REISSUE      -; step Reissue
14   Reissue  a leaf older than T, a broker serving an      REISSUE      -; unchanged
              older one, or not rolled
15   Reissue  otherwise                                     DROP         ForgetPreviousCa;
                                                                         step Drop
16   Drop     a previous certificate in the Secret          DROP         ForgetPreviousCa;
                                                                         unchanged
17   Drop     bundle not {current}, or not rolled           DROP         -; unchanged
18   Drop     otherwise                                     FINISH       -; {T, notAfter}, no
                                                                         renewal
===  =======  ============================================  ===========  =======================

``signing_paused`` holds for START and TRUST (rows 3-5, 11, 12): the CA Secret may hold
the new CA already while the pods do not trust it yet. Steps never go backwards: only a
Secret that moved (row 8) or was made anew (row 9) restarts or ends a renewal.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tidelog.security.certificates import CertificateFacts
from tidelog_operator.cluster.ca_renewal_commands import (
    FORCE_RENEW_ANNOTATION,
    FORCE_REPLACE_ANNOTATION,
    ForgetPreviousCa,
    RenewCa,
)
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.command_base import Command
from tidelog_operator.maintenance import CronExpression, inside_window
from tidelog_operator.spec_security import CertificatesSpec

__all__ = [
    "IMMINENT",
    "CaObserved",
    "CaPolicy",
    "CaRecord",
    "Renewal",
    "RenewalAction",
    "RenewalPhase",
    "RenewalStep",
    "RenewalTrigger",
    "force_request",
    "renewal_step",
    "status_key",
]

# Less than this left: the renewal starts at once, maintenance windows or not.
IMMINENT = datetime.timedelta(hours=24)
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


class RenewalAction(enum.Enum):
    NOTHING = "Nothing"  # no renewal runs or is due
    WAIT_WINDOW = "WaitWindow"  # due or asked for, outside every maintenance window
    START = "Start"
    TRUST = "Trust"  # at Trust, waiting
    REISSUE = "Reissue"  # at Reissue (entered, or waiting)
    DROP = "Drop"  # at Drop (entered, or waiting)
    FINISH = "Finish"


class RenewalPhase(enum.Enum):
    """The step a renewal is at (``renewal.step`` in the status)."""

    TRUST = "Trust"
    REISSUE = "Reissue"
    DROP = "Drop"


class RenewalTrigger(enum.Enum):
    EXPIRY = "Expiry"
    IMMINENT = "Imminent"
    FORCE_RENEW = "ForceRenew"
    FORCE_REPLACE = "ForceReplace"


@dataclass(frozen=True)
class Renewal:
    """A renewal under way: to generation ``to``, at step ``phase``."""

    to: int
    phase: RenewalPhase
    key_replaced: bool
    trigger: RenewalTrigger
    since: datetime.datetime


@dataclass(frozen=True)
class CaRecord:
    """A CA's status record: its generation and end, and the renewal under way."""

    generation: int
    not_after: datetime.datetime
    renewal: Renewal | None = None

    def as_status(self) -> dict[str, Any]:
        """The record as ``status.certificates.<kind>Ca`` holds it."""
        status: dict[str, Any] = {
            "generation": self.generation,
            "notAfter": self.not_after.strftime(_STAMP),
        }
        if self.renewal is not None:
            status["renewal"] = {
                "to": self.renewal.to,
                "step": self.renewal.phase.value,
                "keyReplaced": self.renewal.key_replaced,
                "trigger": self.renewal.trigger.value,
                "since": self.renewal.since.strftime(_STAMP),
            }
        return status

    @classmethod
    def from_status(cls, raw: Mapping[str, Any] | None) -> CaRecord | None:
        """The record of :meth:`as_status`; None when there is none."""
        if not raw:
            return None
        renewal = raw.get("renewal")
        return cls(
            generation=raw["generation"],
            not_after=datetime.datetime.fromisoformat(raw["notAfter"]),
            renewal=None
            if not renewal
            else Renewal(
                to=renewal["to"],
                phase=RenewalPhase(renewal["step"]),
                key_replaced=renewal["keyReplaced"],
                trigger=RenewalTrigger(renewal["trigger"]),
                since=datetime.datetime.fromisoformat(renewal["since"]),
            ),
        )


def status_key(kind: CaKind) -> str:
    """The key of ``kind``'s record under ``status.certificates``."""
    return "clusterCa" if kind is CaKind.CLUSTER else "clientsCa"


def force_request(annotations: Mapping[str, str] | None) -> RenewalTrigger | None:
    """The renewal a CA Secret's annotations ask for (a key replacement over a renewal
    when both are set), None when none."""
    annotations = annotations or {}
    if FORCE_REPLACE_ANNOTATION in annotations:
        return RenewalTrigger.FORCE_REPLACE
    if FORCE_RENEW_ANNOTATION in annotations:
        return RenewalTrigger.FORCE_RENEW
    return None


@dataclass(frozen=True)
class CaObserved:
    """What a pass observed of one CA; the pass computes the booleans.

    ``current`` and ``previous`` are the facts of the Secret's ``ca.crt`` and
    ``ca-previous.crt``; ``generation`` its ``tidelog.dev/ca-generation``; ``force`` the
    request of its annotations (:func:`force_request`); ``recorded`` the status record.
    ``trusted``: the fingerprints of this CA's certificates in its bundle (for the
    clients CA, ``<c>-clients-ca-cert`` without the cluster CA's).
    ``leaves_current``: every leaf this CA signs is of the Secret's generation;
    ``served_current``: every live broker serves the leaf of its Secret;
    ``rolled``: every pod that trusts this CA runs with the bundle as observed and is
    ready (the brokers through the roller, ZooKeeper's StatefulSet updated).
    """

    kind: CaKind
    current: CertificateFacts | None
    previous: CertificateFacts | None
    generation: int
    force: RenewalTrigger | None
    recorded: CaRecord | None
    trusted: frozenset[str]
    leaves_current: bool
    served_current: bool
    rolled: bool


@dataclass(frozen=True)
class CaPolicy:
    """How long a new CA certificate lasts, how long before its end it is renewed, and
    the maintenance windows a renewal starts in (none: any time)."""

    validity_days: int = 365
    renewal_days: int = 30
    windows: tuple[CronExpression, ...] = ()

    @classmethod
    def of(cls, certificates: CertificatesSpec, kind: CaKind) -> CaPolicy:
        ca = certificates.of(kind.value)
        return cls(ca.validity_days, ca.renewal_days, certificates.maintenance_windows)

    def window_open(self, now: datetime.datetime) -> bool:
        return not self.windows or inside_window(self.windows, now)


@dataclass(frozen=True)
class RenewalStep:
    """The decision: its action, commands, the CA's new status record, whether no leaf
    of this CA may be issued in this pass, and why (for a condition or an event)."""

    action: RenewalAction
    commands: tuple[Command, ...]
    record: CaRecord | None
    signing_paused: bool
    reason: str


def _name(kind: CaKind) -> str:
    return f"the {kind.value} CA"


def _resumed(observed: CaObserved, to: int, now: datetime.datetime) -> Renewal:
    """A renewal to ``to`` found in the Secret but not in the status: at Trust, whose
    observation says whether it is done; its trigger the best guess (it only informs)."""
    current, previous = observed.current, observed.previous
    replaced = (
        previous is not None
        and current is not None
        and previous.subject_key_id != current.subject_key_id
    )
    if observed.force is not None:
        trigger = observed.force
    elif replaced:
        trigger = RenewalTrigger.FORCE_REPLACE
    elif previous is not None and previous.not_after - now < IMMINENT:
        trigger = RenewalTrigger.IMMINENT
    else:
        trigger = RenewalTrigger.EXPIRY
    return Renewal(to, RenewalPhase.TRUST, replaced, trigger, now)


def _start(
    observed: CaObserved, policy: CaPolicy, now: datetime.datetime, record: CaRecord
) -> RenewalStep:
    """Rows 3-7: no renewal runs."""
    current = observed.current
    assert current is not None
    name, ends = _name(observed.kind), current.not_after.strftime(_STAMP)
    due = now >= current.not_after - datetime.timedelta(days=policy.renewal_days)
    trigger = None
    if current.not_after - now < IMMINENT:
        trigger = RenewalTrigger.IMMINENT
    elif observed.force is not None and policy.window_open(now):
        trigger = observed.force
    elif due and policy.window_open(now):
        trigger = RenewalTrigger.EXPIRY
    elif observed.force is not None or due:
        asked = "asked for" if observed.force is not None else f"due (it ends at {ends})"
        reason = f"the renewal of {name} is {asked}: it waits for a maintenance window"
        return RenewalStep(RenewalAction.WAIT_WINDOW, (), record, False, reason)
    if trigger is None:
        return RenewalStep(RenewalAction.NOTHING, (), record, False, f"{name} ends at {ends}")
    replace_key = observed.force is RenewalTrigger.FORCE_REPLACE
    to = observed.generation + 1
    renewal = Renewal(to, RenewalPhase.TRUST, replace_key, trigger, now)
    command = RenewCa(observed.kind, to, replace_key)
    how = "with a new key" if replace_key else "with the same key"
    reason = f"{name} is renewed {how} ({trigger.value}): generation {to}, trusted first"
    return RenewalStep(
        RenewalAction.START, (command,), replace(record, renewal=renewal), True, reason
    )


def _trust(observed: CaObserved, at: CaRecord, cleanup: tuple[Command, ...]) -> RenewalStep:
    """Rows 11-13."""
    renewal, current, previous = at.renewal, observed.current, observed.previous
    assert renewal is not None and current is not None
    name, to = _name(observed.kind), renewal.to
    if observed.generation < to:  # row 11
        renew = RenewCa(observed.kind, to, renewal.key_replaced)
        reason = f"{name}: generation {to} is being written to its Secret"
        return RenewalStep(RenewalAction.TRUST, (renew,), at, True, reason)
    wanted = {current.sha256_fingerprint}
    if previous is not None:
        wanted.add(previous.sha256_fingerprint)
    if observed.trusted != wanted or not observed.rolled:  # row 12
        waits = "its bundle" if observed.trusted != wanted else "the pods to roll"
        reason = f"{name}: generation {to} is trusted beside the old; waiting for {waits}"
        return RenewalStep(RenewalAction.TRUST, cleanup, at, True, reason)
    reissue = replace(at, renewal=replace(renewal, phase=RenewalPhase.REISSUE))  # row 13
    reason = f"{name}: generation {to} is trusted everywhere; its leaves are reissued"
    return RenewalStep(RenewalAction.REISSUE, cleanup, reissue, False, reason)


def _reissue(observed: CaObserved, at: CaRecord, cleanup: tuple[Command, ...]) -> RenewalStep:
    """Rows 14-15."""
    renewal = at.renewal
    assert renewal is not None
    name, to = _name(observed.kind), renewal.to
    if not observed.leaves_current:
        waits = "leaves of an older generation"
    elif not observed.served_current:
        waits = "brokers serving an older leaf"
    elif not observed.rolled:
        waits = "the pods to roll"
    else:  # row 15
        drop = replace(at, renewal=replace(renewal, phase=RenewalPhase.DROP))
        reason = f"{name}: every leaf is of generation {to}; the old CA is dropped"
        commands = (*cleanup, ForgetPreviousCa(observed.kind))
        return RenewalStep(RenewalAction.DROP, commands, drop, False, reason)
    reason = f"{name}: leaves are reissued from generation {to}; waiting for {waits}"
    return RenewalStep(RenewalAction.REISSUE, cleanup, at, False, reason)  # row 14


def _drop(observed: CaObserved, at: CaRecord, cleanup: tuple[Command, ...]) -> RenewalStep:
    """Rows 16-18."""
    renewal, current = at.renewal, observed.current
    assert renewal is not None and current is not None
    name, to = _name(observed.kind), renewal.to
    if observed.previous is not None:  # row 16
        reason = f"{name}: the previous certificate is being dropped from its Secret"
        commands = (*cleanup, ForgetPreviousCa(observed.kind))
        return RenewalStep(RenewalAction.DROP, commands, at, False, reason)
    if observed.trusted != {current.sha256_fingerprint} or not observed.rolled:  # row 17
        bundle = observed.trusted != {current.sha256_fingerprint}
        waits = "its bundle" if bundle else "the pods to roll"
        reason = f"{name}: generation {to} is trusted alone; waiting for {waits}"
        return RenewalStep(RenewalAction.DROP, cleanup, at, False, reason)
    finished = CaRecord(to, current.not_after)  # row 18
    reason = f"{name} is renewed: generation {to}, until {current.not_after.strftime(_STAMP)}"
    return RenewalStep(RenewalAction.FINISH, cleanup, finished, False, reason)


_STEPS = {
    RenewalPhase.TRUST: _trust,
    RenewalPhase.REISSUE: _reissue,
    RenewalPhase.DROP: _drop,
}


def renewal_step(observed: CaObserved, policy: CaPolicy, now: datetime.datetime) -> RenewalStep:
    """The decision for one CA at ``now`` (aware), by the table of this module."""
    recorded, current, generation = observed.recorded, observed.current, observed.generation
    if current is None:  # row 1
        reason = f"{_name(observed.kind)} is not made yet"
        return RenewalStep(RenewalAction.NOTHING, (), recorded, False, reason)
    found = CaRecord(generation, current.not_after)
    renewal = recorded.renewal if recorded is not None else None
    if renewal is None:
        if recorded is not None and recorded.generation >= generation:
            return _start(observed, policy, now, found)  # rows 3-7
        if recorded is None and observed.previous is None:
            return _start(observed, policy, now, found)  # rows 3-7
        renewal = _resumed(observed, generation, now)  # row 2
    elif generation > renewal.to:  # row 8
        renewal = _resumed(observed, generation, now)
    elif generation < renewal.to and renewal.phase is not RenewalPhase.TRUST:  # row 9
        reason = f"{_name(observed.kind)} was made anew: its renewal to {renewal.to} is abandoned"
        return RenewalStep(RenewalAction.NOTHING, (), found, False, reason)
    base = recorded or CaRecord(generation - 1, (observed.previous or current).not_after)
    at = replace(base, renewal=renewal)
    cleanup: tuple[Command, ...] = ()
    if observed.force is not None:  # row 10
        cleanup = (RenewCa(observed.kind, renewal.to, renewal.key_replaced),)
    return _STEPS[renewal.phase](observed, at, cleanup)
