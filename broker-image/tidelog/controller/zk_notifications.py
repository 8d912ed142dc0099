"""The notifications brokers leave for the controller: ISR changes under
``/isr_change_notification`` and log directory failures under
``/log_dir_event_notification``."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from kazoo.exceptions import NoNodeError

from tidelog.controller.zk_data import (
    ISR_CHANGE_NOTIFICATION,
    ISR_CHANGE_PREFIX,
    LOG_DIR_EVENT_NOTIFICATION,
    LOG_DIR_EVENT_PREFIX,
    LOG_DIR_FAILURE_EVENT,
    decode_json,
    encode_json,
)
from tidelog.controller.zk_session import ZkSession

__all__ = ["NotificationZnodes"]

logger = logging.getLogger(__name__)


class NotificationZnodes(ZkSession):
    """Announcing, listing, reading and deleting the notifications."""

    # -- ISR changes (a leader announces them; the controller spreads them) ---------------

    def announce_isr_changes(self, partitions: list[tuple[str, int]]) -> None:
        """A sequential ``/isr_change_notification/isr_change_<n>`` naming the partitions
        whose ISR this leader changed, in Kafka's format."""
        document = {
            "version": 1,
            "partitions": [{"topic": t, "partition": p} for t, p in partitions],
        }
        self.zk.create(
            f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}",
            encode_json(document),
            sequence=True,
            makepath=True,
        )

    def isr_change_notifications(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(ISR_CHANGE_NOTIFICATION, watch=watch))

    def isr_change_partitions(self, name: str) -> list[tuple[str, int]]:
        """The partitions one notification names (none when it is gone or unreadable)."""
        try:
            data, _ = self.zk.get(f"{ISR_CHANGE_NOTIFICATION}/{name}")
            document = decode_json(data)
            return [(p["topic"], int(p["partition"])) for p in document["partitions"]]
        except NoNodeError:
            return []
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring the malformed ISR change notification %s", name)
            return []

    def delete_isr_change_notifications(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(f"{ISR_CHANGE_NOTIFICATION}/{name}")

    # -- log directory failures (a broker announces them; the controller acts) -----------

    def announce_log_dir_failure(self, broker_id: int) -> None:
        """A sequential ``/log_dir_event_notification/log_dir_event_<n>``: one of this
        broker's log directories failed (Kafka's format; which replicas it held, the
        controller learns from the broker's LeaderAndIsr answers)."""
        document = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT}
        self.zk.create(
            f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}",
            encode_json(document),
            sequence=True,
            makepath=True,
        )

    def log_dir_event_notifications(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(LOG_DIR_EVENT_NOTIFICATION, watch=watch))

    def log_dir_failure_broker(self, name: str) -> int | None:
        """The broker a log dir failure notification names (none when it is gone,
        unreadable or of another event)."""
        try:
            data, _ = self.zk.get(f"{LOG_DIR_EVENT_NOTIFICATION}/{name}")
            document = decode_json(data)
            if document["event"] != LOG_DIR_FAILURE_EVENT:
                return None
            return int(document["broker"])
        except NoNodeError:
            return None
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring the malformed log dir event notification %s", name)
            return None

    def delete_log_dir_event_notifications(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(f"{LOG_DIR_EVENT_NOTIFICATION}/{name}")
