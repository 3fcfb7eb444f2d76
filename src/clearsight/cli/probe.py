"""``clearsight probe``: the active-reasoning protocol through a noisy VLM sensor. ``run``,
``build``, ``analyse`` and ``distill`` have their options generated from their configurations
(:class:`~clearsight.probe.protocol.ProbeConfig`, ``BuildConfig``, ``AnalysisConfig``,
``DistillConfig``); ``judges`` compares judges of u, ``query-types`` the query-type judge with
people, ``instances`` lists questions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from clearsight import probe as protocol
from clearsight.cli.build import BUILD
from clearsight.cli.data import Dataset, Instances
from clearsight.cli.generate import Alias, ConfigCommand, RunDir, command_group, option_model
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.execution import ExecutionOptions
    from clearsight.cli.options import DrawOptions, JudgesOptions, QueryTypesOptions
    from clearsight.driver import RunSummary
    from clearsight.probe import AnalysisConfig, DistillConfig, ProbeConfig

ProbeRun = Annotated[Path, typer.Argument(help="A probe run directory.")]


def run(
    config: ProbeConfig, execution: ExecutionOptions, out: RunDir = Path("runs/probe")
) -> RunSummary:
    """Run the probe protocol, then write its report.

    Resumes an interrupted run. With one process (the default) every turn is stored as it
    happens; `--executor ray` runs the conversations on Ray (docs/scale.md)."""
    return execution.start(protocol.run_probe, config, out, report=True)


def analyse(config: AnalysisConfig, run: ProbeRun) -> RunSummary:
    """Belief probe and query-type classification with an LLM judge, stored in the run."""
    return protocol.run_probe_analysis(run, config)


def distill(
    config: DistillConfig,
    run: Annotated[Path, typer.Argument(help="A probe run with successful BP conversations.")],
    out: Annotated[Path, typer.Option(help="Directory for the LoRA adapter and its manifest.")],
) -> None:
    """Self-distillation (Table 2): LoRA-fine-tune an hf reasoner on its own BP conversations.

    Its successful BP conversations of RUN train it (its turns in the loss, the rest masked),
    keeping the epoch with the lowest validation loss; then `probe run --reasoner hf:<base>
    --reasoner hf:<OUT>` on held-out instances compares before and after."""
    result = protocol.run_distill(run, out, config)
    manifest = result.manifest
    typer.echo(f"base: {manifest['base']}")
    typer.echo(
        f"trajectories: {manifest['trajectories']} (train {len(manifest['train'])}, "
        f"validation {len(manifest['validation'])}), labelled tokens "
        f"{manifest['labelled_tokens']}"
    )
    before = manifest["before"]
    rows = [(0, before["train_loss"], before["val_loss"], "")]
    rows += [
        (e["epoch"], e["train_loss"], e["val_loss"], f" ({e['seconds']:.1f} s)")
        for e in manifest["history"]
    ]
    for epoch, train_loss, val_loss, took in rows:
        typer.echo(
            f"epoch {epoch}: train_loss {_loss_text(train_loss)}, "
            f"val_loss {_loss_text(val_loss)}{took}"
        )
    typer.echo(f"chosen epoch: {manifest['chosen_epoch']} ({manifest['chosen_by']})")
    typer.echo(f"adapter: {result.out} (use as --reasoner hf:{result.out})")


def _loss_text(value: float | None) -> str:
    """A loss for the terminal (``-`` for none)."""
    return "-" if value is None else f"{value:.4f}"


def judges(
    options: JudgesOptions,
    run: Annotated[Path, typer.Argument(help="A probe run directory with sensor replies.")],
) -> None:
    """Agreement of two semantic-equivalence judges on the run's stored sensor replies.

    Or (--human-labels) of each judge with people's labels of u: exact and within-1 agreement
    of u, MAE, Cohen's kappa (plain and quadratic-weighted), Pearson."""
    a, b, limit = options.a, options.b, options.limit
    if options.human_labels is not None:
        _validate_judges(run, options.human_labels, (a, b), limit)
        return
    replies = [
        turn.reply
        for t in protocol.load_transcripts(run)
        for turn in t.turns
        if turn.reply is not None
    ]
    judged = (protocol.make_judge(a), protocol.make_judge(b))
    result, seconds = protocol.judge_agreement(replies, *judged, limit=limit)
    typer.echo(f"judges: {a} vs {b}")
    _echo_agreement(result.to_json())
    typer.echo(f"seconds: {a} {seconds[0]:.2f}, {b} {seconds[1]:.2f}")


def _echo_agreement(values: dict[str, float]) -> None:
    """``name: value`` lines of an agreement (n as an integer)."""
    for name, value in values.items():
        typer.echo(f"{name}: {value:.3f}" if name != "n" else f"n: {int(value)}")


def _validate_judges(
    run: Path, labels_file: Path, judges: tuple[str, ...], limit: int | None
) -> None:
    """Each judge against the people's labels of ``labels_file``, printed and stored in
    ``run`` (Table 5)."""
    from clearsight.store import DB_NAME

    if not (run / DB_NAME).is_file():
        raise InputError(f"{run} is not a probe run directory (no {DB_NAME})")
    labels = protocol.read_human_labels(labels_file)[:limit]
    made = [protocol.make_judge(j) for j in dict.fromkeys(judges)]
    results = protocol.human_agreement(labels, made)
    protocol.store_validation(run, labels, results)
    for name, (result, seconds) in results.items():
        typer.echo(f"judge: {name} vs people ({labels_file})")
        _echo_agreement(result.to_json())
        typer.echo(f"seconds: {seconds:.2f}")


def query_types(
    options: QueryTypesOptions,
    run: Annotated[
        Path, typer.Argument(help="A probe run directory (the result is stored in it).")
    ],
) -> None:
    """The query-type judge against people's labels of query types (the paper's App. H).

    Prints the share equal to the people's consensus type, the share equal to at least one
    person's type (the paper's union match rate) and Cohen's kappa against the consensus, and
    stores them in RUN for the report."""
    from clearsight.models import shared_backend
    from clearsight.probe.posthoc import qtypecheck
    from clearsight.probe.posthoc.protocol import AnalysisConfig, prompt_hashes
    from clearsight.probe.specs import QTYPE_PROTOCOL, QueryTypeValidationSpec
    from clearsight.store import DB_NAME

    if not (run / DB_NAME).is_file():
        raise InputError(f"{run} is not a probe run directory (no {DB_NAME})")
    judge, readout, human_labels = options.judge, options.readout, options.human_labels
    config = AnalysisConfig(judge_model=judge, query_type_readout=readout)  # type: ignore[arg-type]
    labels = qtypecheck.read_query_labels(human_labels)[: options.limit]
    types, seconds = qtypecheck.judge_query_labels(
        labels, shared_backend(judge, {}), config.query_type_readout
    )
    result = qtypecheck.query_type_agreement(types, labels)
    spec = QueryTypeValidationSpec(
        labels=qtypecheck.labels_hash(labels),
        judge=judge,
        readout=readout,
        prompt=prompt_hashes(config)[QTYPE_PROTOCOL],
    )
    qtypecheck.store_query_validation(run, labels, spec, result, seconds)
    typer.echo(f"query-type judge: {judge} ({readout}) vs people ({human_labels})")
    _echo_agreement({k: v for k, v in result.to_json().items() if k != "unparsed"})
    typer.echo(f"unparsed: {result.unparsed}")
    typer.echo(f"seconds: {seconds:.2f}")


def draw(options: DrawOptions) -> None:
    """Draw PER instances of each dataset for one sensor, seeded (docs/probe.md).

    As the paper's 100-instance draws per dataset (--per 100) and its human sample of 50 questions
    per setting (--per 50: with the same seed, the first 50 of the 100). Each instance's rank is a
    hash of the seed, the sensor, the dataset and its id, so the draw is the same wherever it is
    made."""
    from clearsight.config import load_config
    from clearsight.probe.sources.draw import draw_per_dataset

    selection = load_config(
        None, protocol.ProbeConfig, {"instances": options.instances, "dataset": options.dataset}
    )
    items = protocol.select_instances(selection)
    drawn = draw_per_dataset(items, options.per, options.sensor, options.seed)
    protocol.write_instances(drawn.instances, options.out)
    for name, (n, available) in drawn.counts().items():
        typer.echo(f"{name}: {n} of {available}")
    typer.echo(
        f"drew {len(drawn.instances)} (sensor {options.sensor}, seed {options.seed}): {options.out}"
    )


RUN = ConfigCommand(
    "run",
    lambda: protocol.ProbeConfig,
    run,
    aliases=(
        Alias("--ids", "instance_ids"),
        Alias("--reasoner", "reasoners"),
        Alias("--uot-depth", "uot.depth"),
        Alias("--uot-candidates", "uot.candidates"),
        Alias("--uot-replies", "uot.replies"),
        Alias("--uot-max-queries", "uot.max_queries"),
        Alias("--uot-commit-posterior", "uot.commit_posterior"),
    ),
    execution={},
)
ANALYSE = ConfigCommand("analyse", lambda: protocol.AnalysisConfig, analyse)
DISTILL = ConfigCommand("distill", lambda: protocol.DistillConfig, distill)
JUDGES = ConfigCommand(
    "judges", option_model("JudgesOptions"), judges, what="judges options", files=False
)
DRAW = ConfigCommand("draw", option_model("DrawOptions"), draw, what="draw options", files=False)
QUERY_TYPES = ConfigCommand(
    "query-types",
    option_model("QueryTypesOptions"),
    query_types,
    what="query-types options",
    files=False,
)

app = typer.Typer(
    cls=command_group(
        RUN,
        BUILD,
        ANALYSE,
        DISTILL,
        JUDGES,
        QUERY_TYPES,
        DRAW,
        default="run",
        moved={"report": "clearsight report RUN"},
    ),
    help="Active reasoning through a noisy VLM sensor (definitions: docs/methods.md §6, "
    "`clearsight docs methods`). Options without a command run `run`.",
    no_args_is_help=True,
)


@app.command("instances")
def instances(instances: Instances = "bundled", dataset: Dataset = None) -> None:
    """List instances: id, category, gold, question."""
    from clearsight.config import load_config

    selection = load_config(
        None, protocol.ProbeConfig, {"instances": instances, "dataset": dataset}
    )
    for inst in protocol.select_instances(selection):
        typer.echo(f"{inst.id:36s} {inst.category:10s} {inst.gold}  {inst.question}")
