"""The log records the console can filter: the newest N of ENGINE_LOGS."""

from __future__ import annotations

from collections import deque

import msgspec

from engine.logs import LogRecord

_LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
_decoder = msgspec.json.Decoder(LogRecord)


class LogStore:
    def __init__(self, max_records: int) -> None:
        self.records: deque[LogRecord] = deque(maxlen=max_records)

    def add_raw(self, data: bytes) -> None:
        self.records.append(_decoder.decode(data))

    def search(
        self,
        trace_id: str = "",
        level: str = "",
        service: str = "",
        text: str = "",
        limit: int = 200,
    ) -> list[LogRecord]:
        floor = _LEVELS.get(level.upper(), 0)
        needle = text.lower()
        out: list[LogRecord] = []
        for r in reversed(self.records):
            if trace_id and r.trace_id != trace_id:
                continue
            if floor and _LEVELS.get(r.level, 0) < floor:
                continue
            if service and r.service != service:
                continue
            if needle and needle not in r.message.lower() and needle not in r.logger.lower():
                continue
            out.append(r)
            if len(out) >= limit:
                break
        return out
