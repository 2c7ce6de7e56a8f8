"""A document to ingest: its name (its identity in provenance), its text, its sections."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rippl_core.errors import InvalidInputError

MAX_DOCUMENT_CHARS = 2_000_000
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")
HEADING = re.compile(r"^ {0,3}(?P<level>#{1,6})[ \t]+(?P<title>.*?)[ \t#]*$")


@dataclass(frozen=True)
class Heading:
    offset: int
    level: int
    title: str


@dataclass(frozen=True)
class Document:
    """The text of one document. `name` identifies it in provenance (a path relative to the
    working directory when read from a file). Offsets index `text` (newlines normalised to \\n)."""

    name: str
    text: str
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidInputError("a document needs a non-empty name (its path or an id)")
        if not isinstance(self.text, str):
            raise InvalidInputError(f"{self.name}: the text must be a string")
        if len(self.text) > MAX_DOCUMENT_CHARS:
            raise InvalidInputError(f"{self.name} is {len(self.text)} characters; the limit is "
                                    f"{MAX_DOCUMENT_CHARS}. Split it into several documents.")
        if "\x00" in self.text:
            raise InvalidInputError(f"{self.name} contains NUL characters; is it a text file?")

    @classmethod
    def from_path(cls, path: str | os.PathLike[str]) -> Document:
        """Read a UTF-8 text file. Its name is its path relative to the working directory when it
        is under it, else its absolute path (always with forward slashes)."""
        path = Path(path)
        if not path.is_file():
            raise InvalidInputError(f"{path} is not a file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{path} is not UTF-8 text: {exc}") from None
        resolved = path.resolve()
        try:
            name = resolved.relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            name = resolved.as_posix()
        return cls(name, text.removeprefix("\ufeff"), path)

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @cached_property
    def fences(self) -> list[tuple[int, int, str]]:
        """Fenced code blocks as (start of body, end of body, info string)."""
        blocks: list[tuple[int, int, str]] = []
        offset, open_fence = 0, None
        for line in self.text.splitlines(keepends=True):
            bare = line.rstrip("\n")
            match = _FENCE.match(bare)
            if open_fence is None and match:
                open_fence = (match["fence"], match["info"].strip(), offset + len(line))
            elif open_fence is not None and match and not match["info"].strip() \
                    and match["fence"][0] == open_fence[0][0] \
                    and len(match["fence"]) >= len(open_fence[0]):
                blocks.append((open_fence[2], offset, open_fence[1]))
                open_fence = None
            offset += len(line)
        if open_fence is not None:  # an unclosed fence runs to the end of the document
            blocks.append((open_fence[2], len(self.text), open_fence[1]))
        return blocks

    @cached_property
    def headings(self) -> list[Heading]:
        """ATX headings (`# Title`) outside fenced blocks, in order."""
        inside = [(start, end) for start, end, _ in self.fences]
        found, offset = [], 0
        for line in self.text.splitlines(keepends=True):
            match = HEADING.match(line.rstrip("\n"))
            if match and not any(start - 1 <= offset < end for start, end in inside):
                found.append(Heading(offset, len(match["level"]), match["title"].strip()))
            offset += len(line)
        return found

    def section_at(self, offset: int) -> str | None:
        """The path of headings enclosing `offset`, e.g. 'Timeline > 09:00 UTC'."""
        stack: list[Heading] = []
        for heading in self.headings:
            if heading.offset > offset:
                break
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
        return " > ".join(h.title for h in stack) or None

    def line_of(self, offset: int) -> int:
        """1-based line number of a character offset."""
        return self.text.count("\n", 0, max(0, offset)) + 1

    def locate(self, excerpt: str | None) -> tuple[int, int] | None:
        """The character span of `excerpt` in the text: exact, else ignoring case, Unicode width
        and runs of white space. None when it is not there (a paraphrase)."""
        if not excerpt or not excerpt.strip():
            return None
        excerpt = excerpt.strip()
        start = self.text.find(excerpt)
        if start >= 0:
            return start, start + len(excerpt)
        needle = _fold(excerpt)[0]
        if not needle:
            return None
        folded, index = self._folded
        found = folded.find(needle)
        if found < 0:
            return None
        return index[found], index[found + len(needle) - 1] + 1

    @cached_property
    def _folded(self) -> tuple[str, list[int]]:
        return _fold(self.text)


def _fold(text: str) -> tuple[str, list[int]]:
    """Case-folded, NFKC, white space collapsed; with the source offset of each output char."""
    out: list[str] = []
    index: list[int] = []
    space = False
    for i, char in enumerate(text):
        if char.isspace():
            if out and not space:
                out.append(" ")
                index.append(i)
            space = True
            continue
        space = False
        for folded in unicodedata.normalize("NFKC", char).casefold():
            out.append(folded)
            index.append(i)
    while out and out[-1] == " ":
        out.pop()
        index.pop()
    return "".join(out), index
