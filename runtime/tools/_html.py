"""HTML to readable markdown or plain text, for `web_fetch`.

A compact extractor on the standard library's `html.parser` (no dependency: the readable-content
libraries for Python either need lxml, a C extension, or carry far more than this needs). It
builds a small element tree, picks the page's main content (the first `<article>`, else
`<main>`, else `<body>`, else the whole document), drops what is never content (`script`,
`style`, `noscript`, `template`, `svg`, `iframe`, `nav`, `aside`, `footer`, `form` and the
like, and anything `hidden`), and renders the rest:

- markdown: `#` headings, paragraphs separated by a blank line, `[text](absolute url)` links,
  `**bold**` / `*italic*`, `-` and `1.` list items, `> ` quotes, fenced `pre` blocks, inline
  code in backticks, tables as `| a | b |` rows, images with alt text as `![alt](url)`;
- text: the same blocks without markup (link text only, headings as plain lines).

Whitespace inside running text collapses to single spaces; `pre` keeps its own. Pure and
synchronous; the cost is linear in the input.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import urljoin

from attrs import define, field, frozen

__all__ = ["ExtractedPage", "extract_readable", "markdown_to_text"]

ExtractMode = Literal["markdown", "text"]

_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
_SKIP = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "canvas",
        "nav",
        "aside",
        "footer",
        "form",
        "button",
        "select",
        "textarea",
        "dialog",
        "head",
    ]
)
_BLOCK = frozenset(
    [
        "address",
        "article",
        "body",
        "center",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "header",
        "hgroup",
        "html",
        "li",
        "main",
        "ol",
        "p",
        "section",
        "summary",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "ul",
    ]
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# A start tag that first closes the nearest open element of the first set (HTML's implied end
# tags), looking no further out than an element of the second set.
_TABLE = frozenset({"table", "tbody", "thead", "tfoot"})
_IMPLIED_END: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "p": (frozenset({"p"}), frozenset({"div", "section", "article", "main", "td", "li"})),
    "li": (frozenset({"li"}), frozenset({"ul", "ol"})),
    "dt": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "dd": (frozenset({"dt", "dd"}), frozenset({"dl"})),
    "tr": (frozenset({"tr"}), _TABLE),
    "td": (frozenset({"td", "th"}), _TABLE | {"tr"}),
    "th": (frozenset({"td", "th"}), _TABLE | {"tr"}),
    "option": (frozenset({"option"}), frozenset({"select"})),
}
_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")


@frozen
class ExtractedPage:
    """What `extract_readable` found: the page title (None when it has none) and the text."""

    title: str | None
    text: str


@define
class _Node:
    tag: str
    attrs: dict[str, str]
    children: list[_Node | str] = field(factory=list)


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#document", {})
        self.stack: list[_Node] = [self.root]
        self.title: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
            return
        implied = _IMPLIED_END.get(tag)
        if implied is not None:
            closes, barrier = implied
            for depth in range(len(self.stack) - 1, 0, -1):
                name = self.stack[depth].tag
                if name in closes:
                    del self.stack[depth:]
                    break
                if name in barrier:
                    break
        node = _Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(_Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return
        # A stray end tag closes nothing.

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        else:
            self.stack[-1].children.append(data)


def _find(node: _Node, tag: str) -> _Node | None:
    for child in node.children:
        if isinstance(child, _Node):
            if child.tag in _SKIP:
                continue
            if child.tag == tag:
                return child
            found = _find(child, tag)
            if found is not None:
                return found
    return None


def _hidden(node: _Node) -> bool:
    if "hidden" in node.attrs or node.attrs.get("aria-hidden") == "true":
        return True
    style = node.attrs.get("style", "").replace(" ", "").lower()
    return "display:none" in style or "visibility:hidden" in style


class _Renderer:
    """Renders a tree into blocks of lines; `markdown` chooses the markup."""

    def __init__(self, *, base_url: str, markdown: bool) -> None:
        self.base_url = base_url
        self.markdown = markdown
        self.out: list[str] = []
        self.line: list[str] = []

    # --- output ------------------------------------------------------------------------

    def inline(self, text: str) -> None:
        self.line.append(text)

    def flush(self, prefix: str = "") -> None:
        text = _SPACE.sub(" ", "".join(self.line)).strip()
        self.line = []
        if text:
            self.out.append(prefix + text)

    def block(self, text: str) -> None:
        self.flush()
        self.out.append(text)

    def gap(self) -> None:
        self.flush()
        if self.out and self.out[-1] != "":
            self.out.append("")

    def result(self) -> str:
        self.flush()
        return _BLANK_LINES.sub("\n\n", "\n".join(self.out)).strip()

    # --- walking -----------------------------------------------------------------------

    def text_of(self, node: _Node) -> str:
        sub = _Renderer(base_url=self.base_url, markdown=self.markdown)
        sub.children(node)
        return _SPACE.sub(" ", sub.result()).strip()

    def children(self, node: _Node) -> None:
        for child in node.children:
            if isinstance(child, str):
                self.inline(child)
            else:
                self.element(child)

    def element(self, node: _Node) -> None:
        tag = node.tag
        if tag in _SKIP or _hidden(node):
            return
        md = self.markdown
        if tag in _HEADINGS:
            text = self.text_of(node)
            if text:
                self.gap()
                self.block(f"{'#' * _HEADINGS[tag]} {text}" if md else text)
                self.gap()
        elif tag == "br":
            self.flush()
        elif tag == "hr":
            self.gap()
            if md:
                self.block("---")
                self.gap()
        elif tag == "a":
            text = self.text_of(node)
            href = node.attrs.get("href", "").strip()
            if md and text and href and not href.lower().startswith(("javascript:", "#")):
                self.inline(f"[{text}]({urljoin(self.base_url, href)})")
            else:
                self.inline(text)
        elif tag == "img":
            alt = _SPACE.sub(" ", node.attrs.get("alt", "")).strip()
            src = node.attrs.get("src", "").strip()
            if alt and md and src and not src.lower().startswith("data:"):
                self.inline(f"![{alt}]({urljoin(self.base_url, src)})")
            elif alt and not md:
                self.inline(alt)
        elif tag in ("strong", "b", "em", "i") and md:
            text = self.text_of(node)
            if text:
                mark = "**" if tag in ("strong", "b") else "*"
                self.inline(f"{mark}{text}{mark}")
        elif tag == "code":
            text = self.text_of(node)
            if text:
                self.inline(f"`{text}`" if md else text)
        elif tag == "pre":
            self.gap()
            raw = "".join(_raw_text(node)).strip("\n")
            self.block(f"```\n{raw}\n```" if md else raw)
            self.gap()
        elif tag in ("ul", "ol"):
            self.gap()
            number = 0
            for child in node.children:
                if isinstance(child, _Node) and child.tag == "li" and not _hidden(child):
                    number += 1
                    text = self.text_of(child)
                    if text:
                        self.block(f"{number}. {text}" if tag == "ol" else f"- {text}")
                elif isinstance(child, _Node):
                    self.element(child)
            self.gap()
        elif tag == "blockquote":
            self.gap()
            text = self.text_of(node)
            if text:
                self.block(f"> {text}" if md else text)
            self.gap()
        elif tag == "table":
            self.gap()
            self.table(node)
            self.gap()
        elif tag in ("td", "th"):
            self.children(node)
            self.inline(" ")
        elif tag in _BLOCK:
            self.gap()
            self.children(node)
            self.gap()
        else:
            self.children(node)

    def table(self, node: _Node) -> None:
        rows: list[list[str]] = []
        for row in _descendants(node, "tr"):
            cells = [
                self.text_of(cell).replace("|", "\\|")
                for cell in row.children
                if isinstance(cell, _Node) and cell.tag in ("td", "th")
            ]
            if any(cells):
                rows.append(cells)
        for index, cells in enumerate(rows):
            if self.markdown:
                self.block("| " + " | ".join(cells) + " |")
                if index == 0 and len(rows) > 1:
                    self.block("|" + " --- |" * len(cells))
            else:
                self.block("\t".join(cells))


def _descendants(node: _Node, tag: str) -> list[_Node]:
    found: list[_Node] = []
    for child in node.children:
        if isinstance(child, _Node):
            if child.tag == tag:
                found.append(child)
            elif child.tag != "table":  # rows of a nested table are its own
                found.extend(_descendants(child, tag))
    return found


def _raw_text(node: _Node) -> list[str]:
    parts: list[str] = []
    for child in node.children:
        if isinstance(child, str):
            parts.append(child)
        elif child.tag == "br":
            parts.append("\n")
        elif child.tag not in _SKIP:
            parts.extend(_raw_text(child))
    return parts


def extract_readable(html: str, *, base_url: str, mode: ExtractMode = "markdown") -> ExtractedPage:
    """The readable content of `html` as markdown or text, and its title.

    `base_url` (the page's final URL) makes relative links and image sources absolute. The
    title is the `<title>`, else the first `<h1>`. Never raises on malformed HTML: the parser
    is forgiving and unclosed elements end with the document.
    """
    builder = _TreeBuilder()
    builder.feed(html)
    builder.close()
    root = builder.root
    main = _find(root, "article") or _find(root, "main") or _find(root, "body") or root
    renderer = _Renderer(base_url=base_url, markdown=mode == "markdown")
    if main is root:
        renderer.children(root)
    else:
        renderer.element(main)
    title = _SPACE.sub(" ", "".join(builder.title)).strip()
    if not title:
        h1 = _find(root, "h1")
        title = renderer.text_of(h1) if h1 is not None else ""
    if title and mode == "text":
        title = markdown_to_text(title)
    return ExtractedPage(title=title or None, text=renderer.result())


_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_MD_HEADING = re.compile(r"^#{1,6}\s+", re.MULTILINE)
_MD_EMPHASIS = re.compile(r"(\*\*|__|\*|_)(\S(?:.*?\S)?)\1")
_MD_FENCE = re.compile(r"^```[^\n]*\n?", re.MULTILINE)
_MD_CODE = re.compile(r"`([^`\n]+)`")
_MD_QUOTE = re.compile(r"^>\s?", re.MULTILINE)


def markdown_to_text(markdown: str) -> str:
    """Markdown reduced to plain text: links and images to their text, no heading marks,
    emphasis, code fences or quote marks. List markers stay."""
    text = _MD_FENCE.sub("", markdown)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_HEADING.sub("", text)
    text = _MD_CODE.sub(r"\1", text)
    text = _MD_EMPHASIS.sub(r"\2", text)
    text = _MD_QUOTE.sub("", text)
    return _BLANK_LINES.sub("\n\n", text).strip()
