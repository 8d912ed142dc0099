"""The operator's kopf settings and login, registered with the handlers.

Handler progress and the last handled spec live in annotations under ``tidelog.dev/``
(the statuses' schemas hold only what the operator reports). Of the pods, the operator
watches only the Spark drivers of ConsumerGroups: the API server filters them by label.
"""

from __future__ import annotations

from typing import Any

import kopf

from tidelog_operator.names import GROUP, SPARK_DRIVERS_SELECTOR

__all__ = ["configure", "login"]


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """The pod's service account, else the kubeconfig (as the API client does)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=GROUP, key="last-handled-configuration"
    )
    settings.persistence.finalizer = f"{GROUP}/operator"
    settings.execution.max_workers = 8
    settings.watching.label_selectors["v1", "pods"] = SPARK_DRIVERS_SELECTOR
