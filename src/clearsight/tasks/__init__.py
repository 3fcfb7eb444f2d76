"""Boxed-object questions (t2 identification, t3 verification) and their versioned prompts.

Build a prior from the scene set's target categories, then questions from it with an explicit
generator::

    prior = category_prior([t.category for s in scenes for t in s.targets])
    q = identification_question("car", prior, np.random.default_rng(seed), abstain="reason")
    qv = verbalized_question(q, "verbal.plain.v1")

Templates live in ``prompts/*.yaml``; every Question records the ids and content hashes of the
templates its prompt was rendered from.
"""

from __future__ import annotations

from clearsight.tasks.identify import IDENTIFY_TEMPLATE, identification_question
from clearsight.tasks.prior import (
    DISTRACTOR_SCHEMES,
    DistractorScheme,
    category_prior,
    check_prior,
    draw_distractors,
)
from clearsight.tasks.question import (
    ABSTAIN_TEMPLATES,
    LETTER_INSTRUCTION,
    VERBALIZED_WORDINGS,
    AbstainWording,
    Question,
    Readout,
    Task,
    TemplateRef,
    verbalized_prompt,
    verbalized_question,
)
from clearsight.tasks.templates import (
    TEMPLATE_KINDS,
    Template,
    TemplateKind,
    get_template,
    load_templates,
)
from clearsight.tasks.verify import VERIFY_TEMPLATE, verification_questions

__all__ = [
    "ABSTAIN_TEMPLATES",
    "DISTRACTOR_SCHEMES",
    "IDENTIFY_TEMPLATE",
    "LETTER_INSTRUCTION",
    "TEMPLATE_KINDS",
    "VERBALIZED_WORDINGS",
    "VERIFY_TEMPLATE",
    "AbstainWording",
    "DistractorScheme",
    "Question",
    "Readout",
    "Task",
    "Template",
    "TemplateKind",
    "TemplateRef",
    "category_prior",
    "check_prior",
    "draw_distractors",
    "get_template",
    "identification_question",
    "load_templates",
    "verbalized_prompt",
    "verbalized_question",
    "verification_questions",
]
