"""The orphan branch ``hz/state``: receipts queued on disk, then committed and pushed in batches.

A turn only ever queues (``queue``: linted, written atomically and fsynced
to ``<home>/team/outbox/<repo-id>/``); ``push_pending`` later commits every
queued receipt on top of the branch's tip with plumbing (a private index,
``commit-tree``) and pushes without force. A rejected push means another
home pushed first: fetch, rebuild on the new tip, retry (bounded). An
unreachable remote leaves the receipts queued and raises nothing, so a turn
never waits on git. One file per receipt keeps writers for different
heinzels from ever conflicting, and the same receipt pushed twice is the
same blob at the same path, so a retry delivers it once.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hz_kernel.errors import HzError
from hz_kernel.store.fsutil import atomic_write, ensure_private_dir, fsync_dir, store_io
from hz_kernel.team.git import IDENTITY_EMAIL, IDENTITY_NAME, GitFailed, git
from hz_kernel.team.lease import lease_ref, mirrored_lease
from hz_kernel.team.lint import lint
from hz_kernel.team.receipts import AnyReceipt, DraftPlacedReceipt, parse_receipt, read_back
from hz_kernel.team.repo import STATE_BRANCH, TeamRepo

#: Push rounds before the rest stays queued for the next flush.
MAX_ATTEMPTS = 5
#: A receipt is a few hundred bytes; a larger file on ``hz/state`` is not read at all.
MAX_RECEIPT = 64 * 1024
STALE_TOKEN = "HZS104"
UNREADABLE = "HZS118"
RESTORED = "HZS119"
NOT_A_DOCUMENT = "HZS122"
#: In the cache: a tree of every receipt this home delivered, at its path on ``hz/state``.
DELIVERED = "refs/home/delivered"
FOREIGN_TIP = "HZS117"
_IDENTITY = f"{IDENTITY_NAME} <{IDENTITY_EMAIL}>"
_MESSAGE = re.compile(r"hz: \d+ receipt\(s\)")
_RECEIPT_FILE = re.compile(r"receipts/[^/]+/[^/]+\.json")


class ForeignTip(HzError):
    """``hz/state`` points to a commit hz did not write: hz will not build on it."""

    def __init__(self, tip: str, why: str) -> None:
        message = f"its tip {tip[:12]} is not hz's ({why}); hz will not push onto it"
        super().__init__(FOREIGN_TIP, message, "hz/state")


class Refused(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)
    path: str
    code: str
    message: str


class PushResult(BaseModel):
    """What a flush did: paths delivered (now on ``hz/state``), still queued, refused."""

    model_config = ConfigDict(defer_build=True, frozen=True)
    delivered: list[str] = []
    queued: list[str] = []
    refused: list[Refused] = []
    error: str | None = None
    """Why receipts stayed queued (the remote's one-line error), if they did."""
    restored: list[str] = []
    """Receipts this home delivered earlier that were gone from ``hz/state``: pushed again."""


class ReceiptLog(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True)
    receipts: list[AnyReceipt]
    unreadable: list[str] = []
    """Files on ``hz/state`` that are not receipts this version reads (or over ``MAX_RECEIPT``)."""
    problem: str | None = None
    """Why the branch itself cannot be trusted (HZS117: a tip hz did not write)."""
    refused: list[Refused] = []
    """Each receipt left out: it carries text (HZS101–HZS103) or its asset is
    not a document ref (HZS122). Another home wrote it, so it is held to the outbox's rules."""


#: Per cache: the last tip whose receipts were read, and what was read there.
_READ_AT_TIP: dict[Path, tuple[str, ReceiptLog]] = {}


class StateBranch:
    """``hz/state`` of the team repository ``remote``, from the home at ``home``."""

    def __init__(self, home: Path, remote: str) -> None:
        self.repo = TeamRepo(home, remote)
        self.outbox = home / "team" / "outbox" / self.repo.id

    def queue(self, receipts: list[AnyReceipt]) -> None:
        """Lint each receipt (refusing the lot if one carries text) and put them in the outbox."""
        encoded = []
        for receipt in receipts:
            lint(receipt.model_dump(mode="json"), receipt.path)
            encoded.append((self.outbox / receipt.path, receipt.to_bytes()))
        with store_io(self.outbox):
            for path, data in encoded:
                ensure_private_dir(path.parent)
                atomic_write(path, data)

    def pending(self) -> list[str]:
        """The receipt paths waiting in the outbox, in order."""
        if not self.outbox.is_dir():
            return []
        return sorted(
            str(path.relative_to(self.outbox))
            for path in self.outbox.glob("receipts/*/*.json")
            if path.is_file() and not path.name.startswith(".")
        )

    def push_pending(self, *, now: datetime) -> PushResult:
        """Deliver the outbox to ``hz/state``; never raises for an unreachable remote.

        A receipt whose fencing token is not its heinzel's lease token (below:
        another home took over; above: no lease gave it) (HZS104), that is not
        a valid receipt (HZS108), or whose path on the branch already holds
        other bytes (HZS106) is refused: taken out of the outbox (kept beside
        it as ``.refused``) and reported, never pushed.
        """
        if not self.pending():
            return PushResult()
        refused: list[Refused] = []
        with self.repo.locked():
            waiting = self._load(refused)
            for _ in range(MAX_ATTEMPTS if waiting else 0):
                try:
                    self.repo.fetch()
                    outcome = self._attempt(waiting, refused, now)
                except (GitFailed, ForeignTip) as exc:
                    return PushResult(queued=sorted(waiting), refused=refused, error=exc.one_line())
                if outcome is not None:
                    delivered, restored = outcome
                    for path in delivered:
                        self._settle(path)
                    return PushResult(
                        delivered=sorted(delivered), refused=refused, restored=sorted(restored)
                    )
        if not waiting:
            return PushResult(refused=refused)
        return PushResult(
            queued=sorted(waiting),
            refused=refused,
            error=f"HZS110: hz/state kept moving over {MAX_ATTEMPTS} attempts",
        )

    def read_receipts(self, *, fetch: bool = True) -> ReceiptLog:
        """Every receipt on ``hz/state`` (oldest first); ``fetch=False`` reads the last fetch."""
        with self.repo.locked():
            if fetch:
                self.repo.fetch()
            return self._mirrored_receipts()

    def cached_receipts(self) -> ReceiptLog:
        """The receipts as this home last fetched them, without waiting for the cache's lock
        (a flush may hold it for a minute) and without creating the cache: the mirror's refs
        move atomically and the objects they name never change."""
        if not (self.repo.git_dir / "HEAD").exists():
            return ReceiptLog(receipts=[])
        return self._mirrored_receipts()

    def tip_problem(self) -> str | None:
        """Why ``hz/state`` as last fetched cannot be built on (HZS117), if it cannot."""
        tip = self.repo.mirrored(STATE_BRANCH) if (self.repo.git_dir / "HEAD").exists() else None
        try:
            if tip is not None:
                self.check_tip(tip)
        except ForeignTip as exc:
            return exc.one_line()
        return None

    def _mirrored_receipts(self) -> ReceiptLog:
        """The receipts at the mirrored tip, read once per tip: a tip names its tree for
        ever, and the tick asks every time (HZS126) while a large team's branch takes seconds."""
        tip = self.repo.mirrored(STATE_BRANCH)
        if tip is None:
            return ReceiptLog(receipts=[])
        known = _READ_AT_TIP.get(self.repo.git_dir)
        if known is not None and known[0] == tip:
            return known[1]
        log = self._receipts_at(tip)
        _READ_AT_TIP[self.repo.git_dir] = (tip, log)
        return log

    def _receipts_at(self, tip: str) -> ReceiptLog:
        try:
            self.check_tip(tip)
        except ForeignTip as exc:
            return ReceiptLog(receipts=[], problem=exc.one_line())
        files = self.repo.files(tip, "receipts/")
        sizes = self.repo.sizes(list(files.values()))
        small = {p: b for (p, b), n in zip(files.items(), sizes, strict=True) if n <= MAX_RECEIPT}
        receipts: list[AnyReceipt] = []
        refused: list[Refused] = []
        unreadable = [path for path in files if path not in small]
        for path, raw in zip(small, self.repo.contents(list(small.values())), strict=True):
            try:
                receipt = read_back(raw)
            except ValueError:
                unreadable.append(path)
                continue
            try:
                _check_read_back(receipt, orjson.loads(raw), path)
            except HzError as exc:
                refused.append(Refused(path=path, code=exc.code, message=exc.message))
                continue
            receipts.append(receipt)
        unreadable.sort()
        receipts.sort(key=lambda r: (r.at, r.path))
        return ReceiptLog(receipts=receipts, unreadable=unreadable, refused=refused)

    def check_tip(self, tip: str) -> None:
        """Refuse (HZS117) a tip hz did not write: someone moved ``hz/state`` by hand (to
        ``main``'s tip, say). Building on it would put a person's commits into hz/state's
        history and drop the receipts already there, and the outbox would count them delivered.
        """
        listed = git(self.repo.git_dir, "ls-tree", "-r", "-z", "--name-only", tip).stdout.decode()
        stray = next(
            (p for p in filter(None, listed.split("\0")) if not _RECEIPT_FILE.fullmatch(p)), None
        )
        if stray is not None:
            raise ForeignTip(tip, "a file outside receipts/")
        history = git(
            self.repo.git_dir, "log", "--format=%an <%ae>%x00%cn <%ce>%x00%B%x1e", tip
        ).stdout.decode()
        for record in filter(None, (r.strip("\n") for r in history.split("\x1e"))):
            author, committer, message = record.split("\0", 2)
            if author != _IDENTITY or committer != _IDENTITY:
                raise ForeignTip(tip, "a commit not made by hz in its history")
            if not _MESSAGE.fullmatch(message.strip()):
                raise ForeignTip(tip, "a commit message hz does not write in its history")

    def _load(self, refused: list[Refused]) -> dict[str, AnyReceipt]:
        waiting: dict[str, AnyReceipt] = {}
        for path in self.pending():
            try:
                with store_io(self.outbox / path):
                    raw = (self.outbox / path).read_bytes()
                receipt = parse_receipt(raw)
                if receipt.path != path or receipt.to_bytes() != raw:
                    raise HzError("HZS108", "the outbox file is not the receipt hz wrote", path)
                lint(orjson.loads(raw), path)
            except ValidationError:
                self._refuse(path, HzError("HZS108", "not a receipt", path), refused)
                continue
            except HzError as exc:
                self._refuse(path, exc, refused)
                continue
            waiting[path] = receipt
        return waiting

    def _attempt(
        self, waiting: dict[str, AnyReceipt], refused: list[Refused], now: datetime
    ) -> tuple[list[str], list[str]] | None:
        """One fetch-commit-push round: the paths delivered and those restored (delivered
        earlier, gone from the branch since), or None when another push won."""
        tip = self.repo.mirrored(STATE_BRANCH)
        if tip is not None:
            self.check_tip(tip)
        expect: dict[str, str | None] = {}
        guards: list[str] = []
        for heinzel in sorted({r.heinzel for r in waiting.values()}):
            ref = lease_ref(heinzel)
            sha, lease = mirrored_lease(self.repo, heinzel)
            if lease is None or sha is None:
                continue
            expect[ref] = sha
            guards.append(f"{sha}:{ref}")
            for path, receipt in list(waiting.items()):
                if receipt.heinzel != heinzel or receipt.token == lease.token:
                    continue
                if receipt.token == 0 and receipt.turn is None:
                    continue  # outside a turn at a home without the lease: nothing to fence
                if receipt.token < lease.token:
                    message = f"token {receipt.token} is older than the lease's {lease.token}"
                else:
                    message = f"token {receipt.token} was never given: the lease's is {lease.token}"
                self._refuse(path, HzError(STALE_TOKEN, message, path), refused)
                del waiting[path]
        on_branch = {} if tip is None else self.repo.files(tip, "receipts/")
        ours = self.repo.blobs([self.outbox / path for path in waiting])
        blobs = dict(zip(waiting, ours, strict=True))
        new: dict[str, str] = {}
        delivered: list[str] = []
        for path, blob in zip(list(waiting), ours, strict=True):
            there = on_branch.get(path)
            if there is None:
                new[path] = blob
            elif there == blob or self._written_before_by(there, waiting[path]):
                delivered.append(path)
            else:
                message = "hz/state already holds a different receipt here"
                self._refuse(path, HzError("HZS106", message, path), refused)
                del waiting[path]
        lost = self._lost(on_branch)
        if not new and not lost:
            self._record({path: blobs[path] for path in delivered})
            return delivered, []
        commit = self._commit(tip, new | lost, now)
        if not self.repo.push([f"{commit}:{STATE_BRANCH}", *guards], expect):
            return None
        self.repo.set_mirror(STATE_BRANCH, commit)
        self._record({path: blobs[path] for path in delivered} | new)
        return delivered + list(new), list(lost)

    def _lost(self, on_branch: dict[str, str]) -> dict[str, str]:
        """Receipts this home delivered that the branch no longer has (someone moved it back
        by hand): a receipt is identified by its path and bytes, so pushing it again is safe,
        and its token was current when it was first accepted."""
        done = git(self.repo.git_dir, "rev-parse", "--verify", "--quiet", DELIVERED, check=False)
        record = done.stdout.decode().strip()
        if done.returncode != 0 or not record:
            return {}
        mine = self.repo.files(record, "receipts/")
        return {path: blob for path, blob in mine.items() if path not in on_branch}

    def _record(self, delivered: dict[str, str]) -> None:
        """Add ``delivered`` (path to blob) to the tree of what this home delivered."""
        if not delivered:
            return
        done = git(self.repo.git_dir, "rev-parse", "--verify", "--quiet", DELIVERED, check=False)
        record = done.stdout.decode().strip() if done.returncode == 0 else ""
        tree = self._tree(record or None, delivered)
        git(self.repo.git_dir, "update-ref", DELIVERED, tree)

    def _written_before_by(self, blob: str, receipt: AnyReceipt) -> bool:
        """Whether ``blob`` is ``receipt`` as an hz before ``by`` wrote it (a cursor deleted
        after an upgrade queues it again): the same receipt, delivered."""
        if self.repo.sizes([blob])[0] > MAX_RECEIPT:
            return False
        try:
            there = parse_receipt(self.repo.contents([blob])[0])
        except ValidationError:
            return False
        return there.by is None and there.model_copy(update={"by": receipt.by}) == receipt

    def _tree(self, base: str | None, new: dict[str, str]) -> str:
        """The tree of ``base`` (a commit or tree) plus ``new`` (path to blob), in a private
        index."""
        with tempfile.TemporaryDirectory(dir=self.repo.git_dir) as scratch:
            index = Path(scratch) / "index"
            git(self.repo.git_dir, "read-tree", base or "--empty", index=index)
            entries = "".join(f"100644 {blob}\t{path}\n" for path, blob in new.items())
            info = entries.encode()
            git(self.repo.git_dir, "update-index", "--index-info", stdin=info, index=index)
            return git(self.repo.git_dir, "write-tree", index=index).stdout.decode().strip()

    def _commit(self, tip: str | None, new: dict[str, str], now: datetime) -> str:
        """A commit of ``tip``'s tree plus ``new`` (path to blob)."""
        tree = self._tree(tip, new)
        parents = ["-p", tip] if tip else []
        message = f"hz: {len(new)} receipt(s)".encode()
        done = git(
            self.repo.git_dir,
            "commit-tree",
            "--no-gpg-sign",
            tree,
            *parents,
            stdin=message,
            moment=now,
        )
        return done.stdout.decode().strip()

    def _settle(self, path: str) -> None:
        """Take a delivered receipt out of the outbox."""
        target = self.outbox / path
        with contextlib.suppress(FileNotFoundError), store_io(target):
            target.unlink()
            fsync_dir(target.parent)

    def _refuse(self, path: str, error: HzError, refused: list[Refused]) -> None:
        target = self.outbox / path
        with store_io(target):
            target.replace(target.with_name(f".{target.name}.refused"))
            fsync_dir(target.parent)
        refused.append(Refused(path=path, code=error.code, message=error.message))


def _check_read_back(receipt: AnyReceipt, document: dict[str, Any], path: str) -> None:
    """Refuse a receipt from ``hz/state`` that this hz would not have written: the document,
    fields this hz does not know included, carries text (HZS101–HZS103), or its asset,
    decoded, is not a printable ``doc:`` ref to a path inside the documents (HZS122): the
    graph shows it and checks whether it is readable here."""
    lint(document, path)
    if not isinstance(receipt, DraftPlacedReceipt):
        return
    ref = unquote(receipt.asset)
    document = ref.removeprefix("doc:").partition("#")[0]
    if (
        not ref.startswith("doc:")
        or not ref.isprintable()
        or not document
        or document.startswith(("/", "~", "\\"))
        or ".." in re.split(r"[/\\]", document)
    ):
        raise HzError(NOT_A_DOCUMENT, "the asset is not a document ref inside the documents", path)
