"""A markdown cell as translatable pieces: cut it into Units (a heading, a list item, a paragraph, a
table row, a code fence), and put it back together with each Unit's translation.

Joining the pieces gives the cell back byte for byte, so a catalog entry is exactly one Unit and a
translated cell keeps the English layout (blank lines, list markers, a hint's <details> tags).
"""
import re
from collections import Counter
from dataclasses import dataclass

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6}\s+)(.*)$")
LIST_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")
CODE_SPAN = re.compile(r"`[^`]+`")
COMMENT = re.compile(r"\s*#.*$")                # a comment in a code fence (Python, shell)
HTML_TAG = re.compile(r"</?[a-z]+[^>]*>")
TAGS_ONLY = re.compile(r"^\s*(</?[a-z]+[^>]*>\s*)+$")  # a line of markup and no words (a hint's </details>)


@dataclass(frozen=True)
class Unit:
    """One translatable piece of a markdown cell, as written in the source."""
    kind: str   # "heading", "item", "paragraph", "row" or "code"
    text: str

    @property
    def msgid(self):
        """Prose is compared without its line breaks (rewrapping is no change); code and rows as written."""
        return self.text if self.kind in ("code", "row") else " ".join(self.text.split())


def _starts_block(line):
    return bool(FENCE.match(line) or HEADING.match(line) or LIST_ITEM.match(line)
                or line.lstrip().startswith("|"))


def segments(markdown):
    """The cell as a list of literal strings and Units; joining their texts gives `markdown` back."""
    lines = markdown.splitlines(keepends=True)
    parts, index = [], 0

    def add_unit(kind, block_lines):
        text = "".join(block_lines)
        body = text.rstrip("\n")
        parts.append(Unit(kind, body))
        if text != body:
            parts.append(text[len(body):])

    while index < len(lines):
        line = lines[index]
        if not line.strip() or TABLE_RULE.match(line) and line.strip().startswith("|") or TAGS_ONLY.match(line):
            parts.append(line)
            index += 1
        elif FENCE.match(line):
            fence, end = FENCE.match(line).group(1), index + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            add_unit("code", lines[index:end + 1])
            index = end + 1
        elif HEADING.match(line):
            prefix = HEADING.match(line).group(1)
            parts.append(prefix)
            add_unit("heading", [line[len(prefix):]])
            index += 1
        elif line.lstrip().startswith("|"):
            add_unit("row", [line])
            index += 1
        else:
            match = LIST_ITEM.match(line)
            prefix = match.group(1) if match else line[:len(line) - len(line.lstrip())]
            end = index + 1
            while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
                end += 1
            parts.append(prefix)
            add_unit("item" if match else "paragraph", [line[len(prefix):], *lines[index + 1:end]])
            index = end
    return parts


def units(markdown):
    """The Units of a markdown cell, in order."""
    return [part for part in segments(markdown) if isinstance(part, Unit)]


def render_markdown(markdown, translations, marker):
    """`markdown` with each Unit replaced by its translation; a Unit without one stays English + marker."""
    out = []
    for part in segments(markdown):
        if isinstance(part, str):
            out.append(part)
        elif translations.get(part.msgid):
            out.append(translations[part.msgid])
        elif part.kind == "code":
            out.append(f"{part.text}\n*{marker}*")
        elif part.kind == "row":
            out.append(f"{part.text.rstrip().removesuffix('|').rstrip()} *{marker}* |")
        else:
            out.append(f"{part.text} *{marker}*")
    return "".join(out)


def code_spans(text):
    """The `code` spans and HTML tags of markdown (a hint's <details><summary>), with how often each
    occurs; a fenced block counts as its code without the comments (which translators translate)."""
    if FENCE.match(text):
        return Counter(["\n".join(COMMENT.sub("", line) for line in text.splitlines())])
    return Counter(CODE_SPAN.findall(text) + HTML_TAG.findall(CODE_SPAN.sub("", text)))
