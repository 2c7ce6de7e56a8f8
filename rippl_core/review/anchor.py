"""Witnesses: where signed tree heads are kept outside the database.

A witness keeps the heads of a log, oldest first; `verify --anchor` then checks the log against
them, so whoever rewrites the database (cuts the tail and moves the head, re-seals a rewritten
history, strips a signature) is caught without trusting any key. Three kinds, named by a spec:

- `file:PATH` (or a plain path): an append-only JSON Lines file, one head per line, fsynced.
- `git:PATH`: a git repository (created if missing) with one file per log, `<log>.head.json`,
  and a commit per head; the history is git's (push it somewhere the database's writers cannot).
- `http://…` or `https://…`: an HTTP witness. Anchoring POSTs `{"head": HEAD}` as JSON
  (`Content-Type: application/json`) and expects a 2xx; reading GETs the same URL with
  `?log=NAME` and expects `{"heads": [HEAD, ...]}` (oldest first) or one HEAD object. HEAD is the
  head's JSON: `log`, `size`, `root`, `at`, and `by`, `signature`, `public_key` when signed.

Standard library only (urllib, subprocess for git).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from rippl_core._runtime.validation import check_actor
from rippl_core.errors import ConflictError, InvalidInputError, UnavailableError
from rippl_core.models import ConsistencyProof, TreeHead
from rippl_core.review import merkle
from rippl_core.review.heads import head_json, head_model, sign_head
from rippl_core.review.receipts import SigningKey, private_key

HTTP_TIMEOUT = 10.0


class Witness(Protocol):
    """Keeps the heads of logs outside the database."""

    def publish(self, head: TreeHead) -> None: ...

    def heads(self, log: str) -> list[TreeHead]: ...


def _parse_lines(text: str, where: str, log: str) -> list[TreeHead]:
    heads = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            raise InvalidInputError(f"{where}, line {number}: not JSON; a witness file holds one "
                                    "tree head per line") from None
        head = head_model(data.get("head", data) if isinstance(data, dict) else data)
        if head.log == log:
            heads.append(head)
    return heads


class FileWitness:
    """An append-only JSON Lines file of heads."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def publish(self, head: TreeHead) -> None:
        line = json.dumps(head_json(head), sort_keys=True) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode())
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise InvalidInputError(f"cannot append to the witness file {self.path}: "
                                    f"{exc.strerror or exc}") from None

    def heads(self, log: str) -> list[TreeHead]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInputError(f"cannot read the witness file {self.path}: {exc}") from None
        return _parse_lines(text, str(self.path), log)


class GitWitness:
    """A git repository with a commit per head."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _git(self, *args: str) -> str:
        git = shutil.which("git")
        if git is None:
            raise InvalidInputError("a git witness needs git installed (apt-get install git)")
        env = {**os.environ, "GIT_AUTHOR_NAME": "rippl", "GIT_AUTHOR_EMAIL": "rippl@localhost",
               "GIT_COMMITTER_NAME": "rippl", "GIT_COMMITTER_EMAIL": "rippl@localhost"}
        done = subprocess.run([git, "-C", str(self.path), *args], capture_output=True, text=True,
                              env=env, check=False)
        if done.returncode != 0:
            raise InvalidInputError(f"git {args[0]} in the witness repository {self.path} failed: "
                                    f"{done.stderr.strip()[:300]}")
        return done.stdout

    def _file(self, log: str) -> str:
        return urllib.parse.quote(log, safe="") + ".head.json"

    def publish(self, head: TreeHead) -> None:
        if not (self.path / ".git").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._git("init", "--quiet")
        name = self._file(head.log)
        (self.path / name).write_text(json.dumps(head_json(head), sort_keys=True, indent=1) + "\n",
                                      encoding="utf-8")
        self._git("add", "--", name)
        self._git("commit", "--quiet", "--allow-empty", "-m",
                  f"{head.log}: {head.size} receipts, root {head.root}", "--", name)

    def heads(self, log: str) -> list[TreeHead]:
        if not (self.path / ".git").exists():
            return []
        name = self._file(log)
        commits = self._git("log", "--reverse", "--format=%H", "--", name).split()
        return [head_model(json.loads(self._git("show", f"{commit}:{name}"))) for commit in commits]


class HttpWitness:
    """An HTTP endpoint that keeps heads (see the module's docstring for the protocol)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, request: urllib.request.Request) -> Any:
        try:
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise UnavailableError(f"the witness {self.url} answered {exc.code} {exc.reason}; the "
                                   "head was not anchored") from None
        except (urllib.error.URLError, OSError) as exc:
            raise UnavailableError(f"cannot reach the witness {self.url}: {exc}") from None
        return json.loads(body) if body.strip() else None

    def publish(self, head: TreeHead) -> None:
        data = json.dumps({"head": head_json(head)}).encode()
        self._call(urllib.request.Request(self.url, data=data, method="POST",
                                          headers={"Content-Type": "application/json"}))

    def heads(self, log: str) -> list[TreeHead]:
        sep = "&" if "?" in self.url else "?"
        url = f"{self.url}{sep}{urllib.parse.urlencode({'log': log})}"
        try:
            data = self._call(urllib.request.Request(url, headers={"Accept": "application/json"}))
        except ValueError:
            raise InvalidInputError(f"the witness {self.url} did not answer JSON") from None
        if data is None:
            return []
        items = data.get("heads") if isinstance(data, dict) and "heads" in data else [data]
        if not isinstance(items, list):
            raise InvalidInputError(f"the witness {self.url} answered {str(data)[:120]}, not "
                                    '{"heads": [...]}')
        return [h for h in (head_model(item) for item in items) if h.log == log]


def witness(spec: str | os.PathLike[str]) -> Witness:
    """The witness a spec names: `file:PATH`, `git:PATH`, `http(s)://URL`, or a path (a git
    repository if it holds `.git`, else a file)."""
    text = os.fspath(spec)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError("name a witness: file:PATH, git:PATH or an http(s):// URL")
    if text.startswith(("http://", "https://")):
        return HttpWitness(text)
    if text.startswith("git:"):
        return GitWitness(Path(text[4:]))
    if text.startswith("file:"):
        return FileWitness(Path(text[5:]))
    path = Path(text)
    return GitWitness(path) if (path / ".git").exists() else FileWitness(path)


def anchored_heads(spec: str | os.PathLike[str] | None, log: str) -> list[TreeHead]:
    """The heads of `log` a witness keeps, oldest first (none asked: no heads). A witness that
    keeps none is refused: a verification asked to check an anchor must have one to check."""
    if spec is None:
        return []
    heads = witness(spec).heads(log)
    if not heads:
        raise InvalidInputError(f"the witness {os.fspath(spec)} keeps no head of the log {log!r}; "
                                "anchor one first (`rippl receipts anchor --to WITNESS`)")
    return heads


def signed(head: TreeHead, signing_key: SigningKey | None, by: str | None) -> TreeHead:
    """The head, signed by `by` with `signing_key` when given (both or neither)."""
    if (signing_key is None) != (by is None):
        raise InvalidInputError("to sign a tree head, give both the signing key and who signs (by)")
    if signing_key is None or by is None:
        return head
    return sign_head(head, private_key(signing_key), check_actor(by))


def check_extends(previous: TreeHead | None, head: TreeHead, proof: ConsistencyProof | None) -> None:
    """Refuse to anchor a head that does not extend the witness's latest one."""
    if previous is None:
        return
    if previous.log != head.log:
        raise InvalidInputError(f"the witness's latest head is of the log {previous.log!r}, not "
                                f"{head.log!r}")
    extends = proof is not None and proof.old_root == previous.root and (
        merkle.verify_consistency(previous.size, head.size, bytes.fromhex(previous.root),
                                  bytes.fromhex(head.root), [bytes.fromhex(p) for p in proof.proof])
        if previous.size else previous.root == merkle.EMPTY_ROOT.hex())
    if not extends:
        raise ConflictError(
            f"the log does not extend the head anchored at {previous.at.isoformat()} ({previous.size} "
            "receipts): its history was cut or rewritten since. Nothing was anchored; run "
            "`rippl receipts verify --anchor WITNESS` to see what changed")
