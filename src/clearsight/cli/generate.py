"""Commands generated from configuration models: every field an option, with its help text.

A :class:`ConfigCommand` names a configuration model, the function that runs with it (its
*body*) and a few :class:`Alias` es; its command line is generated when the command is first
asked for (so ``clearsight --help`` imports no configuration):

* ``--config FILE``: a YAML file of the model's fields;
* one option per field, named after it (``scene_ids`` -> ``--scene-ids``), its help the field's
  description and its default the model's (:mod:`clearsight.cli.fields` says what each takes);
* the aliases: documented short or earlier names of fields (``--model`` for ``models``);
* ``--set FIELD=VALUE``, repeatable: any field, dotted for a nested one (``--set uot.depth=2``),
  the value in YAML (:func:`clearsight.config.parse_assignment`);
* ``--show-config``: print the resolved configuration as YAML and run nothing (the value of
  every key variable redacted, as a stored run holds it);
* with ``execution``, the shared :class:`~clearsight.cli.execution.ExecutionOptions`, generated
  the same way;
* the body's own parameters (a run directory, an output file), declared in its signature.

Later values win: the file, then the options, then ``--set`` in order. The body gets the
validated configuration (and the execution options); a run summary it returns ends the command
(:func:`~clearsight.cli.execution.finished`). A field added to a model appears on its commands
with its description, and no command line is edited.

Why a small generator over typer rather than a library that derives a CLI from pydantic models
(pydantic-settings' CLI source, which parses with argparse; cyclopts): the commands that are not
generated (``report``, ``board``, ``scenes``, ``docs``, ...) stay typer commands with the same
help layout, errors and test runner, so there is one command-line framework, not two; the
precedence file < options < ``--set`` and the dotted ``--set`` with YAML values are the
project's own loader's (:func:`clearsight.config.load_config`), so a ``--config`` file means the
same from the command line and from Python; and no dependency is added for about 400 lines.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

import typer

from clearsight.cli.errors import Group, reflowed
from clearsight.cli.fields import (
    NONE,
    ConfigField,
    Shape,
    config_fields,
    default_text,
    field_at,
    option_value,
    plain,
    shape_of,
)
from clearsight.credentials import redact, redact_value
from clearsight.validate import InputError

if TYPE_CHECKING:
    from clearsight.cli.execution import ExecutionOptions
    from clearsight.config import Assignment

#: The parameters every generated command has (its body's own come first).
_CONFIG, _SET, _SHOW = "config__file", "config__set", "config__show"

EPILOG = (
    "Each field can be set in the --config file (YAML), by its option, or with --set "
    "FIELD=VALUE (FIELD dotted for a nested field, VALUE in YAML: 3, [a, b], {k: 1}, null); "
    "later ones win: the file, then the options, then --set. A list option takes "
    f"comma-separated values or is repeated; {NONE} empties it, or unsets a field that may be "
    "unset."
)


#: The run directory of a run command (a rerun of the same command resumes it).
RunDir = Annotated[
    Path, typer.Option("--out", "-o", help="Run directory (a rerun resumes what it holds).")
]


def option_model(name: str) -> Callable[[], type[Any]]:
    """A :class:`ConfigCommand`'s ``model``: the option model ``name`` of
    :mod:`clearsight.cli.options`, imported when the command is built (the command line starts
    without pydantic)."""

    def model() -> type[Any]:
        from clearsight.cli import options

        found: type[Any] = getattr(options, name)
        return found

    return model


@dataclass(frozen=True)
class Alias:
    """A documented short or earlier name of a field (``--model`` for ``models``, ``--uot-depth``
    for ``uot.depth``): an option like the field's own, its help the field's description.
    ``convert`` turns the option's value into the field's (None: nothing to set); ``help``
    says what the option does where the field's description does not."""

    flag: str
    path: str
    convert: Callable[[Any], Any] | None = None
    help: str | None = None


@dataclass(frozen=True)
class _Option:
    """One generated option: its parameter name, flag, the field it sets (at ``path``), the
    defaults shown, and how an alias converts its value."""

    param: str
    flag: str
    path: tuple[str, ...]
    field: ConfigField
    convert: Callable[[Any], Any] | None = None
    help: str | None = None

    @property
    def shape(self) -> Shape:
        """What kind of option the field makes."""
        return shape_of(self.field.annotation)

    def assignment(self, given: Any) -> Assignment | None:
        """What the option sets, from the value the command line gave (None: nothing)."""
        value = option_value(self.shape, given)
        if self.convert is None:
            return self.path, value
        value = self.convert(value)
        return None if value is None else (self.path, value)


@dataclass(frozen=True)
class ConfigCommand:
    """A command whose options are generated from a configuration model (see the module
    docstring). ``model`` returns the model (imported when the command is built); ``body``
    runs with the validated configuration as its first argument, ``execution`` (when the
    command takes execution options: their defaults for this command) and its own
    parameters. ``implied`` gives values implied by the options given (by flag), laid under
    them; ``what`` names the configuration in errors; without ``files`` the command takes no
    ``--config``, ``--set`` or ``--show-config`` (its model holds a command's options, not a
    run's configuration). ``narrow`` gets the configuration's data before validation and the
    fields the command line set (field -> the option that set it), and returns the data with
    what those made inconsistent dropped (saying so). With ``file_argument`` the YAML file is
    the command's positional CONFIG (required) instead of ``--config``."""

    name: str
    model: Callable[[], type[Any]]
    body: Callable[..., object]
    aliases: tuple[Alias, ...] = ()
    execution: Mapping[str, object] | None = None
    implied: Callable[[Mapping[str, object]], Mapping[str, object]] | None = None
    what: str | None = None
    files: bool = True
    narrow: Callable[[dict[str, object], Mapping[str, str]], dict[str, object]] | None = None
    file_argument: bool = False

    def click_command(self) -> Any:
        """The command, its options generated from the model's fields now."""
        app = typer.Typer(
            add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
        )
        # click's plain help never cuts an option's name (Rich's table did, at 80 columns), and
        # takes the terminal's width up to 160 columns
        app.command(
            self.name,
            epilog=EPILOG if self.files else None,
            context_settings={"max_content_width": 160},
        )(self._callback())
        return typer.main.get_command(app)

    def summary_command(self) -> Any:
        """The command as a group's help lists it: its name and summary, nothing imported."""
        app = typer.Typer(add_completion=False)
        app.command(self.name, help=reflowed(inspect.getdoc(self.body) or ""))(_nothing)
        return typer.main.get_command(app)

    def _callback(self) -> Callable[..., None]:
        """The command's function, its signature generated (typer reads ``__signature__``)."""
        from clearsight.cli.execution import ExecutionOptions

        model = self.model()
        own = _own_parameters(self.body)
        options = _field_options(model, self.aliases, "field")
        runs = [] if self.execution is None else _field_options(ExecutionOptions, (), "run")
        panel = getattr(model, "model_config", {}).get("title") or f"{model.__name__} fields"
        parameters = [
            *own,
            *(_file_parameters(model, self.file_argument) if self.files else ()),
            *(_parameter(o, _panel(o, panel)) for o in options),
            *(_parameter(o, "Execution", self.execution) for o in runs),
        ]

        def callback(**values: Any) -> None:
            self._invoke(model, values, options, runs, [p.name for p in own])

        callback.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            sorted(parameters, key=lambda p: p.kind)
        )
        callback.__doc__ = self.body.__doc__
        return callback

    def _invoke(
        self,
        model: type[Any],
        values: Mapping[str, object],
        options: list[_Option],
        runs: list[_Option],
        own: list[str],
    ) -> None:
        """Resolve the configuration the command line gave and run the body with it."""
        import yaml

        from clearsight.cli.execution import finished
        from clearsight.config import load_config, parse_assignment

        extra = {} if self.execution is None else {"execution": self._execution(runs, values)}
        texts = _texts(values.get(_SET))
        sources = _sources(options, values, texts)
        narrow = self.narrow
        file = values.get(_CONFIG)
        config = load_config(
            file if isinstance(file, Path) else None,
            model,
            None,
            [*self._implied(options, values), *_assignments(options, values)]
            + [parse_assignment(text) for text in texts],
            what=self.what,
            sources=sources,
            adjust=None if narrow is None else lambda data: narrow(data, sources),
        )
        if values.get(_SHOW):
            shown = redact_value(_dumped(config))  # as the store writes it: no key's value
            typer.echo(yaml.safe_dump(shown, sort_keys=False, allow_unicode=True))
            return
        summary = self.body(config, **extra, **{name: values[name] for name in own})
        if summary is not None:
            finished(summary)  # type: ignore[arg-type]

    def _implied(self, options: list[_Option], values: Mapping[str, object]) -> list[Assignment]:
        """What :attr:`implied` makes of the options given (laid under them)."""
        if self.implied is None:
            return []
        given = {
            o.flag: option_value(o.shape, values[o.param])
            for o in options
            if values[o.param] is not None
        }
        return [(tuple(path.split(".")), value) for path, value in self.implied(given).items()]

    def _execution(self, runs: list[_Option], values: Mapping[str, object]) -> ExecutionOptions:
        """The execution options given, over this command's defaults."""
        from clearsight.cli.execution import ExecutionOptions
        from clearsight.config import load_config

        return load_config(
            None,
            ExecutionOptions,
            self.execution,
            _assignments(runs, values),
            what="execution options",
        )


class CommandGroup(Group):
    """A group whose :attr:`generated` commands are built when first run (its help lists them
    by their summaries, importing no model); given options and no command name, it runs
    :attr:`default` (``clearsight sweep --config X`` runs ``clearsight sweep run --config X``);
    its help lists the commands in :attr:`order` first."""

    generated: ClassVar[Mapping[str, ConfigCommand]] = {}
    default: ClassVar[str | None] = None
    order: ClassVar[tuple[str, ...]] = ()
    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        """The commands in :attr:`order`, then the generated ones, then the others."""
        names = [*self.order, *self.generated, *super().list_commands(ctx)]
        return list(dict.fromkeys(names))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``: a generated one built now (while the help is written,
        only its summary)."""
        command = self.generated.get(cmd_name)
        if command is not None and cmd_name not in self.commands:
            if self._listing:
                return command.summary_command()
            self.commands[cmd_name] = command.click_command()
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, listing generated commands by their summaries, then the help of
        :attr:`default` (the options given to the group go to it: where they are looked for)."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
        if self.default is None:
            return
        command = self.get_command(ctx, self.default)
        with command.make_context(self.default, [], parent=ctx, resilient_parsing=True) as sub:
            command.format_help(sub, formatter)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Options with no command name before them go to :attr:`default`."""
        if (
            self.default
            and args
            and args[0].startswith("-")
            and args[0] not in ctx.help_option_names
        ):
            args = [self.default, *args]
        return super().parse_args(ctx, args)


def command_group(
    *commands: ConfigCommand,
    default: str | None = None,
    moved: Mapping[str, str] | None = None,
    order: tuple[str, ...] = (),
) -> type[CommandGroup]:
    """A :class:`CommandGroup` class (what ``typer.Typer(cls=...)`` takes) holding
    ``commands``, running ``default`` when given options only, pointing from the ``moved``
    names to their new spellings and listing ``order`` first."""
    table = {
        "generated": {c.name: c for c in commands},
        "default": default,
        "moved": moved or {},
        "order": order,
    }
    return type("CommandGroup", (CommandGroup,), table)


def _field_options(model: type[Any], aliases: tuple[Alias, ...], prefix: str) -> list[_Option]:
    """One option per field of ``model`` (an alias of the same flag replaces it), then the
    aliases."""
    taken = {a.flag for a in aliases}
    options = [
        _Option(f"{prefix}__{name}", _flag(name), (name,), f)
        for name, f in config_fields(model).items()
        if _flag(name) not in taken
    ]
    for i, alias in enumerate(aliases):
        path = tuple(alias.path.split("."))
        options.append(
            _Option(f"alias__{i}", alias.flag, path, field_at(model, path), alias.convert)
        )
    return options


def _assignments(options: list[_Option], values: Mapping[str, object]) -> list[Assignment]:
    """What the options given set, in order; two options setting one field is an InputError."""
    out: list[Assignment] = []
    setters: dict[tuple[str, ...], str] = {}
    for option in options:
        if values[option.param] is None:
            continue
        if option.path in setters:
            raise InputError(f"give {setters[option.path]} or {option.flag}, not both")
        setters[option.path] = option.flag
        assignment = option.assignment(values[option.param])
        if assignment is not None:
            out.append(assignment)
    return out


def _texts(given: object) -> list[str]:
    """The ``--set`` texts given (typer gives a list, or None when there are none)."""
    return [str(text) for text in given] if isinstance(given, list) else []


def _sources(
    options: list[_Option], values: Mapping[str, object], texts: Sequence[str]
) -> dict[str, str]:
    """Where the command line set each top-level field it set: the option, or ``--set TEXT``
    (the last one that set it)."""
    found = {o.path[0]: o.flag for o in options if values[o.param] is not None}
    for text in texts:
        found[text.partition("=")[0].split(".")[0].strip()] = f"--set {text}"
    return found


def _parameter(
    option: _Option, panel: str, defaults: Mapping[str, object] | None = None
) -> inspect.Parameter:
    """The typer parameter of a generated option: its flag(s), value type and help (``defaults``:
    this command's own, over the model's)."""
    shape, flag = option.shape, option.flag
    decls = [f"{flag}/--no-{flag[2:]}"] if shape.kind == "flag" else [flag]
    hint = {"flag": bool, "list": list[str], "value": shape.type}.get(shape.kind, str)
    metavar = {"list": "A,B", "mapping": "YAML", "yaml": "YAML"}.get(shape.kind)
    info = _option(decls, _help_text(option, defaults or {}), panel, False, metavar)
    return inspect.Parameter(
        option.param,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[hint | None, info],
    )


def _panel(option: _Option, fields: str) -> str:
    """The help panel an option is listed in: the fields', or the aliases'."""
    return "Aliases" if option.param.startswith("alias__") else fields


def _help_text(option: _Option, defaults: Mapping[str, object]) -> str:
    """An option's help: the field's description, what the option takes, its default (as the
    option would take it)."""
    shape, dotted = option.shape, ".".join(option.path)
    text = option.help or option.field.description
    if option.param.startswith("alias__"):
        text = f"{text} Sets {dotted}." if text else f"Sets {dotted}."
    if shape.kind == "list":
        text += " Comma-separated or repeated."
    default = defaults.get(dotted, option.field.default)
    if option.field.required:
        return f"{text} Required."
    if shape.kind == "flag" and isinstance(default, bool):
        shown = option.flag if default else f"--no-{option.flag[2:]}"
    else:
        shown = default_text(shape, default)
    return redact(text if shown == NONE else f"{text} Default: {shown}.")


def _file_parameters(model: type[Any], positional: bool = False) -> list[inspect.Parameter]:
    """``--config`` (``positional``: the argument CONFIG), ``--set`` and ``--show-config``."""
    name = model.__name__
    config: Any = _option(["--config"], f"YAML file of {name} fields.", None, False, "FILE")
    if positional:
        config = typer.Argument(help=f"YAML file of {name} fields.", metavar="CONFIG")
    specs: list[tuple[str, Any, Any]] = [
        (_CONFIG, Path if positional else Path | None, config),
        (
            _SET,
            list[str] | None,
            _option(
                ["--set"],
                "Set a field: FIELD=VALUE, FIELD dotted for a nested one, VALUE in YAML "
                "(repeatable; after the options).",
                None,
                False,
                "FIELD=VALUE",
            ),
        ),
        (
            _SHOW,
            bool,
            _option(
                ["--show-config"],
                "Print the resolved configuration (YAML); run nothing.",
                None,
                False,
                None,
            ),
        ),
    ]
    return [
        inspect.Parameter(
            param,
            inspect.Parameter.KEYWORD_ONLY,
            default=False if hint is bool else (... if hint is Path else None),
            annotation=Annotated[hint, info],
        )
        for param, hint, info in specs
    ]


def _option(
    decls: list[str], help: str, panel: str | None, default: str | bool, metavar: str | None
) -> Any:
    """The one typer option declaration of every generated option."""
    return typer.Option(
        *decls, help=help, rich_help_panel=panel, show_default=default, metavar=metavar
    )


def _nothing() -> None:
    """A command's stand-in while a group's help lists it."""


def _flag(name: str) -> str:
    """A field's option: ``scene_ids`` -> ``--scene-ids``."""
    return "--" + name.replace("_", "-")


def _own_parameters(body: Callable[..., object]) -> list[inspect.Parameter]:
    """The body's own parameters (all but the configuration and ``execution``), their
    annotations evaluated (a name imported only for type checking reads as ``Any``)."""
    signature = inspect.signature(body, eval_str=True, locals=_TypeCheckingNames(body))
    return [
        p for i, p in enumerate(signature.parameters.values()) if i > 0 and p.name != "execution"
    ]


class _TypeCheckingNames(dict[str, object]):
    """The names a function's annotations use: its module's, then the builtins; a name that
    is neither (imported under ``TYPE_CHECKING``) is ``Any``."""

    def __init__(self, function: Callable[..., object]) -> None:
        super().__init__()
        self._globals = getattr(function, "__globals__", {})

    def __missing__(self, key: str) -> object:
        if key in self._globals:
            return self._globals[key]
        return getattr(builtins, key, Any)


def _dumped(config: Any) -> Any:
    """A configuration as YAML writes it."""
    from pydantic import BaseModel

    if isinstance(config, BaseModel):
        return config.model_dump(mode="json")
    return plain(dataclasses.asdict(config))
