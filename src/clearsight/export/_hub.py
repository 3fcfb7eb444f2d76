"""``clearsight push``: a finished run's details dataset to a Hub dataset repository, and its
evaluation results as a pull request on a model repository, through ``huggingface_hub``'s own
API (:meth:`HfApi.create_commit`; the token from wherever ``huggingface_hub`` finds it, never
written anywhere by clearsight). Nothing is written locally."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clearsight.export._details import details_files
from clearsight.export._eval_results import eval_results_files, eval_results_path
from clearsight.export._export import ExportOptions
from clearsight.export._files import Files
from clearsight.export._numbers import run_numbers
from clearsight.export._repo_ids import hub_model_id, parse_repo_id
from clearsight.export._source import finished_run
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.export._numbers import ModelNumbers

__all__ = ["Pushed", "push_run"]


@dataclass(frozen=True)
class Pushed:
    """Where the push went: the dataset commit's URL (or its pull request's) and the model
    repository's pull request."""

    dataset: str
    model_pr: str


def _one_model(numbers: list[ModelNumbers], model_repo: str | None) -> tuple[ModelNumbers, str]:
    """The model whose results go to a model repository, and that repository (``model_repo``,
    or the Hub id the model names)."""
    repos = [(m, model_repo or hub_model_id(m.model)) for m in numbers]
    named = [(m, repo) for m, repo in repos if repo is not None]
    if len(named) != 1:
        raise InputError(
            f"the run has {len(named)} models for a model repository "
            f"({', '.join(m.model for m in numbers)}): name one with --model NAME"
            + ("" if model_repo else " and its repository with --model-repo ORG/NAME")
        )
    return named[0]


def _commit(api: Any, repo: str, files: Files, kind: str, message: str, pr: bool) -> str:
    """One commit of ``files`` (or its pull request); its URL."""
    from huggingface_hub import CommitOperationAdd

    ops = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=c) for p, c in files.items()]
    info = api.create_commit(repo, ops, repo_type=kind, commit_message=message, create_pr=pr)
    return str(info.pr_url or info.commit_url)


def push_run(
    run_dir: Path, hub: str, options: ExportOptions, *, pr: bool, model_repo: str | None
) -> Pushed:
    """Upload the run's details to dataset ``hub`` (a pull request with ``pr``) and open a pull
    request with its evaluation results on ``model_repo`` (None: the Hub id its model names).
    An InputError where the input is bad, huggingface_hub is missing or the Hub cannot be
    reached (saying what was sent before)."""
    hub = parse_repo_id(hub)
    model_repo = None if model_repo is None else parse_repo_id(model_repo)
    run = finished_run(run_dir)
    numbers = run_numbers(run, options.n_boot, options.seed, options.model)
    found, repo = _one_model(numbers, model_repo)
    (results,) = eval_results_files(run, [found], hub, options.n_boot).values()
    try:
        from huggingface_hub import HfApi, errors
    except ImportError:
        from clearsight.models.extras import install_hint

        raise InputError(f"clearsight push needs huggingface_hub: {install_hint('hub')}") from None
    # huggingface_hub's HTTP client's errors (httpx2's HTTPError: an unreachable endpoint);
    # those of older versions (requests') are OSErrors
    api, sent = HfApi(), ""
    message = f"clearsight {run.version}: {run.benchmark} run {run.run_dir.name}"
    try:
        api.create_repo(hub, repo_type="dataset", exist_ok=True)
        sent = _commit(
            api, hub, details_files(run, options.images, options.seed), "dataset", message, pr
        )
        pr_url = _commit(api, repo, {eval_results_path(run): results}, "model", message, True)
    except (OSError, vars(errors).get("HTTPError", OSError)) as exc:
        done = f" (the details were sent: {sent})" if sent else " (nothing was sent)"
        raise InputError(
            f"cannot push to {api.endpoint}: {' '.join(str(exc).split())}{done}; check the "
            "connection, HF_ENDPOINT and your token (hf auth login), then run clearsight push again"
        ) from None
    return Pushed(sent, pr_url)
