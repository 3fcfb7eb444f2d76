"""Prompt templates as versioned data files, with a content hash recorded beside every answer.

docs/methods.md §3: "Prompts are data. Every template has an id and a content hash recorded
with each record." The templates live in ``prompts/*.yaml`` inside this package; each entry has
an ``id`` ending in ``.v<version>``, an integer ``version``, a ``kind`` and its ``text`` with
named ``str.format`` placeholders. The hash is computed from the content, never stored in the
file, so an edit to a published template cannot go unnoticed: it changes the hash every record
carries.
"""

from __future__ import annotations

import functools
import hashlib
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType
from typing import Final, Literal, cast, get_args

import yaml

from clearsight.validate import InputError

#: What a template is for: the question layouts of t2 and t3, the answer instruction that ends a
#: question, the text of an abstain option, and the verbalized-confidence instruction.
TemplateKind = Literal["identify", "verify", "instruction", "abstain", "verbalized"]
TEMPLATE_KINDS: Final[tuple[TemplateKind, ...]] = get_args(TemplateKind)

#: The placeholders each kind must use (exactly these, no others), so a typo in a data file fails
#: at load time rather than when the first question is rendered.
PLACEHOLDERS: Final[Mapping[TemplateKind, frozenset[str]]] = MappingProxyType(
    {
        "identify": frozenset({"options", "instruction"}),
        "verify": frozenset({"article", "category", "options", "instruction"}),
        "instruction": frozenset(),
        "abstain": frozenset(),
        "verbalized": frozenset(),
    }
)

#: The package folder that holds the template files.
PROMPTS_PACKAGE: Final[str] = "clearsight.tasks"
PROMPTS_FOLDER: Final[str] = "prompts"


def placeholders(text: str) -> frozenset[str]:
    """The named ``str.format`` fields in ``text``; positional or indexed fields are an error."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise InputError(f"template text is not a valid format string ({exc}): {text!r}") from exc
    names: set[str] = set()
    for _, name, _, _ in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise InputError(f"template field {{{name}}} must be a plain name in {text!r}")
        names.add(name)
    return frozenset(names)


def content_hash(id: str, version: int, kind: str, text: str, options: tuple[str, ...] = ()) -> str:
    """SHA-256 (hex) of the canonical JSON of a template's content.

    Canonical form: ``json.dumps`` of ``{"id", "version", "kind", "text", "options"}`` with sorted
    keys, no whitespace between tokens and UTF-8 without ASCII escaping. It does not depend on
    the YAML layout (comments, quoting, file name), only on what a prompt is built from.
    """
    payload = {"id": id, "version": version, "kind": kind, "text": text, "options": list(options)}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Template:
    """One prompt template; ``sha256`` is derived from the other fields on construction.

    ``options`` holds fixed answer texts where a template has them (verification's Yes/No, in
    letter order); it is empty where the options are drawn per item. Building a Template with
    any field changed (``dataclasses.replace``) gives a different ``sha256``.
    """

    id: str
    version: int
    kind: TemplateKind
    text: str
    options: tuple[str, ...] = ()
    sha256: str = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"template id must be a non-empty string, got {self.id!r}")
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise InputError(
                f"template {self.id!r}: version must be an int >= 1, not {self.version!r}"
            )
        if not self.id.endswith(f".v{self.version}"):
            raise InputError(
                f"template id {self.id!r} must end in '.v{self.version}' (its version)"
            )
        if self.kind not in TEMPLATE_KINDS:
            raise InputError(
                f"template {self.id!r}: kind must be one of {TEMPLATE_KINDS}, got {self.kind!r}"
            )
        if not isinstance(self.text, str) or not self.text.strip():
            raise InputError(f"template {self.id!r}: text must be a non-empty string")
        if not all(isinstance(o, str) and o for o in self.options):
            raise InputError(f"template {self.id!r}: options must be non-empty strings")
        found, wanted = placeholders(self.text), PLACEHOLDERS[self.kind]
        if found != wanted:
            raise InputError(
                f"template {self.id!r} ({self.kind}) must use the placeholders "
                f"{sorted(wanted)}, found {sorted(found)}"
            )
        if (self.kind == "verify") != bool(self.options):
            raise InputError(
                f"template {self.id!r}: a verify template needs its answer options and other "
                f"kinds have none (got options={self.options!r})"
            )
        digest = content_hash(self.id, self.version, self.kind, self.text, self.options)
        object.__setattr__(self, "sha256", digest)


def template_from_mapping(entry: object, source: str = "<mapping>") -> Template:
    """Build a Template from one YAML entry, naming ``source`` in any error."""
    if not isinstance(entry, Mapping):
        raise InputError(f"{source}: each template must be a mapping, got {type(entry).__name__}")
    allowed = {"id", "version", "kind", "text", "options"}
    extra = set(entry) - allowed
    missing = {"id", "version", "kind", "text"} - set(entry)
    if extra or missing:
        raise InputError(
            f"{source}: template {entry.get('id')!r} has unknown fields {sorted(map(str, extra))} "
            f"or lacks {sorted(missing)}"
        )
    options = entry.get("options", ())
    if not isinstance(options, list | tuple):
        raise InputError(f"{source}: template {entry['id']!r}: options must be a list")
    return Template(
        id=entry["id"],
        version=entry["version"],
        kind=cast(TemplateKind, entry["kind"]),
        text=entry["text"],
        options=tuple(options),
    )


def parse_templates(yaml_text: str, source: str = "<string>") -> list[Template]:
    """Parse one template file: a mapping whose ``templates`` key lists template entries."""
    try:
        doc = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML ({exc})") from exc
    if not isinstance(doc, Mapping) or not isinstance(doc.get("templates"), list):
        raise InputError(f"{source}: expected a mapping with a 'templates' list")
    return [template_from_mapping(e, source) for e in doc["templates"]]


@functools.cache
def load_templates() -> Mapping[str, Template]:
    """All templates shipped in ``clearsight/tasks/prompts/*.yaml``, by id (read once, cached).

    Files are read in name order; a duplicated id across or within files is an error.
    """
    folder = resources.files(PROMPTS_PACKAGE).joinpath(PROMPTS_FOLDER)
    found: dict[str, Template] = {}
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    for f in files:
        for template in parse_templates(f.read_text(encoding="utf-8"), f.name):
            if template.id in found:
                raise InputError(f"{f.name}: template id {template.id!r} is defined twice")
            found[template.id] = template
    return MappingProxyType(dict(sorted(found.items())))


def get_template(template_id: str, kind: TemplateKind | None = None) -> Template:
    """The shipped template ``template_id``; InputError lists the known ids if there is none.

    With ``kind``, also check the template is of that kind (a verify template passed where an
    identify one is needed is an error, not a silently odd prompt).
    """
    templates = load_templates()
    try:
        template = templates[template_id]
    except (KeyError, TypeError):
        raise InputError(
            f"unknown template id {template_id!r}; known ids: {', '.join(templates)}"
        ) from None
    if kind is not None and template.kind != kind:
        same = [t.id for t in templates.values() if t.kind == kind]
        raise InputError(
            f"template {template_id!r} is a {template.kind!r} template, a {kind!r} one is needed "
            f"({', '.join(same)})"
        )
    return template
