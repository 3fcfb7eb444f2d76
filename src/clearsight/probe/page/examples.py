"""The probe report's example conversations: each conversation that asked the sensor, turn by
turn (the reasoner's text, a searching strategy's tree in brief, the sensor's replies with
their consistency), collapsed under one line naming it. Every model output is escaped."""

from __future__ import annotations

from collections.abc import Sequence

from clearsight.pages.html import details, pre
from clearsight.probe.reasoner.search_record import SearchRecord
from clearsight.probe.transcript import Transcript

__all__ = ["examples_html"]


def _search_lines(search: SearchRecord | None) -> list[str]:
    """The UoT tree of a turn in brief (:mod:`clearsight.probe.reasoner.uot_search`): the options
    possible before and after, and each root candidate with its IG, R_u and R_e (the asked one
    marked)."""
    if not search or "candidates" not in search:
        return []
    before = ",".join(search.get("possible_before", []))
    after = ",".join(search.get("possible_after", []))
    lines = [f"    search: options {before} -> {after}, {search.get('calls', 0)} LLM calls"]
    for i, c in enumerate(search["candidates"]):
        mark = "*" if i == search.get("chosen") else " "
        lines.append(
            f"    {mark} IG {c['gain']:.2f} R_u {c['reward']:.2f} R_e {c['expected']:.2f}: "
            f"{c['question']}"
        )
    return lines


def examples_html(conversations: Sequence[Transcript]) -> str:
    """The conversations that asked the sensor, turn by turn, collapsed."""
    parts = []
    for t in conversations:
        lines = [
            f"Q: {t.question}",
            *(f"({k}) {o}" for k, o in zip("ABCDEFGHIJ", t.options, strict=False)),
        ]
        for turn in t.turns:
            lines.append(f"[{turn.index}] reasoner: {turn.raw}")
            lines += _search_lines(turn.search)
            if turn.reply is not None:
                u = "–" if turn.shown_u is None else turn.shown_u
                lines.append(
                    f"    sensor: {turn.reply.reply or turn.reply.error} ({u}/{turn.reply.k})"
                )
        lines.append(f"=> {t.committed} (gold {t.gold}), stop: {t.stop}")
        summary = f"{t.instance_id} · {t.reasoner} · {t.strategy} · run {t.run}"
        parts.append(details(summary, pre("\n".join(lines))))
    return "".join(parts)
