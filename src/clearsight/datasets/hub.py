"""The registry of the papers' datasets on the Hugging Face hub: one :class:`HubSpec` each.

A spec names the hub repository, the config and split the protocol reads, the split's files as
the repository lays them out (globs relative to its root), the revision whose card and files
the mapping was written from, and the harness code whose column reading it was checked
against (``source``). Its mapping is a small vocabulary read by one function
(:func:`clearsight.datasets.rows.hub_rows`), not a branch per dataset:

* ``options_form``: ``list`` (a list column), ``columns`` (one column per option),
  ``python_list`` (a string holding a Python list literal, as MMMU-Pro stores them), ``text``
  (lettered options inside a text column: ``A. x`` / ``A: x`` / ``(A) x``), ``yes_no`` (always
  Yes, No) or ``none``;
* ``gold``: how the answer column names the correct option when the row has options:
  ``letter``, ``letters`` (one or more, ``"A, C"``), ``index`` (0-based), ``text`` (the
  option's text) or ``yes_no``. A row without options (a list column null or empty, no
  lettered options in its text, or ``choice_when`` not met) has a free answer instead;
* ``image_table``: where the images live in another config of the repository
  (:class:`ImageTable`, GQA's), the row's ``image`` column then holding the image's key;
* ``keep``: rows kept (``column == value``); ``explode``: a list column whose items are one
  question each (their ``question`` / ``answer`` fields read in place of the row's);
  ``choice_when``: ``(column, value)`` marking the multiple-choice rows of a mixed split.

**Another split or config** (:class:`DatasetRef`, :func:`parse_dataset_ref`): a dataset named
``NAME[CONFIG]@SPLIT`` (either part optional; ``clearsight fetch --split/--config`` write it
so) reads that split or config of the same repository (:meth:`HubSpec.choose`): the split's
files are found by renaming the spec's split and config where its file globs name them
(``data/test-*.parquet`` -> ``data/testmini-*.parquet``; ``standard (10 options)/test-*`` ->
``standard (4 options)/test-*``), and the same column mapping is checked against their schema.
A spec whose files name neither (one file for the repository) cannot read another, and says so.

The revisions are those of the cards read while writing the mappings (a short hash where only
that was shown); ``clearsight fetch --dataset`` downloads a full-hash revision exactly and
``main`` otherwise, and verifies the schema either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final, Literal

from clearsight.validate import InputError

OptionsForm = Literal["list", "columns", "python_list", "text", "yes_no", "none"]
GoldForm = Literal["letter", "letters", "index", "text", "yes_no"]
Protocol = Literal["probe", "grounding"]

#: The lmms-eval revision whose task files (``lmms_eval/tasks/<name>/``) were read.
LMMS_EVAL: Final = "lmms-eval@75571cf"
#: The VLMEvalKit revision whose dataset code (``vlmeval/dataset/``) was read.
VLMEVALKIT: Final = "VLMEvalKit@e8e78f0"


@dataclass(frozen=True)
class ImageTable:
    """Images kept in a config of their own: its ``files`` (globs relative to the repository
    root), the column of each image's ``key`` and the ``image`` column. ``beside``: how the
    images' config is named from the questions' (the questions' ending, the images' ending:
    GQA's ``val_balanced_instructions`` beside ``val_balanced_images``), so that another config
    or split of the questions finds its own images (:meth:`HubSpec.choose`)."""

    files: tuple[str, ...]
    key: str
    image: str
    beside: tuple[str, str]

    def config_for(self, spec: str, questions: str) -> str:
        """The images' config beside the questions' config ``questions`` (``spec``: the name
        the messages give the dataset); InputError where that config does not end as the
        questions' configs do."""
        ours, theirs = self.beside
        if not questions.endswith(ours) or questions == ours:
            raise InputError(
                f"{spec}: its images are in the config beside its questions' (a config "
                f"ending {ours!r} beside one ending {theirs!r}); config {questions!r} does "
                f"not end {ours!r}"
            )
        return questions.removesuffix(ours) + theirs


@dataclass(frozen=True)
class HubSpec:
    """Where one dataset's split lives on the hub and how its columns map (module docstring)."""

    name: str
    protocol: Protocol
    hub_id: str
    config: str
    split: str
    files: tuple[str, ...]
    revision: str
    source: str
    answer: str
    gold: GoldForm
    options_form: OptionsForm
    options: tuple[str, ...] = ()
    id: str | None = None
    question: str | None = None
    stem: str = ""
    image: str | None = None
    category: str | None = None
    keep: tuple[tuple[str, str], ...] = ()
    explode: str | None = None
    choice_when: tuple[str, str] | None = None
    image_table: ImageTable | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        """The top-level columns the mapping reads (a schema without one is refused)."""
        inner = (self.question, self.answer) if self.explode else ()
        names = [
            self.id,
            self.explode,
            self.question,
            self.answer,
            *self.options,
            self.image,
            self.category,
            *(column for column, _ in self.keep),
            self.choice_when[0] if self.choice_when else None,
        ]
        return tuple(dict.fromkeys(n for n in names if n is not None and n not in inner))

    @property
    def downloads(self) -> tuple[str, ...]:
        """The globs a fetch downloads: the split's files and its image table's."""
        return (*self.files, *(self.image_table.files if self.image_table else ()))

    @property
    def pinned(self) -> bool:
        """Whether :attr:`revision` is a full commit hash (fetched exactly, not ``main``)."""
        return len(self.revision) == 40 and all(c in "0123456789abcdef" for c in self.revision)

    def choose(self, config: str | None = None, split: str | None = None) -> HubSpec:
        """The spec of another ``config`` and/or ``split`` of the same repository (None: this
        spec's): its file globs with the config and split renamed where they name them
        (:func:`_renamed`); InputError where they name neither, so the other's files cannot be
        found. A config named after its split (GQA's ``testdev_balanced_instructions``) follows
        a split given without a config (``GQA@val``: ``val_balanced_instructions``)."""
        if config is None and split is not None and self.config.startswith(f"{self.split}_"):
            config = split + self.config.removeprefix(self.split)
        chosen = self
        for kind, old, new in (("config", self.config, config), ("split", self.split, split)):
            if new is None or new == old:
                continue
            files = tuple(_renamed(glob, old, new) for glob in chosen.files)
            if files == chosen.files:
                raise InputError(
                    f"{self.name}: its files ({', '.join(self.files)}) do not name its {kind} "
                    f"{old!r}, so the files of {kind} {new!r} cannot be found; it reads "
                    f"{self.where()} only"
                )
            chosen = (
                replace(chosen, files=files, config=new)
                if kind == "config"
                else replace(chosen, files=files, split=new)
            )
        return chosen if chosen == self else replace(chosen, image_table=self._images_of(chosen))

    def _images_of(self, chosen: HubSpec) -> ImageTable | None:
        """The image table of ``chosen`` (another config or split of this spec): this one's
        files in the images' config beside ``chosen``'s and in its split."""
        table = self.image_table
        if table is None:
            return None
        old, new = (table.config_for(self.name, c) for c in (self.config, chosen.config))
        files = tuple(
            _renamed(_renamed(glob, old, new), self.split, chosen.split) for glob in table.files
        )
        return replace(table, files=files)

    def where(self) -> str:
        """``hub id (config, split) at revision R`` for messages."""
        config = "" if self.config == "default" else f"{self.config}, "
        return f"{self.hub_id} ({config}split {self.split}) at revision {self.revision[:12]}"


def _renamed(glob: str, old: str, new: str) -> str:
    """``glob`` with each path component that is ``old``, or begins with ``old`` and a ``-``
    or ``.`` (a split's shards: ``test-*.parquet``), renamed to ``new``."""
    parts = []
    for part in glob.split("/"):
        if part == old or part.startswith((f"{old}-", f"{old}.")):
            part = new + part[len(old) :]
        parts.append(part)
    return "/".join(parts)


#: A split name as the hub allows them: words joined by dots (``test``, ``sample_variant1``).
_SPLIT: Final = re.compile(r"\w+(\.\w+)*", re.ASCII)
#: A dataset reference: ``NAME``, ``NAME[CONFIG]``, ``NAME@SPLIT`` or ``NAME[CONFIG]@SPLIT``.
_REF: Final = re.compile(r"(?P<name>[^\[\]@]*)(\[(?P<config>[^\[\]]*)\])?(@(?P<split>.*))?", re.S)


def split_name(text: str) -> str:
    """``text`` as a split name (letters, digits, ``_``, dot-joined words); InputError else."""
    if not _SPLIT.fullmatch(text):
        raise InputError(
            f"split {text!r}: a split name is letters, digits and _ (dot-joined words), "
            "e.g. testmini"
        )
    return text


def config_name(text: str) -> str:
    """``text`` as a config name: printable, without ``/``, brackets, ``@`` or surrounding
    spaces (MMMU-Pro's ``standard (4 options)`` is one); InputError else."""
    if not text or text != text.strip() or not text.isprintable() or any(c in text for c in "/[]@"):
        raise InputError(
            f"config {text!r}: a config name is printable text without '/', '[', ']', '@' "
            "or surrounding spaces, e.g. 'standard (4 options)'"
        )
    return text


@dataclass(frozen=True)
class DatasetRef:
    """A hub dataset by loader name, with another config or split where given."""

    name: str
    config: str | None = None
    split: str | None = None

    def __str__(self) -> str:
        """``NAME[CONFIG]@SPLIT`` (the parts given), which :func:`parse_dataset_ref` reads."""
        config = "" if self.config is None else f"[{self.config}]"
        split = "" if self.split is None else f"@{self.split}"
        return f"{self.name}{config}{split}"


def parse_dataset_ref(text: str) -> DatasetRef:
    """``NAME``, ``NAME[CONFIG]``, ``NAME@SPLIT`` or ``NAME[CONFIG]@SPLIT`` as a
    :class:`DatasetRef` (the name unchecked against the registry); InputError, one line,
    for anything else."""
    match = _REF.fullmatch(text)
    if match is None or not match["name"] or match["name"] != match["name"].strip():
        raise InputError(
            f"dataset {text!r}: write NAME, NAME[CONFIG], NAME@SPLIT or NAME[CONFIG]@SPLIT, "
            "e.g. MATH-Vision@testmini"
        )
    config = None if match["config"] is None else config_name(match["config"])
    split = None if match["split"] is None else split_name(match["split"])
    return DatasetRef(match["name"], config, split)


def _mmmu_pro(
    name: str, config: str, task: str, question: str | None, stem: str, image: str
) -> HubSpec:
    """An MMMU-Pro config: MMMU/MMMU_Pro at b037bbe, its config's folder holds the test
    split; options are a Python list literal, the answer a letter (lmms-eval's ``mmmu_pro``
    reads the options with ``ast.literal_eval``)."""
    return HubSpec(
        name=name,
        protocol="grounding",
        hub_id="MMMU/MMMU_Pro",
        config=config,
        split="test",
        files=(f"{config}/test-*.parquet",),
        revision="b037bbe72fe851ae9c9a792c7b34722542d4dc78",
        source=f"card; {LMMS_EVAL} tasks/mmmu_pro/{task}.yaml, utils.py",
        id="id",
        question=question,
        stem=stem,
        answer="answer",
        gold="letter",
        options_form="python_list",
        options=("options",),
        image=image,
    )


#: Every dataset the papers use, by loader name (probe: lower case; grounding: as the paper).
HUB_SPECS: Final[Mapping[str, HubSpec]] = {
    s.name: s
    for s in (
        # ---------------------------------------------------------------- probe (paper 3)
        HubSpec(
            # data_type "video" rows hold 8 frames of a clip: only image questions are kept
            name="seedbench",
            protocol="probe",
            hub_id="lmms-lab/SEED-Bench",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="74c4ea0",
            source=f"{LMMS_EVAL} tasks/seedbench/seedbench.yaml, utils.py (the columns read); "
            "types as lmms-lab/SEED-Bench-2's card",
            id="question_id",
            question="question",
            answer="answer",
            gold="letter",
            options_form="columns",
            options=("choice_a", "choice_b", "choice_c", "choice_d"),
            image="image",
            category="question_type_id",
            keep=(("data_type", "image"),),
        ),
        HubSpec(
            # one row per chart, a list of question/answer pairs each; no id column: row/k
            name="figureqa",
            protocol="probe",
            hub_id="vikhyatk/figureqa",
            config="default",
            split="train",
            files=("data/train-*.parquet",),
            revision="1afe559",
            source="card (image, qa: list of {question, answer}); no harness reads FigureQA",
            question="question",
            answer="answer",
            gold="yes_no",
            options_form="yes_no",
            image="image",
            explode="qa",
        ),
        HubSpec(
            # options inside the question: "... Options: A: x, B: y, C: z, D: w"
            name="mmstar",
            protocol="probe",
            hub_id="Lin-Chen/MMStar",
            config="val",
            split="val",
            files=("mmstar.parquet",),
            revision="bc98d668301da7b14f648724866e57302778ab27",
            source=f"card; {LMMS_EVAL} tasks/mmstar/mmstar.yaml, utils.py",
            id="index",
            question="question",
            answer="answer",
            gold="letter",
            options_form="text",
            options=("question",),
            image="image",
            category="category",
        ),
        HubSpec(
            # the English translation of question and options; Label indexes the options
            name="cvqa",
            protocol="probe",
            hub_id="afaji/cvqa",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="e9e152ea75246029e57bbca7d0b1d156b900be17",
            source="card (ID, Translated Question, Translated Options, Label, Category)",
            id="ID",
            question="Translated Question",
            answer="Label",
            gold="index",
            options_form="list",
            options=("Translated Options",),
            image="image",
            category="Category",
        ),
        # ------------------------------------------------------------ grounding (paper 2)
        HubSpec(
            # choices null: a free-form question (its answer a value)
            name="MathVista",
            protocol="grounding",
            hub_id="AI4Math/MathVista",
            config="default",
            split="testmini",
            files=("data/testmini-*.parquet",),
            revision="2b6ad69445fbb5695c9b165475e8decdbeb97747",
            source=f"card; {LMMS_EVAL} tasks/mathvista/mathvista_testmini_cot.yaml, utils.py",
            id="pid",
            question="question",
            answer="answer",
            gold="text",
            options_form="list",
            options=("choices",),
            image="decoded_image",
        ),
        HubSpec(
            # options in the question text ("Choices:\nA:..."), or drawn in the diagram with
            # the whole question (vision-only rows have an empty question)
            name="MathVerse",
            protocol="grounding",
            hub_id="AI4Math/MathVerse",
            config="testmini",
            split="testmini",
            files=("testmini.parquet",),
            revision="268dfc55b62296be3bdf6406d6dea07bd06a7d64",
            source=f"card (configs); {LMMS_EVAL} tasks/mathverse/utils.py (the columns read, "
            "of its copy CaraJ/MathVerse-lmmseval)",
            id="sample_index",
            question="question",
            answer="answer",
            gold="letter",
            options_form="text",
            options=("question",),
            stem="Answer the question shown in the image.",
            image="image",
            choice_when=("question_type", "multi-choice"),
        ),
        HubSpec(
            name="DynaMath",
            protocol="grounding",
            hub_id="DynaMath/DynaMath_Sample",
            config="default",
            split="sample_variant1",
            files=("data/sample1-*.parquet",),
            revision="5370736ee16d5de6a315b9b36fe793ea101aef34",
            source=f"card; {LMMS_EVAL} tasks/dynamath/reasoning/utils.py; {VLMEVALKIT} "
            "dataset/dynamath.py (answer_type)",
            id="id",
            question="question",
            answer="ground_truth",
            gold="letter",
            options_form="text",
            options=("question",),
            image="decoded_image",
            choice_when=("answer_type", "multiple choice"),
        ),
        HubSpec(
            # InterGPS's Geometry3K: four choices, ground_truth the letter; images a list
            name="Geo3K",
            protocol="grounding",
            hub_id="hiyouga/geometry3k",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="37e4933",
            source=f"card; {LMMS_EVAL} tasks/geometry3k/utils.py (the columns it reads: images, "
            "problem, choices, ground_truth)",
            id="id",
            question="problem",
            answer="ground_truth",
            gold="letter",
            options_form="list",
            options=("choices",),
            image="images",
        ),
        HubSpec(
            # the options are their own text column "A. x; B. y"; the image column is named
            # image_path but holds the Image feature
            name="WeMath",
            protocol="grounding",
            hub_id="We-Math/We-Math",
            config="default",
            split="testmini",
            files=("data/testmini-*.parquet",),
            revision="527c44d",
            source=f"card; {LMMS_EVAL} tasks/wemath/reasoning/utils.py",
            id="ID",
            question="question",
            answer="answer",
            gold="letter",
            options_form="text",
            options=("option",),
            image="image_path",
        ),
        HubSpec(
            # options empty: a free-form question
            name="MATH-Vision",
            protocol="grounding",
            hub_id="MathLLMs/MathVision",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="b223f3c02d8fb946c7bb9e498084fd6e4a148550",
            source=f"card; {LMMS_EVAL} tasks/mathvision/mathvision_test.yaml, utils.py",
            id="id",
            question="question",
            answer="answer",
            gold="letter",
            options_form="list",
            options=("options",),
            image="decoded_image",
        ),
        HubSpec(
            # answers are one or more letters ("A, C"); options in the text or the figure
            name="LogicVista",
            protocol="grounding",
            hub_id="lscpku/LogicVista",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="main",
            source=f"{LMMS_EVAL} tasks/logicvista/reasoning/utils.py (question, image, "
            f"answer); {VLMEVALKIT} dataset/utils/logicvista.py (answers 'A, C'); public "
            "loaders (id); no card read",
            id="id",
            question="question",
            answer="answer",
            gold="letters",
            options_form="text",
            options=("question",),
            image="image",
        ),
        HubSpec(
            name="A-OKVQA",
            protocol="grounding",
            hub_id="HuggingFaceM4/A-OKVQA",
            config="default",
            split="validation",
            files=("data/validation-*.parquet",),
            revision="d1b0efa",
            source="card (image, question_id, question, choices, correct_choice_idx)",
            id="question_id",
            question="question",
            answer="correct_choice_idx",
            gold="index",
            options_form="list",
            options=("choices",),
            image="image",
        ),
        HubSpec(
            # lettered options in the question make a row multiple choice
            name="MMK12",
            protocol="grounding",
            hub_id="FanqingM/MMK12",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="main",
            source="public loaders of FanqingM/MMK12 split test (id, subject, image, "
            "question, answer); no card read",
            id="id",
            question="question",
            answer="answer",
            gold="letter",
            options_form="text",
            options=("question",),
            image="image",
        ),
        _mmmu_pro(
            "MMMU-Pro", "standard (10 options)", "mmmu_pro_standard", "question", "", "image_1"
        ),
        HubSpec(
            # the paper's diagnostic subset (App. C.2), reported apart from the ten benchmarks;
            # free-form answers, "<AND>" / "<OR>" joining the parts a grader accepts
            name="MM-Vet",
            protocol="grounding",
            hub_id="lmms-lab/MMVet",
            config="default",
            split="test",
            files=("data/test-*.parquet",),
            revision="6f71fdadf11f9cfbb8048e3fab4c2687f08e01e1",
            source=f"{LMMS_EVAL} tasks/mmvet/mmvet.yaml, utils.py (question_id, image, "
            "question, answer, capability)",
            id="question_id",
            question="question",
            answer="answer",
            gold="text",
            options_form="none",
            image="image",
            category="capability",
        ),
        HubSpec(
            # the paper's other diagnostic subset; lmms-eval's gqa task: the questions of
            # testdev_balanced_instructions, each image by imageId from testdev_balanced_images
            name="GQA",
            protocol="grounding",
            hub_id="lmms-lab/GQA",
            config="testdev_balanced_instructions",
            split="testdev",
            files=("testdev_balanced_instructions/testdev-*.parquet",),
            revision="bbb748d92c9611653d8250eba18ccaae2fe40aed",
            source=f"{LMMS_EVAL} tasks/gqa/gqa.yaml, utils.py (imageId, question, answer; "
            "images by id from testdev_balanced_images)",
            id="id",
            question="question",
            answer="answer",
            gold="text",
            options_form="none",
            image="imageId",
            image_table=ImageTable(
                ("testdev_balanced_images/testdev-*.parquet",),
                "id",
                "image",
                beside=("_instructions", "_images"),
            ),
        ),
        # the question and its options are rendered in the image (the options column lists
        # them too)
        _mmmu_pro(
            "MMMU-Pro-vision",
            "vision",
            "mmmu_pro_vision",
            None,
            "Answer the question shown in the image.",
            "image",
        ),
    )
}

#: Datasets the papers use with no hub snapshot whose schema could be followed here.
UNMAPPED: Final[Mapping[str, str]] = {
    "reasonvqa": "duongtr/ReasonVQA publishes no Parquet schema (no viewer, no dataset_info); "
    "read a local copy with the column aliases (docs/probe.md)",
}


def find_hub_spec(name: str) -> HubSpec | None:
    """The spec a dataset reference names (:func:`parse_dataset_ref`: its split and config
    chosen, :meth:`HubSpec.choose`), or None where its loader name is no hub dataset;
    InputError for a malformed reference or a choice the spec cannot read."""
    if name in HUB_SPECS:
        return HUB_SPECS[name]
    ref = parse_dataset_ref(name)
    spec = HUB_SPECS.get(ref.name)
    return None if spec is None else spec.choose(ref.config, ref.split)


def hub_spec(name: str, protocol: Protocol | None = None) -> HubSpec:
    """The spec of ``name``, a loader name with its config and split where it chooses them
    (``MATH-Vision@testmini``, :func:`find_hub_spec`), of ``protocol`` when given; InputError
    naming the known ones."""
    spec = find_hub_spec(name)
    if spec is None or (protocol is not None and spec.protocol != protocol):
        known = [s.name for s in HUB_SPECS.values() if protocol in (None, s.protocol)]
        why = f" ({UNMAPPED[name]})" if name in UNMAPPED else ""
        raise InputError(f"no hub loader for {name!r}{why}; hub loaders: {', '.join(known)}")
    return spec


def spec_for_hub_id(hub_id: str, protocol: Protocol) -> HubSpec | None:
    """The one spec of ``protocol`` reading repository ``hub_id`` (None: none or several)."""
    found = [s for s in HUB_SPECS.values() if s.hub_id == hub_id and s.protocol == protocol]
    return found[0] if len(found) == 1 else None
