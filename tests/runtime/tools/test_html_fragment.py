"""runtime.tools._html_fragment against OpenClaw 2026.9.6's own htmlToMarkdown and
markdownToText under Node 24, on random markup built from pieces that exercise its scanner:
titles, links (quoted, unquoted, entity-laden, unclosed), headings, list items, block breaks,
script/style/noscript (with a closing tag or a comment inside), comments, stray `<`, tags cut
off, self-closing forms, upper case, entities (named, numeric, unknown, without `;`), and
whitespace. Also the markdown side on its own (fences, links, images, lists, headings)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from runtime.tools._html_fragment import html_to_markdown, markdown_to_text
from tests.runtime.tools._openclaw_node import imports, openclaw_exports, run_node

HTML_PIECES = [
    "<title>T &amp; t</title>",
    "<TITLE>Upper</TITLE>",
    "<title><a href='/x'>in title</a></title>",
    '<a href="https://a.example/p?q=1&amp;r=2">link</a>',
    "<a href=/bare>bare</a>",
    "<a href='unclosed>text</a>",
    "<a>no href</a>",
    '<a href="/only"></a>',
    "<a href=x><h2>in a</h2></a>",
    "<a href=y>text<p>block</a>",
    "<h1>One</h1>",
    "<h3 class=x>Three</h3>",
    "<H2>Up</H2>",
    "<h4/>",
    "<ul><li>a</li><li>b<li>c</ul>",
    "<ol><li><a href=z>in li</a></li></ol>",
    "<p>para</p>",
    "<div>div</div>",
    "<br>",
    "<br/>",
    "<hr>",
    "<script>var a = '</p>';</script>",
    "<script>if (a<b) {}</script>",
    "<script><!-- <script></script> --></script>",
    "<style>p { x: 1 }</style>",
    "<noscript>hidden</noscript>",
    "<!-- a comment -->",
    "<!-->",
    "<!--->",
    "<!-- x --!>",
    "a < b",
    "<",
    "< p>",
    "<p",
    "<img src=\"x\" alt='<script>'>",
    '<div data-x="a>b">q</div>',
    "<section><article>art</article></section>",
    "<table><tr><td>c1</td><td>c2</td></tr></table>",
    " text ",
    "\n\n\n",
    "\t \t",
    "\r\n",
    "&nbsp;&NBSP;",
    "&#x41;&#66;&#xD800;&#1114112;",
    "&bogus; &notit; &not; &AMP; &Amp; &lt",
    "caf\u00e9 \U0001f600",
    "<p>a  b\t\tc</p>",
    "<?xml version='1.0'?>",
    "<!DOCTYPE html>",
    "</li>",
    "</a>",
    "</h2>",
    "</title>",
    '<a href="x" / >self</a>',
    "<li/>",
]

MD_PIECES = [
    "# Heading\n",
    "###### six\n",
    "####### seven\n",
    "- item\n",
    "  * star\n",
    "+ plus\n",
    "12. numbered\n",
    "[link](http://x)",
    "![img](http://y)",
    "[a]](b)",
    "`code`",
    "```py\nfenced\n```",
    "```inline```",
    "```unclosed",
    "text  with   spaces \n",
    "\n\n\n\n",
    "\r\n",
    "tab\t\there",
]

SCRIPT = """
__IMPORTS__
const cases = __CASES__;
console.log(JSON.stringify(cases.map((c) => {
  if (c.kind === "md") return markdownToText(c.text);
  const rendered = htmlToMarkdown(c.text);
  const withTitle = rendered.title ? `${rendered.title}\\n${rendered.text}` : rendered.text;
  return { text: rendered.text, title: rendered.title ?? null, plain: markdownToText(withTitle) };
})));
"""


def _random(pieces: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(pieces, k=rng.randint(1, 14))) for _ in range(count)]


async def test_html_and_markdown_render_as_openclaws(tmp_path: Path) -> None:
    found = openclaw_exports(
        ("web-fetch-utils-*.mjs", "htmlToMarkdown"),
        ("web-fetch-utils-*.mjs", "markdownToText"),
    )
    cases: list[dict[str, Any]] = []
    ours: list[Any] = []
    for html in [*HTML_PIECES, *_random(HTML_PIECES, 500, 2026_9_6)]:
        cases.append({"kind": "html", "text": html})
        text, title = html_to_markdown(html)
        plain = markdown_to_text(f"{title}\n{text}" if title else text)
        ours.append({"text": text, "title": title, "plain": plain})
    for markdown in [*MD_PIECES, *_random(MD_PIECES, 200, 7)]:
        cases.append({"kind": "md", "text": markdown})
        ours.append(markdown_to_text(markdown))
    script = SCRIPT.replace("__IMPORTS__", imports(found)).replace("__CASES__", json.dumps(cases))
    theirs = await run_node(tmp_path / "fragment.mjs", script)
    assert len(theirs) == len(ours)
    for case, mine, expected in zip(cases, ours, theirs, strict=True):
        assert mine == expected, case
