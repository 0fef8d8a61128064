"""LoCoMo loading and the retrieval metrics of the project's protocol
(see ../shared/bench-data/README.md)."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = ROOT.parent / "shared" / "bench-data" / "locomo" / "locomo-dev5.json"


@dataclass
class Turn:
    dia_id: str
    session: int
    text: str
    timestamp: str


@dataclass
class Question:
    question: str
    category: int
    gold_sessions: set[int]
    gold_turns: set[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def sessions(self) -> dict[int, list[Turn]]:
        out: dict[int, list[Turn]] = defaultdict(list)
        for t in self.turns:
            out[t.session].append(t)
        return dict(out)


def _gold(evidence: Iterable[str] | None) -> tuple[set[int], set[str]]:
    sessions: set[int] = set()
    turns: set[str] = set()
    for e in evidence or []:
        e = e.replace("D:", "D")
        for m in re.finditer(r"D(\d+):(\d+)", e):
            sessions.add(int(m.group(1)))
            turns.add(f"D{int(m.group(1))}:{int(m.group(2))}")
    return sessions, turns


def _iso(when: str) -> str:
    try:
        return datetime.strptime(when, "%I:%M %p on %d %B, %Y").isoformat() + "Z"
    except ValueError:
        return "2023-01-01T00:00:00Z"


def load(path: Path = DEFAULT_DATA) -> list[Conversation]:
    raw = json.loads(path.read_text())
    out: list[Conversation] = []
    for c in raw:
        conv = Conversation(c["sample_id"])
        talk = c["conversation"]
        n = 1
        while f"session_{n}" in talk:
            ts = _iso(talk.get(f"session_{n}_date_time", ""))
            for turn in talk[f"session_{n}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                m = re.match(r"D(\d+):(\d+)", turn["dia_id"])
                did = f"D{int(m.group(1))}:{int(m.group(2))}" if m else turn["dia_id"]
                conv.turns.append(Turn(did, n, text, ts))
            n += 1
        for q in c["qa"]:
            gs, gt = _gold(q.get("evidence"))
            if gs:
                conv.questions.append(Question(str(q["question"]), int(q["category"]), gs, gt))
        out.append(conv)
    return out


def session_of(dia_id: str) -> int:
    m = re.match(r"D(\d+):", dia_id)
    return int(m.group(1)) if m else -1


@dataclass
class Scores:
    """Accumulated recall figures for one system, overall and per category."""

    rows: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))

    def add(self, q: Question, turns: Sequence[str], sessions: Sequence[int]) -> None:
        ranked_sessions = list(dict.fromkeys(sessions))
        row = {
            "session_r5": float(bool(q.gold_sessions & set(ranked_sessions[:5]))),
            "session_r10": float(bool(q.gold_sessions & set(ranked_sessions[:10]))),
            "session_all5": len(q.gold_sessions & set(ranked_sessions[:5])) / len(q.gold_sessions),
            "session_mrr": _mrr(ranked_sessions, q.gold_sessions, 20),
        }
        if q.gold_turns:
            row |= {
                "turn_r5": float(bool(q.gold_turns & set(turns[:5]))),
                "turn_r10": float(bool(q.gold_turns & set(turns[:10]))),
                "turn_all5": len(q.gold_turns & set(turns[:5])) / len(q.gold_turns),
                "turn_mrr": _mrr(list(turns), q.gold_turns, 20),
            }
        self.rows["all"].append(row)
        self.rows[f"cat{q.category}"].append(row)
        if q.category != 5:
            self.rows["no_cat5"].append(row)

    def mean(self, group: str = "all") -> dict[str, float]:
        rows = self.rows.get(group, [])
        keys = sorted({k for r in rows for k in r})
        return {
            k: round(sum(r[k] for r in rows if k in r) / max(sum(1 for r in rows if k in r), 1), 4)
            for k in keys
        }


def _mrr(ranked: Sequence[object], gold: set[object] | set[int] | set[str], cut: int) -> float:
    for i, x in enumerate(ranked[:cut]):
        if x in gold:
            return 1.0 / (i + 1)
    return 0.0
