"""``clearsight instances`` / ``clearsight problems``: what a source would load, checked before a
run — the count, the column each field comes from, the first rows, and every refused row.
Nothing is written (embedded images stay unwritten)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import grounding, probe
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.grounding import Problem
    from clearsight.probe import Instance

#: Where a probe run's questions come from (``probe instances`` and ``instances``).
Instances = Annotated[
    str,
    typer.Option(
        help="bundled (the bundled questions), a JSONL, JSON, Parquet or Arrow file or a "
        "directory of them (the format read from the file), a hub snapshot or cache folder, or "
        "hf:[OWNER/NAME] (the Hugging Face caches; docs/probe.md)."
    ),
]
#: The loader of the questions' file.
Dataset = Annotated[
    str | None,
    typer.Option(
        help="Loader of the file: jsonl (clearsight's own rows), seedbench, figureqa, mmstar, "
        "cvqa, reasonvqa (default: inferred from the file's rows, or an error saying it cannot)."
    ),
]
Show = Annotated[int, typer.Option(min=0, help="How many of the first rows to print.")]
#: Most characters of a listed row's text (a row of any size is listed on one short line).
WIDTH = 160


def _cut(text: str) -> str:
    """``text`` on one line, cut to :data:`WIDTH` characters (``…`` marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= WIDTH else flat[: WIDTH - 1] + "…"


def _echo_fields(fields: dict[str, str]) -> None:
    typer.echo("fields:")
    for field, column in fields.items():
        typer.echo(f"  {field:<22} <- {column}")


def _echo_refused(refused: list[str]) -> None:
    if refused:
        typer.echo(f"refused: {len(refused)} row(s)")
        for line in refused[:10]:
            typer.echo(f"  {line}")


def _instance_line(inst: Instance) -> str:
    """A listed instance: its id, category, gold and question, then its options, each cut."""
    options = "  ".join(f"({k}) {v}" for k, v in zip(inst.letters, inst.options, strict=True))
    head = f"{inst.id} [{inst.category}] gold {inst.gold}: {inst.question}"
    return f"  {_cut(head)} | {_cut(options)}"


def _probe_listing(
    source: str, dataset: str
) -> tuple[str, dict[str, str], list[Instance], list[str]]:
    """Where the rows come from, the fields' columns, the instances and the refused rows."""
    from clearsight.datasets.hub import find_hub_spec
    from clearsight.datasets.rows import provenance
    from clearsight.datasets.snapshot import is_hub_source, locate

    own = {name: name for name in probe.OWN_FIELDS}
    if dataset == "bundled":
        return (
            "bundled questions (probe/data/bundled.yaml)",
            own,
            probe.load_instances(source, dataset),
            [],
        )
    if dataset == "jsonl":
        return f"{source} (clearsight's own rows)", own, probe.instances_from_jsonl(source), []
    spec = find_hub_spec(dataset)
    if spec is not None and is_hub_source(source):
        refused = list[str]()
        where = locate(spec, source).describe()
        items = probe.hub_instances(dataset, source, write=False, refused=refused)
        return where, provenance(spec), items, refused
    layout = probe.LAYOUTS[dataset]
    options = ", ".join(layout.option_columns) or ", ".join(layout.options)
    fields = {
        "id": ", ".join(layout.id),
        "question": ", ".join(layout.question),
        "options": "Yes, No" if layout.yes_no else options,
        "gold": ", ".join(layout.answer) + " (a letter, an index or an option's text)",
        "image": ", ".join(layout.image),
        "category": ", ".join(layout.category),
    }
    fields = {k: f"{v} (first present)" for k, v in fields.items()}
    return (
        f"{source} (rows read with the {dataset} aliases)",
        fields,
        probe.load_instances(source, dataset, write=False),
        [],
    )


def instances(instances: Instances = "bundled", dataset: Dataset = None, show: Show = 5) -> None:
    """What a probe source would load, checked before a run.

    The count, the column each field comes from, the first rows and every refused row
    (nothing is written)."""
    name = probe.resolve_source({"instances": instances, "dataset": dataset})["dataset"]
    where, fields, items, refused = _probe_listing(instances, name)
    typer.echo(f"source: {where}")
    typer.echo(f"loader: {name}")
    typer.echo(f"instances: {len(items)}")
    _echo_refused(refused)
    _echo_fields(fields)
    if items and show:
        typer.echo(f"first {min(show, len(items))}:")
        for inst in items[:show]:
            typer.echo(_instance_line(inst))


def _problem_line(p: Problem) -> str:
    """A listed problem: its id, answer type, image or not, gold and question, cut."""
    image = "no image" if p.image is None else "image"
    return f"  {_cut(f'{p.id} [{p.answer_type}, {image}] gold {p.gold}: {p.question}')}"


def _benchmark_listing(
    name: str, datasets_dir: str
) -> tuple[str, dict[str, str], list[Problem], list[str]]:
    """Where benchmark ``name``'s rows come from, the fields' columns, its problems and the
    refused rows."""
    from clearsight.datasets.hub import hub_spec
    from clearsight.datasets.rows import provenance
    from clearsight.datasets.snapshot import locate

    if grounding.is_hub_benchmark(name, datasets_dir):
        spec, refused = hub_spec(name, "grounding"), list[str]()
        where = locate(spec, grounding.hub_source(name, datasets_dir)).describe()
        items = grounding.hub_problems(name, datasets_dir, write=False, refused=refused)
        return where, provenance(spec), items, refused
    layout = grounding.LAYOUTS[name]
    fields = {
        "id": layout.id,
        "question": layout.question,
        "options": layout.choices or "none (listed in the question, if any)",
        "gold": layout.answer + (" (an index)" if layout.answer_index else ""),
        "image": layout.image or "none",
    }
    path = Path(datasets_dir) / name / layout.file
    return f"{path} (JSONL layout)", fields, grounding.load_benchmark(name, datasets_dir), []


def problems(
    datasets: Annotated[
        str | None,
        typer.Option(
            help="Folder of benchmark copies, <datasets>/<Name>/ each holding its JSONL file or "
            "a hub snapshot ($CLEARSIGHT_CACHE/datasets after clearsight fetch --dataset), or "
            "hf: (the Hugging Face caches; docs/grounding.md)."
        ),
    ] = None,
    benchmarks: Annotated[
        str | None, typer.Option(help="Comma-separated benchmarks to check in --datasets.")
    ] = None,
    instances: Annotated[
        list[str] | None, typer.Option(help="A JSONL or JSON file of problems (repeatable).")
    ] = None,
    show: Show = 5,
) -> None:
    """What grounding sources would load, checked before a run.

    Per benchmark or file the count, the column each field comes from, the first rows and
    every refused row (nothing is written)."""
    names = [name.strip() for name in (benchmarks or "").split(",") if name.strip()]
    if names and datasets is None:
        raise InputError("--benchmarks needs --datasets (a folder of copies, or hf:)")
    if not names and not instances:
        raise InputError("name what to check: --datasets DIR --benchmarks A,B, or --instances FILE")
    listings = [(name, *_benchmark_listing(name, str(datasets))) for name in names]
    for path in instances or ():
        own = {f: f for f in ("id", "question", "answer", "choices", "image")}
        listings.append((path, f"{path} (normalised rows)", own, grounding.load_jsonl(path), []))
    for name, where, fields, items, refused in listings:
        typer.echo(f"{name}: {where}")
        typer.echo(f"problems: {len(items)}")
        _echo_refused(refused)
        _echo_fields(fields)
        for p in items[:show]:
            typer.echo(_problem_line(p))
