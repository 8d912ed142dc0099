"""Producer-id blocks: ``/latest_producer_id_block``, from which each broker reserves
the producer ids it hands out."""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from tidelog.controller.zk_data import PRODUCER_ID_BLOCK, decode_json, encode_json
from tidelog.controller.zk_session import ZkSession

__all__ = ["PRODUCER_ID_BLOCK_SIZE", "ProducerIdZnodes"]

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdZnodes(ZkSession):
    """Reserving blocks of producer ids."""

    def allocate_producer_id_block(self, broker_id: int) -> tuple[int, int]:
        """Reserve the next block of producer ids: (first, last) inclusive."""
        while True:
            try:
                data, stat = self.zk.get(PRODUCER_ID_BLOCK)
                current = decode_json(data)
                start = int(current["block_end"]) + 1 if current else 0
                version = stat.version
            except NoNodeError:
                start, version = 0, None
            end = start + PRODUCER_ID_BLOCK_SIZE - 1
            document = encode_json(
                {
                    "version": 1,
                    "broker": broker_id,
                    "block_start": str(start),
                    "block_end": str(end),
                }
            )
            try:
                if version is None:
                    self.zk.create(PRODUCER_ID_BLOCK, document)
                else:
                    self.zk.set(PRODUCER_ID_BLOCK, document, version=version)
                return start, end
            except (BadVersionError, NodeExistsError):
                continue  # another broker took a block meanwhile
