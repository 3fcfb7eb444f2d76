"""ReAct (Yao et al., 2023) as a probe strategy: each turn one short Thought about what is known,
then one Action, a query to the sensor or a commit.

The strategy is its system prompt (entry ``react`` of ``prompts/strategies.yaml``); its turn is
the prompted strategies' one reasoner call
(:class:`~clearsight.probe.strategies.prompted.Prompted`).
"""

from __future__ import annotations

from typing import Final

from clearsight.probe.strategies.prompted import Prompted

#: ReAct: thought, then action, one reasoner call per turn.
REACT: Final = Prompted("react")
