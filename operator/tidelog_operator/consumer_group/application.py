"""A ConsumerGroup's Spark application (``spec.spark``): what its submitter Job and
driver pod say, and the one step to take, as a pure function (:func:`plan`) over
what was observed (:class:`Observed`).

Submission ``n`` is the Job ``<group>-submit-<n>`` and the driver pod
``<group>-driver-<n>`` it creates. ``status.application``:

* ``state``: ``Submitted`` (the Job runs, or the driver pod is pending), ``Running``,
  ``Failed`` (the submitter or the driver failed: restarted after a back-off),
  ``Completed`` (the driver ended well: not restarted), ``Stopping`` (for an offset
  reset or a new spec), ``Stopped`` (started again once the reset is applied);
* ``submission``, ``driverPod``, ``specDigest``, ``restarts`` (submissions after the first),
  ``failures`` (in a row: the back-off grows with them, and they are forgotten once a
  driver has run for ``STABLE_AFTER_S``), ``lastError`` and ``failedAt``.

A driver pod gone while its application ran (deleted, or lost with its node) is
submitted again at once; its checkpoint is on the group's volume, so it resumes there.
A change of ``spec.spark`` stops the application and submits it anew (``specDigest``
says which spec the current submission is of).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any

from tidelog_operator.conditions import Reason

__all__ = ["Observed", "Step", "backoff_s", "error_summary", "plan"]

SUBMITTED = "Submitted"
RUNNING = "Running"
FAILED = "Failed"
COMPLETED = "Completed"
STOPPING = "Stopping"
STOPPED = "Stopped"
# What :class:`Observed` says of a driver pod that is deleted but not gone yet: whatever
# phase it ends in (a pod stopped by SIGTERM may end Failed or Succeeded), its absence
# comes next.
TERMINATING = "Terminating"

BACKOFF_FIRST_S = 10.0
BACKOFF_MAX_S = 300.0
STABLE_AFTER_S = 600.0
ERROR_CHARS = 1024  # the most of a failure's message kept in the status
# A line that names an error: "Exception in thread ...", "x.y.FooException: ...",
# "ValueError: ...", "tidelog-bars: ..." (a Python program's one-line error), or a log
# line at level ERROR (Spark's, the pipeline's)
_ERROR_LINE = re.compile(r"^(Exception in thread|[\w.$]*(Exception|Error)\b|[\w-]+: \S)|\bERROR\b")
# A line below it that says what lies beneath: Java's "Caused by: ...", or the Java
# exception that Py4J prints on the line after a Py4JJavaError (": java.x.Y: ...").
_CAUSE_LINE = re.compile(r"^(?:Caused by: |: )(?P<cause>\S.*)")


@dataclass(frozen=True)
class Observed:
    """The current submission's Job and driver pod: ``job`` is None (none), "active",
    "succeeded" or "failed"; ``driver`` None (none), ``TERMINATING`` or the pod's
    phase; ``error`` the failed one's error (:func:`error_summary` of its log);
    ``running_s`` how long the driver has run."""

    job: str | None = None
    driver: str | None = None
    error: str = ""
    running_s: float = 0.0


@dataclass(frozen=True)
class Step:
    """What to do now: ``action`` None, "submit" (submission ``application["submission"]``)
    or "stop" (delete the submission: its Job and its driver pod); ``application`` the
    new status; ``event`` a (reason, message) to tell."""

    application: dict[str, Any]
    action: str | None = None
    event: tuple[str, str] | None = None


def error_summary(log: str) -> str:
    """What a failed pod's log says failed: the last line naming an exception or error
    (not a stack frame), else the last line; and, when a cause is printed below it, the
    deepest one ("... caused by java.net.BindException: ..."). A Py4JJavaError alone
    says only which Java call failed, and a Java exception's own message often only
    what it was doing."""
    lines = [line.rstrip() for line in log.splitlines() if line.strip()]
    if not lines:
        return ""
    named = [at for at, line in enumerate(lines) if _ERROR_LINE.search(line)]
    at = named[-1] if named else len(lines) - 1
    causes = [found["cause"] for line in lines[at + 1 :] if (found := _CAUSE_LINE.match(line))]
    summary = f"{lines[at]} ... caused by {causes[-1]}" if causes else lines[at]
    return summary[:ERROR_CHARS]


def backoff_s(failures: int) -> float:
    """The wait before restarting after ``failures`` failures in a row."""
    return min(BACKOFF_FIRST_S * 2 ** max(failures - 1, 0), BACKOFF_MAX_S)


def _since(moment: str | None, now: datetime.datetime) -> float:
    if not moment:
        return float("inf")
    then = datetime.datetime.strptime(moment, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return (now - then).total_seconds()


def _stamp(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _submit(app: dict[str, Any], why: str) -> Step:
    submission = app.get("submission", 0) + 1
    restarts = app.get("restarts", 0) + (1 if submission > 1 else 0)
    updated = {**app, "submission": submission, "state": SUBMITTED, "restarts": restarts}
    return Step(
        updated, "submit", (Reason.APPLICATION_SUBMITTED, f"submission {submission}: {why}")
    )


def _stopping(app: dict[str, Any], why: str) -> Step:
    """Delete the submission, and say so once: the passes while its driver stops (each
    change of the terminating pod brings one) ask for the deletion again, silently."""
    if app.get("state") == STOPPING:
        return Step(app, "stop")
    event = (Reason.APPLICATION_STOPPING, f"stopping the application {why}")
    return Step({**app, "state": STOPPING}, "stop", event)


def plan(
    app: dict[str, Any],
    seen: Observed,
    *,
    reset_waiting: bool,
    spec_changed: bool = False,
    now: datetime.datetime,
) -> Step:
    """The step for an application whose status is ``app`` and whose current
    submission is ``seen``; ``reset_waiting``: a declared offset reset is not applied
    yet (the application must stop first); ``spec_changed``: ``spec.spark`` is not what
    the current submission was made of (it is stopped and submitted anew, a failed one
    at once)."""
    alive = seen.job == "active" or seen.driver in ("Pending", "Running", TERMINATING)
    if reset_waiting:
        if alive:
            return _stopping(app, "to apply the offset reset")
        return Step({**app, "state": STOPPED})
    if spec_changed and app.get("submission"):
        if alive:
            return _stopping(app, "to start it with its new spec")
        return _submit(app, "its spec changed")
    if not app.get("submission") or app.get("state") == STOPPED:
        return _submit(app, "starting the application")
    if seen.job == "active" or seen.driver == "Pending":
        return Step({**app, "state": SUBMITTED})
    if seen.driver == "Running":
        stable = seen.running_s >= STABLE_AFTER_S
        return Step({**app, "state": RUNNING, **({"failures": 0} if stable else {})})
    if seen.driver == TERMINATING:  # deleted: submitted again once it is gone
        return Step(app)
    if seen.driver == "Succeeded" or app.get("state") == COMPLETED:
        return Step({**app, "state": COMPLETED})
    if seen.job == "failed" or seen.driver == "Failed":
        return _failed(app, seen, now)
    # the Job is gone or done and the driver is gone: deleted, or lost with its node
    return _submit(app, f"the driver pod of submission {app['submission']} is gone")


def _failed(app: dict[str, Any], seen: Observed, now: datetime.datetime) -> Step:
    """Record a failure once, then submit again when its back-off has passed."""
    if app.get("state") != FAILED:
        failures = app.get("failures", 0) + 1
        who = "the driver" if seen.driver == "Failed" else "spark-submit"
        error = f"{who} failed: {seen.error or 'no message'}"
        updated = {
            **app,
            "state": FAILED,
            "failures": failures,
            "lastError": error,
            "failedAt": _stamp(now),
        }
        wait = backoff_s(failures)
        return Step(
            updated, None, (Reason.APPLICATION_FAILED, f"{error} (restart in {wait:.0f} s)")
        )
    if _since(app.get("failedAt"), now) < backoff_s(app.get("failures", 1)):
        return Step(app)
    return _submit(app, f"restarting after failure {app.get('failures', 1)}")
