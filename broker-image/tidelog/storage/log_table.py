"""The log manager's table of logs, which keeps count of the logs in each log dir.

A new partition goes to the log dir with the fewest partitions (seed 000), so the
counts are asked for every log created: counted afresh each time, the 1,000 logs of a
new topic cost half a million path operations. :class:`LogTable` counts as logs come
and go instead. A log's log dir is noted when it enters (a log keeps its log dir for
life: a move between dirs makes a future log, a Log of its own).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tidelog.storage.log import Log

__all__ = ["LogTable"]

TopicPartition = tuple[str, int]
_MISSING = object()


class LogTable(dict):
    """``(topic, partition) → Log``; ``per_dir[d]`` is how many of its logs lie in ``d``.
    Change it only by item assignment, ``del``, :meth:`pop` and :meth:`clear`."""

    def __init__(self) -> None:
        super().__init__()
        self.per_dir: Counter[Path] = Counter()
        self._dir_of: dict[TopicPartition, Path] = {}

    def __setitem__(self, key: TopicPartition, log: Log) -> None:
        if key in self:
            self._forget(key)
        super().__setitem__(key, log)
        self._dir_of[key] = parent = log.directory.parent
        self.per_dir[parent] += 1

    def __delitem__(self, key: TopicPartition) -> None:
        super().__delitem__(key)
        self._forget(key)

    def pop(self, key: TopicPartition, default=_MISSING):
        if key not in self:
            if default is _MISSING:
                raise KeyError(key)
            return default
        log = super().pop(key)
        self._forget(key)
        return log

    def clear(self) -> None:
        super().clear()
        self.per_dir.clear()
        self._dir_of.clear()

    def _forget(self, key: TopicPartition) -> None:
        self.per_dir[self._dir_of.pop(key)] -= 1
