"""Belief-state prompting (BP), the paper's strategy: the reasoner keeps a stated belief over the
options (``Belief: A=0.4, B=0.3, ...``), weighs each reply by its consistency u/K, asks a
question that tests the most likely options, and commits only when one option has probability
0.9 or more.

The strategy is its system prompt (entry ``bp`` of ``prompts/strategies.yaml``); its turn is
the prompted strategies' one reasoner call
(:class:`~clearsight.probe.strategies.prompted.Prompted`).
Its conversations are the ones the belief probe replays and self-distillation trains on
(:mod:`clearsight.probe.posthoc.protocol`, :mod:`clearsight.probe.distill.train`).
"""

from __future__ import annotations

from typing import Final

from clearsight.probe.strategies.prompted import Prompted

#: Belief-state prompting: a stated belief each turn, one reasoner call per turn.
BP: Final = Prompted("bp")
