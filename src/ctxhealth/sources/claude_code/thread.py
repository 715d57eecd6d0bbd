"""The conversation tree of a Claude Code transcript: which nodes form a thread.

* Every line with a string ``uuid`` is a node of a tree linked by ``parentUuid``. The main
  thread is the chain walked back from the last non-sidechain node in file order.
* Compaction starts a new root. Newer versions write a ``system``/``compact_boundary`` line
  whose ``logicalParentUuid`` names the node before it; older versions (and boundaries without
  it) give the compaction summary (``isCompactSummary``) a null parent, and the walk continues
  from the last non-sidechain node before it in file order. A parent that is not found, and a
  line with no usable parent (missing, a number, a misspelled key) after the first line, are
  bridged the same way, with a warning: one damaged link never cuts the thread.
* 2.1.x hangs the lines written after a print-mode ``/compact`` (the command's own lines) off
  the boundary's ``logicalParentUuid``, not off the summary: a step from a line after such a
  boundary to that parent goes through the summary and the boundary instead, so the compaction
  is on the thread, not dropped as an abandoned branch.
* Nodes off the chain (abandoned branches after a rewind) are dropped, with one warning
  counting the user/assistant lines dropped.
* A line that repeats an earlier line's ``uuid`` (written again, e.g. at the end of the file by a
  crashed or concurrent writer) is a repeat: the first line with that uuid is the node, the leaf
  is the newest line that is not a repeat, and the repeats are one warning (not a cut thread).
* Sidechain nodes are grouped by the root of their tree: one group per sidechain.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxhealth.sources.claude_code.plain import _MESSAGE_KINDS
from ctxhealth.sources.lines import WarningSink

if TYPE_CHECKING:
    from ctxhealth.sources.claude_code.schema import _Node

_THREAD_KINDS = ("user", "assistant", "system")


def _is_boundary(node: _Node) -> bool:
    return node.type == "system" and node.subtype == "compact_boundary"


def _is_message(node: _Node) -> bool:
    return node.message is not None and node.type in _MESSAGE_KINDS


def _chain(nodes: Sequence[_Node], sink: WarningSink, label: str, *, main: bool = True) -> list[_Node]:
    """The thread ending at the last node of ``nodes`` (all of one side: main or one sidechain).

    A sidechain (``main=False``) may start from a node of the thread that spawned it: a parent
    outside ``nodes`` is then its root, not a broken link.
    """
    if not nodes:
        return []
    by_uuid: dict[str, _Node] = {}
    repeats: list[_Node] = []
    for n in nodes:
        if n.uuid is not None:
            if n.uuid in by_uuid:
                repeats.append(n)
            else:
                by_uuid[n.uuid] = n
    if repeats:
        sink.add(
            repeats[0].line,
            f"{len(repeats)} lines repeat the uuid of an earlier line (written again); the first "
            "of each is read, the repeats are skipped",
        )
        skip = {id(n) for n in repeats}
        nodes = [n for n in nodes if id(n) not in skip]
    position: dict[int, int] | None = None

    def previous(n: _Node) -> _Node | None:
        """The last thread node (user / assistant / system with a uuid) before ``n``."""
        nonlocal position
        if position is None:
            position = {id(m): i for i, m in enumerate(nodes)}
        i = position[id(n)] - 1
        while i >= 0:
            candidate = nodes[i]
            if candidate.uuid is not None and candidate.type in _THREAD_KINDS:
                return candidate
            i -= 1
        return None

    # 2.1.x hangs the lines written after a compaction (the /compact command lines of print mode)
    # off the line before the compaction (the boundary's logicalParentUuid), not off the summary.
    boundaries: dict[str, list[_Node]] = {}
    for n in nodes:
        if n.logicalParentUuid is not None and _is_boundary(n):
            boundaries.setdefault(n.logicalParentUuid, []).append(n)

    def _skipped_boundary(child: _Node, parent_node: _Node, parent: str) -> _Node | None:
        """The end of the compacted thread when ``child`` -> ``parent_node`` steps over a compaction that
        hangs off ``parent_node``, else None."""
        found = boundaries.get(parent)
        if not found:
            return None
        nonlocal position
        if position is None:
            position = {id(m): i for i, m in enumerate(nodes)}
        at = position[id(child)]
        for boundary in reversed(found):
            where = position[id(boundary)]
            if where < at and id(boundary) not in seen:
                last = previous(child)
                return last if last is not None and position[id(last)] >= where else boundary
        return None

    chain: list[_Node] = []
    seen: set[int] = set()
    cur: _Node | None
    # The leaf is the last conversation line: progress / attachment lines can hang off older
    # lines and are written late, so they must not choose the thread.
    cur = next((n for n in reversed(nodes) if n.uuid is not None and n.type in _THREAD_KINDS), None)
    if cur is None:
        cur = next((n for n in reversed(nodes) if n.uuid is not None), None)
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        chain.append(cur)
        parent = cur.parentUuid
        if parent is None:
            logical = cur.logicalParentUuid
            if logical is not None and logical in by_uuid:
                cur = by_uuid[logical]
            elif cur.isCompactSummary or _is_boundary(cur):
                cur = previous(cur)
            elif main and (before := previous(cur)) is not None:
                # No parent (missing, null, a number, a misspelled key) in the middle of the file:
                # one damaged link, not the start of the conversation. Cutting here would drop
                # everything before it as an "abandoned branch"; file order bridges it instead.
                sink.add(cur.line, f"no parent link on this line; {label} continues from the line before")
                cur = before
            else:
                cur = None
        elif parent in by_uuid:
            nxt = by_uuid[parent]
            skipped = _skipped_boundary(cur, nxt, parent) if main else None
            cur = nxt if skipped is None else skipped
        elif not main:
            cur = None
        else:
            sink.add(cur.line, f"parent {parent[:40]} not found; {label} continues from the line before")
            cur = previous(cur)
    if cur is not None and id(cur) in seen:
        sink.add(cur.line, f"cycle in parentUuid links at this line; {label} cut there")
    chain.reverse()
    if len(chain) < len(nodes):
        dropped = [
            n for n in nodes if n.message is not None and n.type in _MESSAGE_KINDS and id(n) not in seen
        ]
        unlinked = [n for n in dropped if n.uuid is None]
        branched = [n for n in dropped if n.uuid is not None]
        if branched:
            sink.add(
                branched[0].line,
                f"{len(branched)} lines not on the {label} (abandoned branches after a rewind) were dropped",
            )
        if unlinked:
            sink.add(
                unlinked[0].line, f"{len(unlinked)} message lines without a uuid cannot be placed; dropped"
            )
    return chain


def _sidechain_groups(nodes: Sequence[_Node]) -> list[list[_Node]]:
    """Group sidechain nodes by the root of their tree (file order within and across groups)."""
    by_uuid = {n.uuid: n for n in nodes if n.uuid is not None}
    root_of: dict[int, int] = {}
    groups: dict[int, list[_Node]] = {}
    for n in nodes:
        path: list[_Node] = []
        cur: _Node | None = n
        root: int | None = None
        while cur is not None:
            known = root_of.get(id(cur))
            if known is not None:
                root = known
                break
            if len(path) > len(nodes):
                break
            path.append(cur)
            parent = cur.parentUuid
            cur = by_uuid.get(parent) if parent is not None else None
        if root is None:
            root = id(path[-1]) if path else id(n)
        for p in path:
            root_of[id(p)] = root
        groups.setdefault(root, []).append(n)
    return list(groups.values())
