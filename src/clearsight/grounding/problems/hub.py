"""The paper's benchmarks as grounding problems: a local JSONL layout, or a hub snapshot of the
ten benchmarks (and MMMU-Pro vision, and the diagnostic subsets MM-Vet and GQA).

:func:`load_benchmark` reads ``<datasets>/<name>/``: the benchmark's JSONL file in its layout
(:data:`~clearsight.grounding.problems.problem.LAYOUTS`) when there is one, else the folder as a hub
snapshot or cache (or the caches, for ``hf:``).

:func:`hub_problems` reads the split a benchmark's :class:`~clearsight.datasets.hub.HubSpec`
names (:func:`~clearsight.datasets.rows.hub_rows`) and makes each row a
:class:`~clearsight.grounding.problems.problem.Problem`: the question as the dataset gives it, its
options listed under it as ``A. ...`` unless the text lists them already, the gold letter
(``letter``), letters (``"A, C"``, compared as ``text``) or free value (its type inferred), and
the image written once to ``$CLEARSIGHT_CACHE/grounding-images/NAME/`` when the whole split is
valid and its ids unique (:func:`~clearsight.datasets.rows.load_rows`).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NotRequired, TypedDict

from clearsight.datasets.hub import HUB_SPECS, HubSpec, find_hub_spec, hub_spec
from clearsight.datasets.images import image_reference
from clearsight.datasets.rows import HubRow, image_folder, load_rows
from clearsight.datasets.snapshot import locate, source_record
from clearsight.grounding.problems.problem import (
    LAYOUTS,
    AnswerType,
    Problem,
    infer_answer_type,
    read_records,
    record_problem,
    refuse_repeats,
    with_options,
)
from clearsight.provenance import source_digest
from clearsight.validate import InputError


def hub_problem(row: HubRow, spec: HubSpec) -> Problem:
    """One row as a problem (its embedded image referenced at its cache path, not written)."""
    listed = row.options_in_text or not row.options
    question = row.question if listed else with_options(row.question, row.options)
    answer_type: AnswerType
    if row.kind == "choice":
        answer_type = "letter"
    elif row.kind == "choices":
        answer_type = "text"
    else:
        answer_type = infer_answer_type(row.gold, ())
    return Problem(
        id=f"{spec.name}/{row.id}",
        benchmark=spec.name,
        question=question,
        gold=row.gold,
        answer_type=answer_type,
        image=image_reference(row.image, image_folder(spec)),
        options=row.options,
    )


def hub_source(name: str, datasets_dir: str | Path) -> str | Path:
    """Where benchmark ``name`` is read from: ``hf:`` stays ``hf:`` (the caches), a folder of
    benchmarks gives its ``<name>/`` folder."""
    return "hf:" if str(datasets_dir).startswith("hf:") else Path(datasets_dir) / name


def hub_problems(
    name: str,
    datasets_dir: str | Path,
    limit: int | None = None,
    write: bool = True,
    refused: list[str] | None = None,
) -> list[Problem]:
    """The problems of benchmark ``name`` from ``<datasets_dir>/<name>/`` (a snapshot or cache
    folder) or, with ``datasets_dir`` ``hf:``, from the caches; at most ``limit``; ``write``
    and ``refused`` as :func:`clearsight.probe.sources.hub.hub_instances`."""
    spec = hub_spec(name, "grounding")
    located = locate(spec, hub_source(name, datasets_dir))
    convert = functools.partial(hub_problem, spec=spec)
    return load_rows(located, convert, "problem", limit=limit, write=write, refused=refused)


def is_hub_benchmark(name: str, datasets_dir: str | Path) -> bool:
    """Whether benchmark ``name`` is read from a hub source: it has a hub spec and either no
    JSONL layout, ``datasets_dir`` is ``hf:``, or ``<datasets_dir>/<name>/`` lacks the JSONL
    file of :data:`~clearsight.grounding.problems.problem.LAYOUTS`."""
    spec = find_hub_spec(name)
    if spec is None or spec.protocol != "grounding":
        return False
    if name not in LAYOUTS or str(datasets_dir).startswith("hf:"):
        return True
    return not (Path(datasets_dir) / name / LAYOUTS[name].file).is_file()


class BenchmarkSource(TypedDict):
    """What a manifest records of a benchmark's source (:func:`benchmark_record`); the keys
    after ``file_sha256`` are a hub source's (:class:`~clearsight.datasets.snapshot.HubRecord`)."""

    origin: str
    file_sha256: str
    format: NotRequired[str]
    hub_id: NotRequired[str]
    config: NotRequired[str]
    split: NotRequired[str]
    revision: NotRequired[str]
    files: NotRequired[int]


def benchmark_record(name: str, datasets_dir: str | Path) -> BenchmarkSource:
    """What a manifest records of benchmark ``name``'s source: ``origin`` (the file or folder
    read) and ``file_sha256`` (of the JSONL file, or of the hub split's files, with the
    repository, config, split and revision followed)."""
    if not is_hub_benchmark(name, datasets_dir):
        path = Path(datasets_dir) / name / LAYOUTS[name].file
        return {"origin": str(path.resolve()), "file_sha256": source_digest(path, (".jsonl",))}
    spec = hub_spec(name, "grounding")
    record = source_record(locate(spec, hub_source(name, datasets_dir)))
    return {
        "origin": record["source"],
        "file_sha256": record["sha256"],
        "format": record["format"],
        "hub_id": record["hub_id"],
        "config": record["config"],
        "split": record["split"],
        "revision": record["revision"],
        "files": record["files"],
    }


def load_benchmark(name: str, datasets_dir: Path | str, limit: int | None = None) -> list[Problem]:
    """Problems of benchmark ``name`` from ``<datasets_dir>/<name>/``: its JSONL file (layout in
    :data:`LAYOUTS`) when there is one, else a hub snapshot or cache folder, or the caches
    when ``datasets_dir`` is ``hf:`` (:func:`hub_problems`);
    ``limit`` keeps the first ``limit``."""
    if is_hub_benchmark(name, datasets_dir):
        return hub_problems(name, datasets_dir, limit)
    if name not in LAYOUTS:
        known = dict.fromkeys(
            [*LAYOUTS, *(s.name for s in HUB_SPECS.values() if s.protocol == "grounding")]
        )
        raise InputError(f"unknown benchmark {name!r}; known: {', '.join(known)}")
    layout = LAYOUTS[name]
    root = Path(datasets_dir) / name
    out: list[Problem] = []
    for n, rec in enumerate(read_records(root / layout.file)):
        if limit is not None and len(out) >= limit:
            break
        out.append(record_problem(rec, layout, name, root, n))
    refuse_repeats(out, root / layout.file)
    return out
