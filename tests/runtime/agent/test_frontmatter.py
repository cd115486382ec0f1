"""Skill and prompt front matter read as real YAML: a corpus of OpenClaw's own skill front
matter (copied from the skills that ship with openclaw 2026.9.6, of which 37 of 51 were
dropped by the old subset parser), OpenClaw's recovery of an unquoted colon in
`description`, and the bounds that hold for hostile front matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.agent._frontmatter import (
    MAX_DEPTH,
    MAX_FRONT_MATTER_BYTES,
    MAX_NODES,
    FrontMatterError,
    parse_front_matter,
)
from runtime.agent._resources import discover_resources

# skills/gh-issues/SKILL.md: a multi-line flow mapping with trailing commas, a boolean key.
GH_ISSUES = """---
name: gh-issues
description: "Fetch GitHub issues, select candidates, spawn background fix agents, open PRs, and optionally process PR review comments."
user-invocable: true
metadata:
  {
    "openclaw":
      {
        "requires": { "bins": ["git", "gh"] },
        "primaryEnv": "GH_TOKEN",
        "install":
          [
            {
              "id": "brew",
              "kind": "brew",
              "formula": "gh",
              "bins": ["gh"],
              "label": "Install GitHub CLI (brew)",
            },
          ],
      },
  }
---

# gh-issues
"""

# skills/coding-agent/SKILL.md (install list shortened): anyBins and config requirements.
CODING_AGENT = """---
name: coding-agent
description: "Delegate coding work to Codex, Claude Code, or OpenCode as background workers; not simple edits or read-only code lookup."
metadata:
  {
    "openclaw":
      {
        "emoji": "🧩",
        "requires":
          {
            "anyBins": ["claude", "codex", "opencode"],
            "config": ["skills.entries.coding-agent.enabled"],
          },
        "install":
          [
            {
              "id": "node-claude",
              "kind": "node",
              "package": "@anthropic-ai/claude-code",
              "bins": ["claude"],
              "label": "Install Claude Code CLI (npm)",
            },
          ],
      },
  }
---
Body.
"""

# skills/apple-notes/SKILL.md: a URL as a plain scalar, an os list, an emoji.
APPLE_NOTES = """---
name: apple-notes
description: "Create, view, edit, delete, search, move, or export Apple Notes via the memo CLI on macOS."
homepage: https://github.com/antoniorodr/memo
metadata:
  {
    "openclaw":
      {
        "emoji": "📝",
        "os": ["darwin"],
        "requires": { "bins": ["memo"] },
        "install":
          [
            {
              "id": "brew",
              "kind": "brew",
              "formula": "antoniorodr/memo/memo",
              "bins": ["memo"],
              "label": "Install memo via Homebrew",
            },
          ],
      },
  }
---
"""

# skills/taskflow/SKILL.md: the one-line flow form.
TASKFLOW = """---
name: taskflow
description: "Run resumable approval workflows and coordinated subagent recipes with TaskFlow, Swarm, and optional Workboard claims."
metadata: { "openclaw": { "emoji": "🪝" } }
---
"""


def test_openclaw_skill_front_matter_parses_as_yaml() -> None:
    meta, body = parse_front_matter(GH_ISSUES)
    assert meta["name"] == "gh-issues" and meta["user-invocable"] == "true"
    assert body == "# gh-issues\n"
    openclaw = meta["metadata"]
    assert isinstance(openclaw, dict)
    section = openclaw["openclaw"]
    assert isinstance(section, dict)
    assert section["requires"] == {"bins": ["git", "gh"]}
    assert section["primaryEnv"] == "GH_TOKEN"
    assert section["install"] == [
        {
            "id": "brew",
            "kind": "brew",
            "formula": "gh",
            "bins": ["gh"],
            "label": "Install GitHub CLI (brew)",
        }
    ]
    taskflow, _ = parse_front_matter(TASKFLOW)
    assert taskflow["metadata"] == {"openclaw": {"emoji": "🪝"}}
    notes, _ = parse_front_matter(APPLE_NOTES)
    assert notes["homepage"] == "https://github.com/antoniorodr/memo"


def _skill_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        folder = root / "skills" / name
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(text)
    return root


def test_every_skill_of_the_corpus_loads_with_its_requirements(tmp_path: Path) -> None:
    root = _skill_dir(
        tmp_path,
        {
            "gh-issues": GH_ISSUES,
            "coding-agent": CODING_AGENT,
            "apple-notes": APPLE_NOTES,
            "taskflow": TASKFLOW,
        },
    )
    found = discover_resources(root)
    assert found.problems == ()
    by_name = {s.name: s for s in found.skills}
    assert set(by_name) == {"gh-issues", "coding-agent", "apple-notes", "taskflow"}
    assert by_name["gh-issues"].requirements.bins == ("git", "gh")
    assert by_name["apple-notes"].requirements.bins == ("memo",)
    assert by_name["coding-agent"].description.startswith("Delegate coding work")
    assert by_name["taskflow"].requirements.bins == ()


def test_metadata_written_as_a_json5_string_is_read_as_openclaw_reads_it(tmp_path: Path) -> None:
    text = (
        "---\nname: s\ndescription: d\n"
        'metadata: \'{openclaw: {requires: {bins: ["jq"], env: ["API_KEY"]}},}\'\n---\n'
    )
    [skill] = discover_resources(_skill_dir(tmp_path, {"s": text})).skills
    assert skill.requirements.bins == ("jq",) and skill.requirements.env == ("API_KEY",)


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (
            "enabled: true\nn: 3\nx: 1.5\nnothing:\nwhen: 2026-09-06",
            {"enabled": "true", "n": "3", "x": "1.5", "nothing": "", "when": "2026-09-06"},
        ),
        ("text: |\n  one\n  two\n", {"text": "one\ntwo"}),
        ("text: >\n  one\n  two\n", {"text": "one two"}),
        ("base: &b {a: 1}\nderived: *b", {"base": {"a": "1"}, "derived": {"a": "1"}}),
        ("list:\n  - key: value\n  - plain", {"list": [{"key": "value"}, "plain"]}),
        ("'quoted key': '  padded  '", {"quoted key": "padded"}),
    ],
)
def test_yaml_values_become_strings_lists_and_mappings(block: str, expected: object) -> None:
    assert parse_front_matter(f"---\n{block}\n---\nbody")[0] == expected


def test_an_unquoted_colon_in_the_description_is_read_as_text() -> None:
    """OpenClaw's recovery: `description: Use when: ...` is not YAML, but it is what people
    write."""
    meta, body = parse_front_matter(
        "---\nname: s\ndescription: Use when: the user asks for a diagram\n---\nbody\n"
    )
    assert meta == {"name": "s", "description": "Use when: the user asks for a diagram"}
    assert body == "body\n"


def test_crlf_a_bom_and_a_dots_terminator_are_accepted() -> None:
    assert parse_front_matter("\ufeff---\r\nname: a\r\n...\r\nbody") == ({"name": "a"}, "body")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nname: a\n", "not closed"),
        ("---\njust words\n---\n", "mapping, not plain text"),
        ("---\n- a\n- b\n---\n", "mapping, not a list"),
        ("---\nkey: 'unterminated\n---\n", "front matter line"),
        ("---\n\tname: tab\n---\n", "front matter line"),
        ("---\nx: {not json\n---\n", "front matter line"),
        ("---\nx: !!python/object:os.system {}\n---\n", "front matter line"),
    ],
)
def test_bad_front_matter_is_an_error_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(FrontMatterError, match=message):
        parse_front_matter(text)


def test_hostile_front_matter_is_bounded() -> None:
    laughs = ["a: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        laughs.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(FrontMatterError, match=f"more than {MAX_NODES:,} values"):
        parse_front_matter("---\n" + "\n".join(laughs).replace("a: &a0", "a0: &a0") + "\n---\n")
    deep = "x: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
    with pytest.raises(FrontMatterError, match="nested"):
        parse_front_matter(f"---\n{deep}\n---\n")
    big = "x: " + "y" * (MAX_FRONT_MATTER_BYTES + 1)
    with pytest.raises(FrontMatterError, match="bytes"):
        parse_front_matter(f"---\n{big}\n---\n")
