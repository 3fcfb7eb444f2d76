"""t2 identification: "Which of these names the object in the red box?" with options A-D (+ E).

docs/methods.md §3: the true category plus three distractors drawn to match the category
prior of the scene set, option order shuffled per item by the caller's generator, chance 0.25;
optionally a fifth option E (abstain), always last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from clearsight.tasks.prior import DistractorScheme, check_category, check_rng, draw_distractors
from clearsight.tasks.question import (
    LETTER_INSTRUCTION,
    AbstainWording,
    Question,
    TemplateRef,
    abstain_template,
    option_letters,
    render_prompt,
)
from clearsight.tasks.templates import get_template

#: The shipped identification template.
IDENTIFY_TEMPLATE: Final[str] = "t2.identify.v1"
#: Options besides the abstain option: the true category and three distractors.
N_OPTIONS: Final[int] = 4


def identification_question(
    true_category: str,
    prior: Mapping[str, float],
    rng: np.random.Generator,
    *,
    abstain: AbstainWording | None = None,
    template_id: str = IDENTIFY_TEMPLATE,
    instruction_id: str = LETTER_INSTRUCTION,
    scheme: DistractorScheme = "proportional",
) -> Question:
    """Build one identification question about a boxed ``true_category``.

    Three distractors come from ``draw_distractors(true_category, prior, 3, rng, scheme)``
    (prior-matched; see ``clearsight.tasks.prior`` for both schemes and for how a prior with
    fewer than 4 categories is filled from the COCO super-category). Then ``rng.permutation(4)``
    orders [true, d1, d2, d3] into options A-D. ``abstain`` adds option E with the "reason" or
    "generic" wording and draws nothing from ``rng``, so options A-D are the same with and
    without it. A pure function of its arguments: the same generator state gives the same
    question, bit for bit; seed one generator per item (from the item's key) rather than sharing
    one across items.
    """
    check_category(true_category, "true category")
    check_rng(rng)
    question_t = get_template(template_id, "identify")
    instruction_t = get_template(instruction_id, "instruction")
    abstain_t = abstain_template(abstain)
    distractors = draw_distractors(true_category, prior, N_OPTIONS - 1, rng, scheme)
    pool = [true_category, *distractors]
    order = rng.permutation(N_OPTIONS)
    options = [pool[int(i)] for i in order]
    letters = option_letters(N_OPTIONS + (abstain_t is not None))
    correct = letters[options.index(true_category)]
    if abstain_t is not None:
        options.append(abstain_t.text)
    return Question(
        task="identify",
        prompt=render_prompt(question_t, instruction_t, letters, tuple(options)),
        letters=letters,
        options=tuple(options),
        correct=correct,
        abstain=letters[-1] if abstain_t is not None else None,
        chance=1.0 / N_OPTIONS,
        true_category=true_category,
        question_template=TemplateRef.of(question_t),
        instruction_template=TemplateRef.of(instruction_t),
        abstain_template=TemplateRef.of(abstain_t) if abstain_t is not None else None,
    )
