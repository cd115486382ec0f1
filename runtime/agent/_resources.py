"""Resource manifests: the extensions, skills, prompt templates and themes of a package.

A package root may hold a `package.json` whose `"openclaw"` object lists, per type, paths or
globs relative to the root:

    {"openclaw": {"extensions": ["ext/*.py"], "skills": ["skills"], "prompts": ["prompts/**/*.md"],
                  "themes": ["themes/dark.json"]}}

A type that is not listed falls back to its conventional folder (`extensions/`, `skills/`,
`prompts/`, `themes/`); without a `package.json` every type falls back. An entry naming a folder
is scanned the way the type's conventional folder is.

- Skills: `SKILL.md` in a folder (searched recursively; a folder with a `SKILL.md` is one skill),
  or any `*.md` directly in a listed skills folder. Front matter (`---` ... `---`, YAML read
  by `_frontmatter`) must give `name` and `description`; requirements come from
  `requirements`/`requires` (`bins`, `env`) or OpenClaw's `metadata: {"openclaw": {"requires":
  ...}}`.
- Prompt templates: `*.md` (not recursive in folders); optional front matter `description`,
  else the first line of the body. `expand_prompt_template` fills `$1`, `$@`, `$ARGUMENTS`, ...
- Themes: `*.json` validated against `Theme` (`name`, `colors` of `#rrggbb`).
- Extensions: `*.py` files and packages (folders with `__init__.py`); only listed, not loaded.

Nothing here raises for a bad resource: each problem (bad JSON in `package.json`, a glob that
matches nothing, a skill without name or description, an invalid theme, ...) becomes a
`ResourceProblem` and the rest still loads. `ResourceSet.snapshot_hash` hashes the content of
every file read, so callers can keep derived state (the skills prompt) while it is unchanged.

`discover_resources` does blocking file I/O: call it from a worker thread
(`trio.to_thread.run_sync`) inside the event loop.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Final, Literal

import attrs
import json5
import msgspec

from ._frontmatter import FrontMatterError as FrontMatterError
from ._frontmatter import FrontMatterValue as FrontMatterValue
from ._frontmatter import parse_front_matter as parse_front_matter

__all__ = [
    "RESOURCE_TYPES",
    "ExtensionResource",
    "FrontMatterError",
    "FrontMatterValue",
    "PromptTemplate",
    "ResourceProblem",
    "ResourceSet",
    "ResourceType",
    "Skill",
    "SkillRequirements",
    "Theme",
    "ThemeResource",
    "discover_resources",
    "expand_prompt_template",
    "parse_command_args",
    "parse_front_matter",
    "skills_prompt",
]

ResourceType = Literal["extensions", "skills", "prompts", "themes"]
RESOURCE_TYPES: Final[tuple[ResourceType, ...]] = ("extensions", "skills", "prompts", "themes")
_SKIPPED_DIRS: Final = frozenset({"node_modules", "__pycache__"})
_GLOB_CHARS: Final = frozenset("*?[")


# --- records -----------------------------------------------------------------------------


@attrs.frozen
class ResourceProblem:
    """Something that could not be loaded; `path` is the file or manifest entry concerned."""

    path: Path
    message: str


@attrs.frozen
class SkillRequirements:
    """What a skill needs on the host: executables on PATH and environment variables."""

    bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()

    def unmet(
        self,
        environ: Mapping[str, str] | None = None,
        which: Callable[[str], str | None] = shutil.which,
    ) -> SkillRequirements:
        """The requirements not met here (empty when the skill can run)."""
        environ = os.environ if environ is None else environ
        return SkillRequirements(
            bins=tuple(b for b in self.bins if which(b) is None),
            env=tuple(e for e in self.env if not environ.get(e)),
        )

    def __bool__(self) -> bool:
        return bool(self.bins or self.env)


@attrs.frozen
class Skill:
    """A skill: `path` is its markdown file, `body` the text after the front matter."""

    name: str
    description: str
    path: Path
    body: str
    requirements: SkillRequirements = SkillRequirements()

    @property
    def base_dir(self) -> Path:
        """The folder relative paths in the skill resolve against."""
        return self.path.parent


@attrs.frozen
class PromptTemplate:
    """A prompt template named after its file (`review.md` → `review`)."""

    name: str
    description: str
    path: Path
    body: str

    def expand(self, args: Sequence[str]) -> str:
        return expand_prompt_template(self.body, args)


_Color = Annotated[str, msgspec.Meta(pattern="^#[0-9a-fA-F]{6}$")]


class Theme(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A theme file: a name and a map of color slots to `#rrggbb`."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    colors: dict[str, _Color]
    schema: str | None = msgspec.field(default=None, name="$schema")


_THEME_DECODER: Final = msgspec.json.Decoder(Theme)


@attrs.frozen
class ThemeResource:
    path: Path
    theme: Theme


@attrs.frozen
class ExtensionResource:
    """An extension to load: a module file, or a package folder when `is_package`."""

    path: Path
    is_package: bool = False


@attrs.frozen
class ResourceSet:
    """Everything discovered under `root`, in discovery order, with the problems met.

    Names are unique per type (the first one found wins; later ones are problems).
    `snapshot_hash` is a SHA-256 over the paths and bytes of every file read.
    """

    root: Path
    extensions: tuple[ExtensionResource, ...] = ()
    skills: tuple[Skill, ...] = ()
    prompts: tuple[PromptTemplate, ...] = ()
    themes: tuple[ThemeResource, ...] = ()
    problems: tuple[ResourceProblem, ...] = ()
    snapshot_hash: str = ""

    def skill(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def prompt(self, name: str) -> PromptTemplate | None:
        return next((p for p in self.prompts if p.name == name), None)

    def theme(self, name: str) -> Theme | None:
        return next((t.theme for t in self.themes if t.theme.name == name), None)


# --- front matter: real YAML (`_frontmatter`) ----------------------------------------------


def _metadata(meta: Mapping[str, FrontMatterValue]) -> FrontMatterValue | None:
    """`metadata`, also when it is written as a JSON5 string (OpenClaw accepts both)."""
    value = meta.get("metadata")
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            parsed = json5.loads(value)
        except (ValueError, RecursionError):
            return None
        return _from_json(parsed)
    return value


def _from_json(value: object) -> FrontMatterValue:
    if isinstance(value, dict):
        return {str(k): _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


# --- prompt templates --------------------------------------------------------------------

_PLACEHOLDER_RE: Final = re.compile(
    r"\$\{(?P<dflt_key>\d+|@|ARGUMENTS):-(?P<dflt>[^}]*)\}"
    r"|\$\{@:(?P<start>\d+)(?::(?P<length>\d+))?\}"
    r"|\$(?P<simple>ARGUMENTS\b|@|\d+)"
)


def expand_prompt_template(template: str, args: Sequence[str]) -> str:
    """Fill a prompt template's placeholders in one pass (values are not re-expanded).

    `$1`, `$2`, ... positional (missing → ""); `$@` and `$ARGUMENTS` all arguments joined by a
    space; `${N:-default}` / `${@:-default}` with a default when empty; `${@:N}` and `${@:N:L}`
    the arguments from the N-th (1-based), at most L of them.
    """
    everything = " ".join(args)

    def positional(number: str) -> str:
        index = int(number) - 1
        return args[index] if 0 <= index < len(args) else ""

    def replace(match: re.Match[str]) -> str:
        if match["dflt_key"] is not None:
            key = match["dflt_key"]
            value = everything if key in ("@", "ARGUMENTS") else positional(key)
            return value or match["dflt"]
        if match["start"] is not None:
            start = max(0, int(match["start"]) - 1)
            if match["length"] is not None:
                return " ".join(args[start : start + int(match["length"])])
            return " ".join(args[start:])
        simple = match["simple"]
        if simple in ("@", "ARGUMENTS"):
            return everything
        return positional(simple)

    return _PLACEHOLDER_RE.sub(replace, template)


def parse_command_args(text: str) -> list[str]:
    """Split a command's argument string on whitespace, honouring '...' and "..." quotes."""
    args: list[str] = []
    current: list[str] = []
    quote: str | None = None
    has_token = False
    for char in text:
        if quote is not None:
            if char == quote:
                quote = None
            else:
                current.append(char)
        elif char in "'\"":
            quote = char
            has_token = True
        elif char.isspace():
            if has_token:
                args.append("".join(current))
                current, has_token = [], False
        else:
            current.append(char)
            has_token = True
    if has_token:
        args.append("".join(current))
    return args


# --- skills prompt -----------------------------------------------------------------------


def _xml(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def skills_prompt(skills: Sequence[Skill]) -> str:
    """The system-prompt section listing skills (the pi-coding-agent / OpenClaw format).

    Returns "" when there are no skills.
    """
    if not skills:
        return ""
    lines = [
        "The following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory"
        " (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
    ]
    for skill in skills:
        lines += [
            "  <skill>",
            f"    <name>{_xml(skill.name)}</name>",
            f"    <description>{_xml(skill.description)}</description>",
            f"    <location>{_xml(str(skill.path))}</location>",
            "  </skill>",
        ]
    lines.append("</available_skills>")
    return "\n".join(lines)


# --- discovery ---------------------------------------------------------------------------


@attrs.define
class _Discovery:
    root: Path
    problems: list[ResourceProblem] = attrs.Factory(list)
    hashed: dict[str, bytes] = attrs.Factory(dict)

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(ResourceProblem(path, message))

    def read_bytes(self, path: Path) -> bytes | None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            self.problem(path, f"cannot read: {exc.strerror or exc}")
            return None
        self.hashed[self._key(path)] = data
        return data

    def read_text(self, path: Path) -> str | None:
        data = self.read_bytes(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8").removeprefix("\ufeff")
        except UnicodeDecodeError:
            self.problem(path, "not valid UTF-8")
            return None

    def _key(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def inside_root(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except OSError:
            return False

    def snapshot_hash(self) -> str:
        digest = hashlib.sha256()
        for key in sorted(self.hashed):
            data = self.hashed[key]
            digest.update(key.encode())
            digest.update(b"\0")
            digest.update(len(data).to_bytes(8, "big"))
            digest.update(data)
        return digest.hexdigest()


def _read_manifest(d: _Discovery) -> dict[ResourceType, list[str]]:
    """The per-type entry lists of `package.json` (types missing from it are absent)."""
    path = d.root / "package.json"
    if not path.is_file():
        return {}
    data = d.read_bytes(path)
    if data is None:
        return {}
    try:
        document = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        d.problem(path, f"invalid JSON: {exc}")
        return {}
    if not isinstance(document, dict):
        d.problem(path, "package.json must be a JSON object")
        return {}
    section = document.get("openclaw")
    if section is None:
        return {}
    if not isinstance(section, dict):
        d.problem(path, '"openclaw" must be an object')
        return {}
    manifest: dict[ResourceType, list[str]] = {}
    for kind in RESOURCE_TYPES:
        if kind not in section:
            continue
        entries = section[kind]
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            d.problem(path, f'"openclaw.{kind}" must be a list of paths or globs')
            continue
        manifest[kind] = entries
    return manifest


def _visible_name(name: str) -> bool:
    return not name.startswith(".") and name not in _SKIPPED_DIRS


def _visible(path: Path) -> bool:
    return _visible_name(path.name)


def _visible_below(root: Path, path: Path) -> bool:
    """No part of `path` below `root` is hidden (`.git`, `node_modules`, ...)."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return False
    return all(_visible_name(part) for part in parts)


def _resolve_entries(d: _Discovery, kind: ResourceType, entries: list[str]) -> list[Path]:
    """Expand manifest entries to existing paths inside the root, in listed order."""
    found: list[Path] = []
    for entry in entries:
        where = d.root / entry
        relative = Path(entry)
        if not entry.strip() or relative.is_absolute() or ".." in relative.parts:
            d.problem(where, f"{kind} entry {entry!r} must be a path inside the package")
            continue
        if _GLOB_CHARS.intersection(entry):
            try:
                matches = sorted(p for p in d.root.glob(entry) if d.inside_root(p))
            except ValueError as exc:
                d.problem(where, f"{kind} glob {entry!r} is invalid: {exc}")
                continue
            matches = [p for p in matches if _visible_below(d.root, p)]
            if not matches:
                d.problem(where, f"{kind} glob {entry!r} matched nothing")
            found.extend(matches)
        elif not where.exists():
            d.problem(where, f"{kind} entry {entry!r} does not exist")
        elif not d.inside_root(where):
            d.problem(where, f"{kind} entry {entry!r} points outside the package")
        else:
            found.append(where)
    return found


def _walk_skill_files(folder: Path, *, top: bool) -> Iterator[Path]:
    marker = folder / "SKILL.md"
    if marker.is_file():
        yield marker
        return
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return
    for child in children:
        if not _visible(child):
            continue
        if child.is_dir():
            yield from _walk_skill_files(child, top=False)
        elif top and child.suffix == ".md" and child.is_file():
            yield child


def _files_in(folder: Path, suffix: str) -> list[Path]:
    try:
        return sorted(
            p for p in folder.iterdir() if _visible(p) and p.suffix == suffix and p.is_file()
        )
    except OSError:
        return []


def _as_strings(value: FrontMatterValue | None) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list):
        return tuple(v.strip() for v in value if isinstance(v, str) and v.strip())
    return ()


def _requirements(meta: Mapping[str, FrontMatterValue]) -> SkillRequirements:
    bins: list[str] = []
    env: list[str] = []
    sources: list[FrontMatterValue | None] = [meta.get("requirements"), meta.get("requires")]
    metadata = _metadata(meta)
    if isinstance(metadata, dict):
        for owner in ("openclaw", "clawdbot", "clawlane"):
            section = metadata.get(owner)
            if isinstance(section, dict):
                sources.append(section.get("requires"))
    for source in sources:
        if isinstance(source, dict):
            bins += _as_strings(source.get("bins"))
            env += _as_strings(source.get("env"))
    return SkillRequirements(bins=tuple(dict.fromkeys(bins)), env=tuple(dict.fromkeys(env)))


def _load_skill(d: _Discovery, path: Path) -> Skill | None:
    text = d.read_text(path)
    if text is None:
        return None
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        d.problem(path, f"invalid front matter: {exc}")
        return None
    name = meta.get("name")
    description = meta.get("description")
    missing = [
        key
        for key, value in (("name", name), ("description", description))
        if not isinstance(value, str) or not value.strip()
    ]
    if missing:
        d.problem(path, f"skill front matter lacks {' and '.join(missing)}")
        return None
    assert isinstance(name, str) and isinstance(description, str)
    return Skill(
        name=name.strip(),
        description=description.strip(),
        path=path,
        body=body,
        requirements=_requirements(meta),
    )


def _load_prompt(d: _Discovery, path: Path) -> PromptTemplate | None:
    text = d.read_text(path)
    if text is None:
        return None
    try:
        meta, body = parse_front_matter(text)
    except FrontMatterError as exc:
        d.problem(path, f"invalid front matter: {exc}")
        return None
    description = meta.get("description")
    if not isinstance(description, str) or not description.strip():
        first = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = first if len(first) <= 60 else first[:60] + "..."
    return PromptTemplate(name=path.stem, description=description.strip(), path=path, body=body)


def _load_theme(d: _Discovery, path: Path) -> ThemeResource | None:
    data = d.read_bytes(path)
    if data is None:
        return None
    try:
        theme = _THEME_DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        d.problem(path, f"invalid theme: {exc}")
        return None
    return ThemeResource(path=path, theme=theme)


def _discover_skills(d: _Discovery, roots: list[Path]) -> list[Skill]:
    files: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            files.update(dict.fromkeys(_walk_skill_files(root, top=True)))
        elif root.suffix == ".md":
            files[root] = None
        else:
            d.problem(root, "a skill must be a markdown file or a folder")
    skills: list[Skill] = []
    seen: dict[str, Path] = {}
    for path in files:
        skill = _load_skill(d, path)
        if skill is None:
            continue
        if skill.name in seen:
            d.problem(path, f"duplicate skill name {skill.name!r} (kept {seen[skill.name]})")
            continue
        seen[skill.name] = path
        skills.append(skill)
    return skills


def _discover_prompts(d: _Discovery, roots: list[Path]) -> list[PromptTemplate]:
    files: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            files.update(dict.fromkeys(_files_in(root, ".md")))
        elif root.suffix == ".md":
            files[root] = None
        else:
            d.problem(root, "a prompt template must be a markdown file or a folder")
    prompts: list[PromptTemplate] = []
    seen: dict[str, Path] = {}
    for path in files:
        prompt = _load_prompt(d, path)
        if prompt is None:
            continue
        if prompt.name in seen:
            d.problem(path, f"duplicate prompt name {prompt.name!r} (kept {seen[prompt.name]})")
            continue
        seen[prompt.name] = path
        prompts.append(prompt)
    return prompts


def _discover_themes(d: _Discovery, roots: list[Path]) -> list[ThemeResource]:
    files: dict[Path, None] = {}
    for root in roots:
        if root.is_dir():
            files.update(dict.fromkeys(_files_in(root, ".json")))
        elif root.suffix == ".json":
            files[root] = None
        else:
            d.problem(root, "a theme must be a .json file or a folder")
    themes: list[ThemeResource] = []
    seen: dict[str, Path] = {}
    for path in files:
        resource = _load_theme(d, path)
        if resource is None:
            continue
        name = resource.theme.name
        if name in seen:
            d.problem(path, f"duplicate theme name {name!r} (kept {seen[name]})")
            continue
        seen[name] = path
        themes.append(resource)
    return themes


def _hash_package(d: _Discovery, package: Path) -> None:
    for path in sorted(package.rglob("*.py")):
        if _visible_below(package, path):
            d.read_bytes(path)


def _discover_extensions(d: _Discovery, roots: list[Path]) -> list[ExtensionResource]:
    found: dict[Path, bool] = {}
    for root in roots:
        if root.is_dir():
            if (root / "__init__.py").is_file():
                found[root] = True
                continue
            for child in sorted(root.iterdir()):
                if not _visible(child):
                    continue
                if child.is_dir() and (child / "__init__.py").is_file():
                    found[child] = True
                elif child.is_file() and child.suffix == ".py":
                    found[child] = False
        elif root.suffix == ".py":
            found[root] = False
        else:
            d.problem(root, "an extension must be a .py file or a package folder")
    for path, is_package in found.items():
        if is_package:
            _hash_package(d, path)
        else:
            d.read_bytes(path)
    return [ExtensionResource(path=p, is_package=pkg) for p, pkg in found.items()]


def discover_resources(package_root: Path) -> ResourceSet:
    """Discover the resources of the package at `package_root` (blocking file I/O).

    Never raises for bad resources: problems are collected in `ResourceSet.problems`. Paths in
    the result are absolute (under the resolved root).
    """
    root = package_root.resolve()
    d = _Discovery(root=root)
    if not root.is_dir():
        d.problem(root, "package root is not a folder")
        return ResourceSet(root=root, problems=tuple(d.problems), snapshot_hash=d.snapshot_hash())
    manifest = _read_manifest(d)

    def roots(kind: ResourceType) -> list[Path]:
        if kind in manifest:
            return _resolve_entries(d, kind, manifest[kind])
        conventional = root / kind
        return [conventional] if conventional.is_dir() else []

    extensions = _discover_extensions(d, roots("extensions"))
    skills = _discover_skills(d, roots("skills"))
    prompts = _discover_prompts(d, roots("prompts"))
    themes = _discover_themes(d, roots("themes"))
    return ResourceSet(
        root=root,
        extensions=tuple(extensions),
        skills=tuple(skills),
        prompts=tuple(prompts),
        themes=tuple(themes),
        problems=tuple(d.problems),
        snapshot_hash=d.snapshot_hash(),
    )
