"""Per-session observation cap (bounded growth): a session holding more than
`max_obs_per_session` observations loses its lowest-value oldest ones (importance, then
time), through auto-forget's audited removal. Never on the observe hot path.

Planned during auto-forget's observation scan: it counts observations per session (one
counter per session, not per observation) and keeps (importance, time, id) only for the
sessions whose stored `observationCount` already says they are over the cap. A session
over the cap that its count did not announce (imported, or counted late) gets a second,
targeted pass.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from functions.kernel.records import Observation


@dataclass
class SessionCap:
    cap: int
    hinted: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    kept: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)

    def count(self, o: Observation) -> None:
        """Every observation that stays after the other rules."""
        self.counts[o.session_id] += 1
        if o.session_id in self.hinted:
            self.keep(o)

    def keep(self, o: Observation) -> None:
        self.kept.setdefault(o.session_id, []).append((o.importance, o.timestamp, o.id))

    def unannounced(self) -> set[str]:
        """Sessions over the cap whose observations were not kept in the first pass."""
        return {s for s, n in self.counts.items() if n > self.cap and s not in self.hinted}

    def excess(self) -> list[str]:
        out: list[str] = []
        for sid in sorted(self.kept):
            over = self.counts[sid] - self.cap
            if over <= 0:
                continue
            items = sorted(self.kept[sid])  # lowest importance first, then oldest
            out.extend(i for _, _, i in items[:over])
        return out
