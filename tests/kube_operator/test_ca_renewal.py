"""The CA renewal's decisions (pure): when a renewal starts (expiry, imminent expiry,
force annotations, maintenance windows), each step's way on by observation alone, the
resumption of a renewal the status lost, and a renewal carried to its end over a small
world in memory by an operator stopped after every possible number of writes."""

from __future__ import annotations

import contextlib
import datetime
from dataclasses import dataclass, field, replace

import pytest

from tidelog.security.certificates import CertificateFacts
from tidelog_operator.cluster.ca_renewal import (
    CaObserved,
    CaPolicy,
    CaRecord,
    Renewal,
    RenewalAction,
    RenewalPhase,
    RenewalStep,
    RenewalTrigger,
    force_request,
    renewal_step,
    status_key,
)
from tidelog_operator.cluster.ca_renewal_commands import ForgetPreviousCa, RenewCa
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.maintenance import parse_cron
from tidelog_operator.spec import parse_cluster

DAY = datetime.timedelta(days=1)
NOW = datetime.datetime(2026, 3, 2, 2, 30, tzinfo=datetime.UTC)  # a Monday, 02:30
ENDS = NOW + 200 * DAY
NONE, OPEN, CLOSED = (), (parse_cron("* 2 * * *"),), (parse_cron("* 14 * * *"),)
CLUSTER = CaKind.CLUSTER
TRUST, REISSUE, DROP = RenewalPhase.TRUST, RenewalPhase.REISSUE, RenewalPhase.DROP


def cert(name: str, not_after: datetime.datetime = ENDS, key: str = "k0") -> CertificateFacts:
    """A CA certificate's facts: ``name`` its fingerprint, ``key`` its key identifier."""
    return CertificateFacts(
        subject=f"CN={name}",
        issuer=f"CN={name}",
        serial=1,
        not_before=NOW - 100 * DAY,
        not_after=not_after,
        sha256_fingerprint=name,
        is_ca=True,
        subject_key_id=key,
        authority_key_id=key,
        dns_names=(),
    )


def quiet(**changes) -> CaObserved:
    """The cluster CA at generation 1, recorded, trusted, nothing under way."""
    observed = CaObserved(
        kind=CLUSTER,
        current=cert("g1"),
        previous=None,
        generation=1,
        force=None,
        recorded=CaRecord(1, ENDS),
        trusted=frozenset({"g1"}),
        leaves_current=True,
        served_current=True,
        rolled=True,
    )
    return replace(observed, **changes)


def policy(windows=NONE) -> CaPolicy:
    return CaPolicy(validity_days=365, renewal_days=30, windows=windows)


# --- when a renewal starts ---------------------------------------------------------

IMMINENT, EXPIRY = RenewalTrigger.IMMINENT, RenewalTrigger.EXPIRY
FORCE_RENEW, FORCE_REPLACE = RenewalTrigger.FORCE_RENEW, RenewalTrigger.FORCE_REPLACE
START, WAIT_WINDOW, NOTHING = RenewalAction.START, RenewalAction.WAIT_WINDOW, RenewalAction.NOTHING
SITUATIONS = {
    "quiet": {},
    "due": {"current": cert("g1", NOW + 10 * DAY)},
    "due this minute": {"current": cert("g1", NOW + 30 * DAY)},
    "due in a minute": {"current": cert("g1", NOW + 30 * DAY + datetime.timedelta(minutes=1))},
    "a day left": {"current": cert("g1", NOW + DAY)},
    "imminent": {"current": cert("g1", NOW + 23 * datetime.timedelta(hours=1))},
    "expired": {"current": cert("g1", NOW - DAY)},
    "renew asked": {"force": FORCE_RENEW},
    "replace asked": {"force": FORCE_REPLACE},
    "replace asked, imminent": {
        "force": FORCE_REPLACE,
        "current": cert("g1", NOW + datetime.timedelta(hours=2)),
    },
}


@pytest.mark.parametrize(
    ("situation", "windows", "action", "trigger", "replace_key"),
    [
        ("quiet", NONE, NOTHING, None, False),
        ("quiet", OPEN, NOTHING, None, False),
        ("quiet", CLOSED, NOTHING, None, False),
        ("due", NONE, START, EXPIRY, False),
        ("due", OPEN, START, EXPIRY, False),
        ("due", CLOSED, WAIT_WINDOW, None, False),
        ("due this minute", NONE, START, EXPIRY, False),
        ("due in a minute", NONE, NOTHING, None, False),
        ("a day left", CLOSED, WAIT_WINDOW, None, False),
        ("imminent", NONE, START, IMMINENT, False),
        ("imminent", CLOSED, START, IMMINENT, False),
        ("expired", CLOSED, START, IMMINENT, False),
        ("renew asked", NONE, START, FORCE_RENEW, False),
        ("renew asked", OPEN, START, FORCE_RENEW, False),
        ("renew asked", CLOSED, WAIT_WINDOW, None, False),
        ("replace asked", OPEN, START, FORCE_REPLACE, True),
        ("replace asked", CLOSED, WAIT_WINDOW, None, False),
        ("replace asked, imminent", CLOSED, START, IMMINENT, True),
    ],
)
def test_a_renewal_starts_when_due_asked_or_imminent_and_in_a_window(
    situation, windows, action, trigger, replace_key
):
    observed = quiet(**SITUATIONS[situation])
    step = renewal_step(observed, policy(windows), NOW)
    assert step.action is action, step.reason
    record = CaRecord(1, observed.current.not_after)
    if action is START:
        assert step.commands == (RenewCa(CLUSTER, 2, replace_key),)
        assert step.signing_paused
        assert step.record == replace(record, renewal=Renewal(2, TRUST, replace_key, trigger, NOW))
    else:
        assert (step.commands, step.signing_paused, step.record) == ((), False, record)
    if action is WAIT_WINDOW:
        assert "maintenance window" in step.reason


def test_no_ca_yet_decides_nothing_and_keeps_the_record():
    step = renewal_step(quiet(current=None, recorded=None), policy(), NOW)
    assert (step.action, step.commands, step.record) == (NOTHING, (), None)


def test_a_quiet_ca_is_recorded_as_observed():
    """The first record, and a CA made anew (its Secret deleted) at a lower generation."""
    first = renewal_step(quiet(recorded=None), policy(), NOW)
    assert (first.action, first.record) == (NOTHING, CaRecord(1, ENDS))
    anew = renewal_step(quiet(generation=0, recorded=CaRecord(3, ENDS)), policy(), NOW)
    assert (anew.action, anew.record) == (NOTHING, CaRecord(0, ENDS))


# --- a renewal's steps ---------------------------------------------------------------

OLD, NEW = cert("g1", NOW + 10 * DAY), cert("g2", NOW + 365 * DAY, key="k2")
SINCE = NOW - 3 * datetime.timedelta(hours=1)


def renewing(phase: RenewalPhase, **changes) -> CaObserved:
    """A key replacement to generation 2 at ``phase``, everything it waits for done."""
    renewal = Renewal(2, phase, True, FORCE_REPLACE, SINCE)
    dropped = phase is DROP
    observed = {
        "current": NEW,
        "previous": None if dropped else OLD,
        "generation": 2,
        "recorded": CaRecord(1, OLD.not_after, renewal),
        "trusted": frozenset({"g2"} if dropped else {"g1", "g2"}),
    }
    return quiet(**{**observed, **changes})


def at_phase(phase: RenewalPhase) -> CaRecord:
    return CaRecord(1, OLD.not_after, Renewal(2, phase, True, FORCE_REPLACE, SINCE))


RENEW_AGAIN = RenewCa(CLUSTER, 2, True)
FORGET = ForgetPreviousCa(CLUSTER)
A = RenewalAction


@pytest.mark.parametrize(
    ("phase", "changes", "action", "commands", "record", "paused"),
    [
        # Trust: the Secret written, the bundle holding both, the pods rolled to it
        (TRUST, {"generation": 1}, A.TRUST, (RENEW_AGAIN,), at_phase(TRUST), True),
        (TRUST, {"trusted": frozenset({"g1"})}, A.TRUST, (), at_phase(TRUST), True),
        (TRUST, {"trusted": frozenset({"g2"})}, A.TRUST, (), at_phase(TRUST), True),
        (TRUST, {"rolled": False}, A.TRUST, (), at_phase(TRUST), True),
        (TRUST, {}, A.REISSUE, (), at_phase(REISSUE), False),
        (TRUST, {"force": FORCE_RENEW}, A.REISSUE, (RENEW_AGAIN,), at_phase(REISSUE), False),
        (TRUST, {"leaves_current": False}, A.REISSUE, (), at_phase(REISSUE), False),
        # Reissue: every leaf of generation 2, served, the pods rolled
        (REISSUE, {"leaves_current": False}, A.REISSUE, (), at_phase(REISSUE), False),
        (REISSUE, {"served_current": False}, A.REISSUE, (), at_phase(REISSUE), False),
        (REISSUE, {"rolled": False}, A.REISSUE, (), at_phase(REISSUE), False),
        (REISSUE, {}, A.DROP, (FORGET,), at_phase(DROP), False),
        (
            REISSUE,
            {"force": FORCE_REPLACE},
            A.DROP,
            (RENEW_AGAIN, FORGET),
            at_phase(DROP),
            False,
        ),
        # Drop: the previous certificate gone, the bundle holding the new alone, rolled
        (
            DROP,
            {"previous": OLD, "trusted": frozenset({"g1", "g2"})},
            A.DROP,
            (FORGET,),
            at_phase(DROP),
            False,
        ),
        (DROP, {"trusted": frozenset({"g1", "g2"})}, A.DROP, (), at_phase(DROP), False),
        (DROP, {"rolled": False}, A.DROP, (), at_phase(DROP), False),
        (DROP, {}, A.FINISH, (), CaRecord(2, NEW.not_after), False),
        (DROP, {"force": FORCE_RENEW}, A.FINISH, (RENEW_AGAIN,), CaRecord(2, NEW.not_after), False),
    ],
)
@pytest.mark.parametrize("windows", [NONE, OPEN, CLOSED], ids=["no window", "open", "closed"])
def test_each_step_goes_on_by_observation_alone_in_a_window_or_not(
    phase, changes, action, commands, record, paused, windows
):
    step = renewal_step(renewing(phase, **changes), policy(windows), NOW)
    assert step.action is action, step.reason
    assert (step.commands, step.record, step.signing_paused) == (commands, record, paused)


def test_a_renewal_goes_on_when_the_ca_is_imminent_or_due_again():
    """A renewal under way is never restarted by its trigger seen again."""
    near = cert("g2", NOW + datetime.timedelta(hours=1), key="k2")
    step = renewal_step(renewing(REISSUE, current=near), policy(CLOSED), NOW)
    assert (step.action, step.commands) == (A.DROP, (FORGET,))


def test_a_secret_that_moved_past_the_renewal_restarts_it_at_trust():
    third = cert("g3", NOW + 365 * DAY, key="k3")
    observed = renewing(DROP, current=third, previous=NEW, generation=3)
    step = renewal_step(observed, policy(), NOW)
    assert step.action is A.TRUST and step.signing_paused
    assert step.record == CaRecord(1, OLD.not_after, Renewal(3, TRUST, True, FORCE_REPLACE, NOW))


def test_a_ca_made_anew_abandons_the_renewal_past_trust():
    made = cert("g0", NOW + 365 * DAY, key="k9")
    observed = renewing(REISSUE, current=made, previous=None, generation=0)
    step = renewal_step(observed, policy(), NOW)
    assert (step.action, step.commands, step.record) == (NOTHING, (), CaRecord(0, made.not_after))
    assert "abandoned" in step.reason


# --- resuming a renewal the status does not hold ----------------------------------------


def test_a_secret_ahead_of_the_status_resumes_at_trust():
    """The pass that wrote generation 2 stopped before its status write."""
    observed = renewing(TRUST, recorded=CaRecord(1, OLD.not_after), trusted=frozenset({"g1"}))
    step = renewal_step(observed, policy(CLOSED), NOW)
    assert (step.action, step.commands, step.signing_paused) == (A.TRUST, (), True)
    resumed = Renewal(2, TRUST, True, FORCE_REPLACE, NOW)  # a new key: asked for
    assert step.record == CaRecord(1, OLD.not_after, resumed)


def test_a_resumed_renewal_already_trusted_goes_on_to_reissue():
    observed = renewing(TRUST, recorded=CaRecord(1, OLD.not_after))
    step = renewal_step(observed, policy(), NOW)
    assert step.action is A.REISSUE and not step.signing_paused
    assert step.record.renewal.phase is REISSUE


def test_a_resumed_renewal_removes_a_force_annotation_left_behind():
    """Stopped between the Secret's write and the annotation's removal: the annotation
    is not a new request; RenewCa is given again, which only removes it."""
    same_key = cert("g2", NOW + 365 * DAY)
    observed = renewing(
        TRUST,
        current=same_key,
        recorded=CaRecord(1, OLD.not_after),
        force=FORCE_RENEW,
        trusted=frozenset({"g1"}),
    )
    step = renewal_step(observed, policy(), NOW)
    assert (step.action, step.commands) == (A.TRUST, (RenewCa(CLUSTER, 2, False),))
    assert step.record.renewal == Renewal(2, TRUST, False, FORCE_RENEW, NOW)


@pytest.mark.parametrize(
    ("old", "trigger"),
    [(OLD, EXPIRY), (cert("g1", NOW + datetime.timedelta(hours=3)), IMMINENT)],
)
def test_a_resumed_same_key_renewal_guesses_its_trigger_from_the_old_end(old, trigger):
    same_key = cert("g2", NOW + 365 * DAY)
    observed = renewing(TRUST, current=same_key, previous=old, recorded=None)
    step = renewal_step(observed, policy(), NOW)
    assert step.record.renewal == Renewal(2, REISSUE, False, trigger, NOW)
    assert step.record.generation == 1 and step.record.not_after == old.not_after


# --- the record, the annotations, the policy ---------------------------------------------


def test_the_record_reads_back_from_the_status():
    record = at_phase(REISSUE)
    status = record.as_status()
    assert status == {
        "generation": 1,
        "notAfter": OLD.not_after.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "renewal": {
            "to": 2,
            "step": "Reissue",
            "keyReplaced": True,
            "trigger": "ForceReplace",
            "since": SINCE.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    assert CaRecord.from_status(status) == record
    assert CaRecord.from_status(CaRecord(2, ENDS).as_status()) == CaRecord(2, ENDS)
    assert CaRecord.from_status(None) is None
    assert (status_key(CaKind.CLUSTER), status_key(CaKind.CLIENTS)) == ("clusterCa", "clientsCa")


def test_force_annotations_ask_for_a_renewal_a_replacement_first():
    assert force_request(None) is None
    assert force_request({"tidelog.dev/ca-generation": "1"}) is None
    assert force_request({"tidelog.dev/force-renew": "true"}) is FORCE_RENEW
    assert force_request({"tidelog.dev/force-replace": ""}) is FORCE_REPLACE
    both = {"tidelog.dev/force-renew": "true", "tidelog.dev/force-replace": "true"}
    assert force_request(both) is FORCE_REPLACE


def test_the_policy_of_each_ca_comes_from_the_spec_with_strimzis_defaults():
    storage = {"volumes": [{"id": 0, "size": "1Gi"}]}
    default = parse_cluster("events", "prod", {"storage": storage}).certificates
    assert CaPolicy.of(default, CaKind.CLUSTER) == CaPolicy(365, 30, ())
    spec = parse_cluster(
        "events",
        "prod",
        {
            "storage": storage,
            "certificates": {
                "clusterCa": {"validityDays": 90, "renewalDays": 10},
                "maintenanceWindows": ["* 2 * * 0"],
            },
        },
    ).certificates
    assert CaPolicy.of(spec, CaKind.CLUSTER) == CaPolicy(90, 10, (parse_cron("* 2 * * 0"),))
    assert CaPolicy.of(spec, CaKind.CLIENTS) == CaPolicy(365, 30, (parse_cron("* 2 * * 0"),))


# --- a renewal carried to its end by an operator stopped anywhere ------------------------

PODS = ("broker-0", "broker-1", "broker-2", "zookeeper-0")
RANKS = {TRUST: 1, REISSUE: 2, DROP: 3}


class Stopped(Exception):
    """The operator stopped (killed) before a write."""


class Refused(Exception):
    """A write refused (the API server's error): the pass goes on, as its ``_carry``
    does, but for the status write, whose failure ends the pass."""


@dataclass
class World:
    """A Cluster in memory: the CA Secret, the bundle the certificate step writes from
    it, each pod's trusted bundle (rolled one pod at a time), leaves and what is served.
    Certificates are names: ``g<N>`` of generation N; ``keys`` says whose key signs."""

    generation: int = 0
    current: str = "g0"
    previous: str | None = None
    force: RenewalTrigger | None = None
    keys: dict[str, str] = field(default_factory=lambda: {"g0": "k0"})
    ends: dict[str, datetime.datetime] = field(default_factory=lambda: {"g0": NOW + 100 * DAY})
    bundle: frozenset[str] = frozenset({"g0"})
    pods: dict[str, frozenset[str]] = field(default_factory=dict)
    leaves: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PODS, 0))
    served: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PODS, 0))
    status: CaRecord | None = None
    writes: int = 0
    stop_after: int | None = None  # writes before the operator is killed
    refuse: bool = False  # the write after them is refused instead
    ranks: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.status = CaRecord(0, self.ends["g0"])
        self.pods = dict.fromkeys(PODS, self.bundle)

    def write(self) -> None:
        if self.stop_after is not None and self.writes >= self.stop_after:
            self.stop_after = None  # once: the operator runs to the end after it
            raise Refused if self.refuse else Stopped
        self.writes += 1

    def observe(self) -> CaObserved:
        def facts(name: str | None) -> CertificateFacts | None:
            if name is None:
                return None
            return cert(name, self.ends[name], self.keys[name])

        return CaObserved(
            kind=CLUSTER,
            current=facts(self.current),
            previous=facts(self.previous),
            generation=self.generation,
            force=self.force,
            recorded=self.status,
            trusted=self.bundle,
            leaves_current=all(g == self.generation for g in self.leaves.values()),
            served_current=self.served == self.leaves,
            rolled=all(b == self.bundle for b in self.pods.values()),
        )

    def renew_ca(self, command: RenewCa) -> None:
        if self.generation < command.to:
            self.write()
            name = f"g{command.to}"
            key = f"k{command.to}" if command.replace_key else self.keys[self.current]
            self.keys[name], self.ends[name] = key, NOW + 365 * DAY
            self.previous, self.current, self.generation = self.current, name, command.to
        if self.force is not None:
            self.write()
            self.force = None

    def forget_previous(self, command: ForgetPreviousCa) -> None:
        if self.previous is not None:
            self.write()
            self.previous = None

    def certificate_step(self, paused: bool) -> None:
        """The bundle follows the Secret; leaves of an older generation are reissued
        unless signing is paused."""
        bundle = frozenset(n for n in (self.current, self.previous) if n is not None)
        if bundle != self.bundle:
            self.write()
            self.bundle = bundle
        stale = [pod for pod, g in self.leaves.items() if g < self.generation]
        if stale and not paused:
            self.write()
            for pod in stale:
                self.leaves[pod] = self.generation

    def run_pass(self, now: datetime.datetime) -> RenewalStep:
        step = renewal_step(self.observe(), policy(), now)
        for command in step.commands:
            with contextlib.suppress(Refused):
                if isinstance(command, RenewCa):
                    self.renew_ca(command)
                else:
                    self.forget_previous(command)
        with contextlib.suppress(Refused):
            self.certificate_step(step.signing_paused)
        if step.record != self.status:
            try:
                self.write()
            except Refused:
                raise Stopped from None
            self.status = step.record
            renewal = step.record.renewal
            self.ranks.append(RANKS[renewal.phase] if renewal else 4 * step.record.generation)
        return step

    def tick(self) -> None:
        """Kubernetes between passes: one pod rolls to the bundle, brokers reload."""
        behind = [pod for pod, bundle in self.pods.items() if bundle != self.bundle]
        if behind:
            self.pods[behind[0]] = self.bundle
        self.served = dict(self.leaves)

    def check_trust(self) -> None:
        """Every pod trusts the key of every leaf served (or about to be)."""
        for pod, bundle in self.pods.items():
            keys = {self.keys[name] for name in bundle}
            for leaf in (*self.leaves.values(), *self.served.values()):
                assert self.keys[f"g{leaf}"] in keys, (pod, bundle, leaf)


TRIGGERS = {
    "renew asked": ({"force": FORCE_RENEW}, NOW),
    "replace asked": ({"force": FORCE_REPLACE}, NOW),
    "due": ({}, NOW + 80 * DAY),
    "imminent": ({}, NOW + 100 * DAY - datetime.timedelta(hours=2)),
}


def renew(trigger: str, stop_after: int | None, refuse: bool = False) -> World:
    changes, now = TRIGGERS[trigger]
    world = World(stop_after=stop_after, refuse=refuse, **changes)
    finished = None
    for passes in range(60):
        world.tick()
        world.check_trust()
        try:
            step = world.run_pass(now)
        except Stopped:
            continue
        world.check_trust()
        if step.action is RenewalAction.FINISH:
            assert (world.bundle, world.previous) == (frozenset({world.current}), None)
            assert set(world.pods.values()) == {world.bundle}, "finished before the roll"
            finished = passes
        if finished is not None and passes >= finished + 3:
            assert step.action is NOTHING, step.reason
            return world
    raise AssertionError(f"not finished: {world}")


def writes_of_an_undisturbed_renewal(trigger: str) -> int:
    return renew(trigger, None).writes


@pytest.mark.parametrize("refuse", [False, True], ids=["killed", "refused"])
@pytest.mark.parametrize("trigger", list(TRIGGERS))
def test_a_renewal_stopped_after_any_write_resumes_and_finishes_once(trigger, refuse):
    """Killed before write k (or write k refused), for every k of an undisturbed
    renewal: it finishes with the new CA trusted alone, once, its steps in order, and
    no pod ever distrusts a leaf served."""
    total = writes_of_an_undisturbed_renewal(trigger)
    assert total >= 9  # the Secret, the bundle twice, leaves, Forget, four statuses
    for stop_after in range(total + 1):
        world = renew(trigger, stop_after, refuse)
        assert world.status == CaRecord(1, NOW + 365 * DAY), stop_after
        assert (world.generation, world.current, world.previous) == (1, "g1", None)
        assert world.bundle == frozenset({"g1"}), stop_after
        assert set(world.pods.values()) == {frozenset({"g1"})}, stop_after
        assert set(world.leaves.values()) == set(world.served.values()) == {1}
        assert world.force is None, stop_after
        assert world.ranks == sorted(world.ranks), (stop_after, world.ranks)
        assert world.ranks[-1] == 4, stop_after
        replaced = trigger == "replace asked"
        assert (world.keys["g1"] != world.keys["g0"]) is replaced
