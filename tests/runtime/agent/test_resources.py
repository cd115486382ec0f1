"""Resource manifests: package.json entries and globs, fallback folders, problems, hashing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from runtime.agent._resources import (
    ExtensionResource,
    FrontMatterError,
    ResourceSet,
    Skill,
    SkillRequirements,
    discover_resources,
    expand_prompt_template,
    parse_command_args,
    parse_front_matter,
    skills_prompt,
)

FIXTURE = Path(__file__).parent / "resources_fixture"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A writable copy of the fixture package."""
    root = tmp_path / "pkg"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _write_manifest(root: Path, openclaw: object) -> None:
    (root / "package.json").write_text(json.dumps({"name": "pkg", "openclaw": openclaw}))


def _rel(resources: ResourceSet, paths: list[Path]) -> list[str]:
    return [p.relative_to(resources.root).as_posix() for p in paths]


def _problems(resources: ResourceSet) -> list[tuple[str, str]]:
    return [(p.path.relative_to(resources.root).as_posix(), p.message) for p in resources.problems]


# --- the fixture package -----------------------------------------------------------------


def test_fixture_manifest_with_globs_and_a_fallback_type() -> None:
    resources = discover_resources(FIXTURE)
    assert resources.root == FIXTURE.resolve()
    # extensions: a glob and a package folder; the conventional extensions/ is not used.
    assert resources.extensions == (
        ExtensionResource(FIXTURE.resolve() / "ext/clawfixture_hello_ext.py"),
        ExtensionResource(FIXTURE.resolve() / "ext/clawfixture_pkg_ext", is_package=True),
    )
    # skills: a folder (recursive SKILL.md, top-level *.md) and a ** glob.
    assert [s.name for s in resources.skills] == ["github", "weather", "notes", "pdf"]
    assert _rel(resources, [s.path for s in resources.skills]) == [
        "skills/github/SKILL.md",
        "skills/nested/deep/weather/SKILL.md",
        "skills/notes.md",
        "more/x/pdf/SKILL.md",
    ]
    # prompts: a ** glob reaching a subfolder.
    assert [(p.name, p.description) for p in resources.prompts] == [
        ("review", "Review a file"),
        ("fix", "Fix the failing test in $1 and explain the cause."),
    ]
    # themes are not listed: the conventional themes/ folder is used.
    assert [t.theme.name for t in resources.themes] == ["dark"]
    assert resources.theme("dark") is not None
    assert resources.themes[0].theme.colors["text"] == "#C5C8C6"
    assert _problems(resources) == [
        ("skills/broken/SKILL.md", "skill front matter lacks description"),
        (
            "themes/bad.json",
            "invalid theme: Expected `str` matching regex '^#[0-9a-fA-F]{6}$' - at `$.colors[...]`",
        ),
    ]


def test_skill_fields_and_requirements() -> None:
    resources = discover_resources(FIXTURE)
    github = resources.skill("github")
    assert github is not None
    assert github.description == (
        "Work with GitHub issues and pull requests through the gh command line."
    )
    assert github.body.startswith("# GitHub\n")
    assert github.base_dir == FIXTURE.resolve() / "skills/github"
    assert github.requirements == SkillRequirements(bins=("gh", "git", "jq"), env=("GITHUB_TOKEN",))
    weather = resources.skill("weather")
    assert weather is not None and weather.requirements.bins == ("curl",)
    notes = resources.skill("notes")
    assert notes is not None and notes.description == "Keep short notes: one file per topic"
    assert not notes.requirements
    assert resources.skill("broken") is None


def test_requirements_unmet() -> None:
    requirements = SkillRequirements(bins=("gh", "jq"), env=("GITHUB_TOKEN", "HOME"))
    unmet = requirements.unmet(
        environ={"HOME": "/root", "GITHUB_TOKEN": ""},
        which=lambda name: "/usr/bin/gh" if name == "gh" else None,
    )
    assert unmet == SkillRequirements(bins=("jq",), env=("GITHUB_TOKEN",))
    assert not SkillRequirements().unmet(environ={})


def test_prompt_template_from_the_fixture_expands() -> None:
    review = discover_resources(FIXTURE).prompt("review")
    assert review is not None
    assert review.expand(["app.py", "errors", "be", "brief"]) == (
        "Review app.py focusing on errors. Notes: be brief\n"
    )


# --- manifests and fallbacks -------------------------------------------------------------


def test_no_package_json_falls_back_to_every_conventional_folder(package: Path) -> None:
    (package / "package.json").unlink()
    resources = discover_resources(package)
    assert _rel(resources, [e.path for e in resources.extensions]) == [
        "extensions/clawfixture_ignored_ext.py"
    ]
    assert [s.name for s in resources.skills] == ["github", "weather", "notes"]  # not more/
    assert [p.name for p in resources.prompts] == ["review"]  # prompts/ is not recursive
    assert [t.theme.name for t in resources.themes] == ["dark"]


def test_broken_package_json_is_a_problem_and_everything_falls_back(package: Path) -> None:
    (package / "package.json").write_text('{"openclaw": {"skills": [')
    resources = discover_resources(package)
    problems = _problems(resources)
    assert problems[0][0] == "package.json"
    assert problems[0][1].startswith("invalid JSON")
    assert [s.name for s in resources.skills] == ["github", "weather", "notes"]
    assert [e.path.name for e in resources.extensions] == ["clawfixture_ignored_ext.py"]
    assert [t.theme.name for t in resources.themes] == ["dark"]


def test_a_glob_matching_nothing_is_a_problem_and_the_rest_loads(package: Path) -> None:
    _write_manifest(package, {"skills": ["nope/**/SKILL.md", "more/**/SKILL.md"]})
    resources = discover_resources(package)
    assert [s.name for s in resources.skills] == ["pdf"]
    assert ("nope/**/SKILL.md", "skills glob 'nope/**/SKILL.md' matched nothing") in _problems(
        resources
    )
    # The other types fall back.
    assert [p.name for p in resources.prompts] == ["review"]
    assert [e.path.name for e in resources.extensions] == ["clawfixture_ignored_ext.py"]


def test_missing_and_escaping_entries_are_problems(package: Path) -> None:
    (package.parent / "outside.md").write_text("---\nname: x\ndescription: y\n---\n")
    _write_manifest(
        package,
        {
            "prompts": ["prompts/review.md", "missing.md", "../outside.md", "/etc/passwd"],
            "themes": "themes/dark.json",
            "extensions": [],
        },
    )
    resources = discover_resources(package)
    assert [p.name for p in resources.prompts] == ["review"]
    messages = [p.message for p in resources.problems]
    assert "prompts entry 'missing.md' does not exist" in messages
    assert "prompts entry '../outside.md' must be a path inside the package" in messages
    assert "prompts entry '/etc/passwd' must be a path inside the package" in messages
    assert '"openclaw.themes" must be a list of paths or globs' in messages
    # A mistyped entry list falls back to the conventional folder; an empty list means none.
    assert [t.theme.name for t in resources.themes] == ["dark"]
    assert resources.extensions == ()


def test_symlink_escaping_the_package_is_refused(package: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "evil.md").write_text("---\nname: evil\ndescription: nope\n---\n")
    (package / "linked").symlink_to(outside)
    _write_manifest(package, {"skills": ["linked"], "prompts": ["linked/*.md"]})
    resources = discover_resources(package)
    assert resources.skills == ()
    assert resources.prompts == ()
    assert "skills entry 'linked' points outside the package" in [
        p.message for p in resources.problems
    ]


def test_broken_skill_and_invalid_themes_do_not_stop_the_rest(package: Path) -> None:
    (package / "skills/bad-yaml").mkdir()
    (package / "skills/bad-yaml/SKILL.md").write_text("---\nname: bad\n  description: x\n---\n")
    (package / "skills/unclosed").mkdir()
    (package / "skills/unclosed/SKILL.md").write_text("---\nname: unclosed\n")
    (package / "skills/zz-dupe").mkdir()
    (package / "skills/zz-dupe/SKILL.md").write_text("---\nname: github\ndescription: again\n---\n")
    (package / "themes/extra-field.json").write_text(
        '{"name": "x", "colors": {}, "fonts": {"body": "serif"}}'
    )
    (package / "themes/no-name.json").write_text('{"colors": {"a": "#000000"}}')
    (package / "themes/not-json.json").write_text("{")
    (package / "themes/zz-dark-again.json").write_text('{"name": "dark", "colors": {}}')
    resources = discover_resources(package)
    assert [s.name for s in resources.skills] == ["github", "weather", "notes", "pdf"]
    assert [t.theme.name for t in resources.themes] == ["dark"]
    problems = dict(_problems(resources))
    assert problems["skills/bad-yaml/SKILL.md"].startswith("invalid front matter")
    assert problems["skills/unclosed/SKILL.md"] == (
        "invalid front matter: front matter is not closed by a '---' line"
    )
    assert problems["skills/zz-dupe/SKILL.md"].startswith("duplicate skill name 'github'")
    assert "fonts" in problems["themes/extra-field.json"]
    assert "name" in problems["themes/no-name.json"]
    assert problems["themes/not-json.json"].startswith("invalid theme")
    assert problems["themes/zz-dark-again.json"].startswith("duplicate theme name 'dark'")


def test_hidden_folders_and_non_markdown_files_are_skipped(package: Path) -> None:
    (package / "skills/.hidden").mkdir()
    (package / "skills/.hidden/SKILL.md").write_text("---\nname: h\ndescription: h\n---\n")
    (package / "skills/node_modules/dep").mkdir(parents=True)
    (package / "skills/node_modules/dep/SKILL.md").write_text("---\nname: d\ndescription: d\n---\n")
    (package / "skills/readme.txt").write_text("not a skill")
    (package / "prompts/.draft.md").write_text("draft")
    resources = discover_resources(package)
    assert [s.name for s in resources.skills] == ["github", "weather", "notes", "pdf"]
    assert [p.name for p in resources.prompts] == ["review", "fix"]


def test_a_missing_root_is_a_problem(tmp_path: Path) -> None:
    resources = discover_resources(tmp_path / "absent")
    assert [p.message for p in resources.problems] == ["package root is not a folder"]


# --- snapshot hash -----------------------------------------------------------------------


def test_snapshot_hash_follows_content(package: Path) -> None:
    first = discover_resources(package).snapshot_hash
    assert discover_resources(package).snapshot_hash == first
    (package / "README.md").write_text("unrelated")
    assert discover_resources(package).snapshot_hash == first
    skill = package / "skills/notes.md"
    skill.write_text(skill.read_text().replace("Write notes", "Keep notes"))
    second = discover_resources(package).snapshot_hash
    assert second != first
    (package / "ext/clawfixture_pkg_ext/helpers.py").write_text("X = 1\n")
    assert discover_resources(package).snapshot_hash != second


def test_snapshot_hash_of_a_copy_is_the_same(package: Path, tmp_path: Path) -> None:
    other = tmp_path / "copy"
    shutil.copytree(package, other)
    assert discover_resources(other).snapshot_hash == discover_resources(package).snapshot_hash


# --- front matter ------------------------------------------------------------------------


def test_front_matter_subset() -> None:
    text = (
        "---\n"
        "name: demo  # a comment\n"
        "description: |\n"
        "  Line one\n"
        "  Line two\n"
        "quoted: 'it''s'\n"
        'double: "a: \\"b\\""\n'
        "inline: [a, 'b c', \"d\"]\n"
        "empty:\n"
        "nested:\n"
        "  deeper:\n"
        "    key: value\n"
        "  list:\n"
        "  - x\n"
        "  - y\n"
        'json: {"openclaw": {"always": true, "n": 3}}\n'
        "'quoted key': v\n"
        "---\n"
        "\n"
        "Body here\n"
    )
    meta, body = parse_front_matter(text)
    assert meta == {
        "name": "demo",
        "description": "Line one\nLine two",
        "quoted": "it's",
        "double": 'a: "b"',
        "inline": ["a", "b c", "d"],
        "empty": "",
        "nested": {"deeper": {"key": "value"}, "list": ["x", "y"]},
        "json": {"openclaw": {"always": "true", "n": "3"}},
        "quoted key": "v",
    }
    assert body == "Body here\n"


def test_without_front_matter_the_whole_text_is_the_body() -> None:
    assert parse_front_matter("# Title\n---\n") == ({}, "# Title\n---\n")
    assert parse_front_matter("---\n---\nbody") == ({}, "body")


@pytest.mark.parametrize(
    "block",
    [
        "name: a\n  bad: indent",
        "just some words",
        "\tname: tab",
        "- a\n- b",
        "key: 'unterminated",
        "x: {not json",
    ],
)
def test_malformed_front_matter_raises(block: str) -> None:
    with pytest.raises(FrontMatterError):
        parse_front_matter(f"---\n{block}\n---\nbody")


# --- prompt templates --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("Fix $1 in $2", "Fix bug in app.py"),
        ("All: $@ | $ARGUMENTS", "All: bug app.py now | bug app.py now"),
        ("Missing: [$4]", "Missing: []"),
        ("From two: ${@:2}; one of them: ${@:2:1}", "From two: app.py now; one of them: app.py"),
        ("Default: ${4:-none}, set: ${1:-none}", "Default: none, set: bug"),
        ("$ARGUMENTSX stays, $$1 is $ then bug", "$ARGUMENTSX stays, $bug is $ then bug"),
    ],
)
def test_expand_prompt_template(template: str, expected: str) -> None:
    assert expand_prompt_template(template, ["bug", "app.py", "now"]) == expected


def test_expansion_does_not_reexpand_argument_values() -> None:
    assert expand_prompt_template("$1 and $2", ["$2", "x"]) == "$2 and x"
    assert expand_prompt_template("[${@:-empty}]", []) == "[empty]"


def test_parse_command_args_honours_quotes() -> None:
    assert parse_command_args("""one "two three"  'four five' six''""") == [
        "one",
        "two three",
        "four five",
        "six",
    ]
    assert parse_command_args('  ""  ') == [""]
    assert parse_command_args("") == []


# --- skills prompt -----------------------------------------------------------------------


def test_skills_prompt_lists_name_description_location() -> None:
    skill = Skill(
        name="a&b",
        description="Use <tools> \"wisely\" & 'well'",
        path=Path("/skills/a/SKILL.md"),
        body="",
    )
    prompt = skills_prompt([skill])
    assert "<available_skills>\n  <skill>\n    <name>a&amp;b</name>\n" in prompt
    assert (
        "    <description>Use &lt;tools&gt; &quot;wisely&quot; &amp; &apos;well&apos;</description>\n"
        in prompt
    )
    assert "    <location>/skills/a/SKILL.md</location>\n  </skill>\n</available_skills>" in prompt
    assert prompt.startswith("The following skills provide specialized instructions")
    assert skills_prompt([]) == ""


def test_skills_prompt_of_the_fixture() -> None:
    prompt = skills_prompt(discover_resources(FIXTURE).skills)
    assert prompt.count("<skill>") == 4
    assert f"<location>{FIXTURE.resolve() / 'skills/github/SKILL.md'}</location>" in prompt
