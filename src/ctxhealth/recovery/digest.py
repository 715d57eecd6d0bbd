"""A deterministic digest of a session: what an agent needs to carry across a recovery.

Owns the extraction rules shared by the checkpoint builder and the retention audit:
user requests and constraints, files edited or created, latest and blocking errors,
decisions (and why), open and completed steps (from todo / plan tools), identifiers
(branches, commits, versions, tickets, UUIDs, URLs), tools used, key findings and
last progress. Pure functions of the session; no model calls.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ctxhealth import failures
from ctxhealth.model import Message, Role, Session, ToolCall, ToolResult
from ctxhealth.signals.calls import parse_call
from ctxhealth.signals.requests import clean_tool_text, clean_user_text, is_user_request

# --- user text -------------------------------------------------------------------------

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])|\n+")
_CONSTRAINT = re.compile(
    r"\b(must|never|always|only|don'?t|do not|doesn'?t|does not|shouldn'?t|should not|can'?t|cannot|"
    r"aren'?t to|are not to|make sure|ensure|need to|needs to|have to|has to|i want|without|instead|"
    r"avoid|no longer|required?|prefer|keep)\b",
    re.I,
)
MAX_SENTENCE_CHARS = 240


def sentences(text: str) -> list[str]:
    """Sentences / lines of ``text``, whitespace collapsed, each at most ``MAX_SENTENCE_CHARS``."""
    out = []
    for piece in _SENTENCE_SPLIT.split(text):
        s = " ".join(piece.split())
        if len(s.split()) >= 3:
            out.append(s[:MAX_SENTENCE_CHARS])
    return out


_TEMPLATE_PARTS = re.compile(
    r"```.*?(?:```|\Z)|<!--.*?(?:-->|\Z)"
    r"|<(format_example|example_response|system_information)>.*?(?:</\1>|\Z)",
    re.S,
)
"""Parts of a request a template wrote, not the person: fenced code, HTML comments, and the format
examples agent templates carry (mini-swe-agent's ``<format_example>``, ``<example_response>``)."""


def constraint_sentences(text: str) -> list[str]:
    """Sentences of a user message that state a constraint (must, never, only, instead, ...), outside
    code, comments, headings and template examples."""
    if "```" in text or "<!--" in text or "<format_example>" in text or "<example_response>" in text:
        text = _TEMPLATE_PARTS.sub("\n", text)
    prose = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return [s for s in sentences(prose) if len(s.split()) >= 4 and _CONSTRAINT.search(s)]


# --- tools -----------------------------------------------------------------------------

_EDIT_TOOLS = {"edit", "multiedit", "write", "notebookedit", "create_file", "str_replace_editor"}
_EDIT_COMMANDS = {"create", "str_replace", "insert", "undo_edit", "write"}
_PATH_KEYS = ("file_path", "path", "notebook_path", "filename")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_SHELL_WRITE = re.compile(r"(?:sed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+)\s+|>>?\s*)([\w./~-]+\.[\w]+)")
_COMMAND_KEYS = ("command", "cmd", "script")
_EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool"}


def tool_command(call: ToolCall) -> str:
    """The shell command of a call, when it has one (edit tools' ``command`` is a sub-command, not shell)."""
    name = call.name.lower()
    if name in _EDIT_TOOLS or name in _EDITOR_TOOLS:
        return ""
    inp = call.input
    if isinstance(inp, dict):
        for key in _COMMAND_KEYS:
            value = inp.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                return " ".join(value)
    elif isinstance(inp, str) and name in {"bash", "shell", "exec_command", "run"}:
        return inp
    return ""


def edited_paths(call: ToolCall) -> list[str]:
    """Files a call edits or creates (edit tools, apply_patch, ``sed -i`` and shell redirects)."""
    name = call.name.lower()
    inp = call.input if isinstance(call.input, dict) else {}
    if name in _EDIT_TOOLS or name in _EDITOR_TOOLS:
        command = inp.get("command")
        if isinstance(command, str) and command not in _EDIT_COMMANDS:
            return []
        for key in _PATH_KEYS:
            value = inp.get(key)
            if isinstance(value, str) and value:
                return [value]
        return []
    if name == "apply_patch":
        raw = call.input if isinstance(call.input, str) else str(inp.get("input", inp.get("patch", "")))
        return [p.strip() for p in _PATCH_FILE.findall(raw)]
    command = tool_command(call)
    if command:
        return [p for p in _SHELL_WRITE.findall(command) if not _scratch(p)]
    return []


_SCRATCH_SUFFIXES = (".log", ".out", ".tmp")


def _scratch(path: str) -> bool:
    """Redirect targets that are scratch output, not files being worked on."""
    return path.startswith(("/dev/", "/tmp/")) or path.endswith(_SCRATCH_SUFFIXES)


def _finding_source(call: ToolCall | None) -> str:
    """Where a finding comes from: the tool and what it acted on (``bash `seq 4```), so a model
    resumed from a checkpoint knows which of its commands already ran, not only their output."""
    if call is None:
        return "tool"
    target = call_target(call)
    return f"{call.name} `{target[:60]}`" if target else call.name


def call_target(call: ToolCall) -> str:
    """What a call acts on, for telling a retry from a new attempt: a path or the command's head."""
    inp = call.input if isinstance(call.input, dict) else {}
    for key in _PATH_KEYS:
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    command = tool_command(call)
    return " ".join(_command_words(command)[:2]) if command else ""


_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def _command_words(command: str) -> list[str]:
    """The command's words without leading ``VAR=value`` assignments and ``cd DIR &&`` steps:
    ``PYTHONPATH=src python -c`` retries ``python -c``, it is not another command."""
    words = command.split()
    while True:
        if words and _ENV_ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif len(words) >= 3 and words[0] == "cd" and words[2] in ("&&", ";"):
            words = words[3:]
        else:
            return words


# --- errors ----------------------------------------------------------------------------

_ERROR_LINE = re.compile(
    r"(error|exception|traceback|failed|failure|fatal|undefined|not found|denied|no such|cannot|"
    r"can't|segmentation|abort|panic|invalid)",
    re.I,
)
ERROR_TAIL_LINES = 50
BLOCKING_WINDOW = 20
_STACK_START = re.compile(r"^(Traceback \(most recent call last\)|\s+at \S+\(|\s*File \".+\", line \d+)")


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def error_signature(text: str) -> str:
    """The line that names an error, whitespace collapsed, ≤ 160 chars: for a Python traceback
    its final exception line, otherwise the first line that looks like an error."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
    if "Traceback (most recent call last)" in text:
        for line in reversed(lines):
            if _EXCEPTION_LINE.match(line):
                return line[:160]
    for line in lines:
        if _ERROR_LINE.search(line) and not line.lower().startswith("<tool_use_error>"):
            return line[:160]
    for line in lines:
        stripped = line.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip()
        if stripped:
            return stripped[:160]
    return ""


def trim_error_output(text: str, max_lines: int = ERROR_TAIL_LINES) -> str:
    """Error output trimmed to its last ``max_lines`` lines plus any stack trace before them."""
    lines = text.splitlines()
    if len(lines) <= max_lines:
        return text
    tail = lines[-max_lines:]
    head = lines[:-max_lines]
    stack: list[str] = []
    for i, line in enumerate(head):
        if _STACK_START.match(line):
            stack = head[i : i + 20]
            break
    dropped = len(head) - len(stack)
    marker = f"[... {dropped} earlier lines of error output trimmed ...]"
    return "\n".join([*stack, marker, *tail]) if stack else "\n".join([marker, *tail])


def is_failure(result: ToolResult) -> bool:
    """A tool call that failed (:func:`ctxhealth.failures.is_failure`), not one the person declined."""
    return failures.is_failure(result) and not failures.declined(result)


# --- identifiers -----------------------------------------------------------------------

_BRANCH_CMD = re.compile(
    r"git\s+(?:checkout\s+(?:-[bB]\s+)?|switch\s+(?:-[cC]\s+)?|branch\s+(?:-[mM]\s+\S+\s+)?|"
    r"push\s+(?:-u\s+)?\S+\s+|merge\s+|rebase\s+)([A-Za-z][\w./-]*)"
)
_BRANCH_TEXT = re.compile(r"\b(?:on branch|branch)\s+[`'\"]?([A-Za-z][\w./-]*[\w])[`'\"]?", re.I)
_BRANCH_STOP = {"the", "a", "an", "is", "to", "and", "of", "name", "main?", "with", "that", "this"}
_IDENTIFIER_PATTERNS = (
    ("-", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")),
    ("://", re.compile(r"https?://[^\s)>\]'\"`]+")),
    ("v", re.compile(r"(?<![\w.])v\d+(?:\.\d+)+\b")),
    ("-", re.compile(r"(?<![\w/])[A-Z][A-Z0-9]{1,9}-\d+\b")),
    ("#", re.compile(r"(?<![\w&])#\d{1,6}\b")),
)
"""Each pattern with a substring every match contains: a text without it is not searched."""
_SHA = re.compile(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/-])")
_COMMIT_OUT = re.compile(r"^\[[\w./-]+(?: \(root-commit\))? ([0-9a-f]{7,40})\]", re.M)


def identifiers_in(text: str, *, commands: bool = False) -> list[str]:
    """Ids and branch names in ``text``, in order of appearance."""
    found: list[tuple[int, str]] = []
    for hint, pattern in _IDENTIFIER_PATTERNS:
        if hint in text:
            found.extend((m.start(), m.group(0).rstrip(".,;:")) for m in pattern.finditer(text))
    for m in _SHA.finditer(text):
        token = m.group(0)
        if any(c.isdigit() for c in token) and any(c.isalpha() for c in token):
            found.append((m.start(), token))
    branch = _BRANCH_CMD if commands else _BRANCH_TEXT
    for m in branch.finditer(text):
        name = m.group(1)
        if name.lower() not in _BRANCH_STOP and not name.startswith("-"):
            found.append((m.start(1), name))
    found.sort()
    return [t for _, t in found]


# --- decisions and steps -----------------------------------------------------------------

_DECISION = re.compile(
    r"\b(instead|because|decid\w*|chose|choose|going with|i'?ll use|i will use|we'?ll use|switch(?:ing)? to|"
    r"root cause|the (?:issue|problem|bug) (?:is|was)|the fix is|approach|rather than)\b",
    re.I,
)
_WHY = re.compile(r"\b(because|since|so that|as)\b\s+(.*)$", re.I)
_NEXT = re.compile(r"^(next[,:]?\s|next step|then i|now i need to|todo[:\s]|remaining[:\s]|still need)", re.I)
_NEXT_ANYWHERE = re.compile(r"\b(next|then i|now i need to|todo|remaining|still need)", re.I)
"""Where :data:`_NEXT` can match a sentence's start: a text without it has no "next" sentence."""
_TODO_TOOLS = {"todowrite", "update_plan", "todo_write"}


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision the agent stated, with its reason when the sentence gives one."""

    text: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    text: str
    status: str  # pending | in_progress | completed


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A failing tool result: where, which tool, its signature line, and whether a later retry succeeded."""

    index: int
    tool: str
    target: str
    signature: str
    text: str
    resolved: bool
    position: int = 0  # among all tool results of the session

    @property
    def label(self) -> str:
        """The signature, prefixed by the tool and its target when the signature alone is vague."""
        if len(self.signature.split()) >= 4 or not (self.tool or self.target):
            return self.signature
        return f"{self.tool} {self.target}".strip() + f": {self.signature}"


@dataclass(frozen=True, slots=True)
class Digest:
    """Everything the checkpoint builder and the retention audit read from a session."""

    instruction: str
    requests: tuple[str, ...]  # every user request, cleaned, in order
    constraints: tuple[str, ...]  # user constraint sentences, deduplicated, in order
    tools_used: tuple[str, ...]  # by number of calls, then name
    tool_call_count: int
    findings: tuple[tuple[str, str], ...]  # (tool and target, result text) of the last results, oldest first
    last_progress: str
    files_edited: tuple[str, ...]  # most recent last
    files_read: tuple[str, ...]  # most recent last
    edits_since_commit: int
    files_since_commit: tuple[str, ...]
    commit_seen: bool
    errors: tuple[ErrorEvent, ...]  # every failing result, in order
    tool_result_count: int
    decisions: tuple[Decision, ...]
    steps: tuple[Step, ...]  # from the latest todo / plan call
    next_steps: tuple[str, ...]  # from assistant text, when no todo list exists
    identifiers: tuple[str, ...]  # most recent last
    files_for_goal: tuple[str, ...] = ()  # read or edited since the latest request, most recent last
    first_message: int = 0  # the first message read (> 0 when the digest was bounded by max_chars)

    @property
    def working_files(self) -> tuple[str, ...]:
        """Files being worked on, most recent first: those read or edited for the current goal, then
        the other edited files."""
        goal = tuple(reversed(self.files_for_goal))
        seen = set(goal)
        return goal + tuple(f for f in reversed(self.files_edited) if f not in seen)

    @property
    def blocking_errors(self) -> tuple[ErrorEvent, ...]:
        """Errors no later retry of the same tool and target fixed, among the last
        ``BLOCKING_WINDOW`` tool results (older failures are stale, not blocking)."""
        first = self.tool_result_count - BLOCKING_WINDOW
        return tuple(e for e in self.errors if not e.resolved and e.position >= first)

    @property
    def completed(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.steps if s.status == "completed")

    @property
    def remaining(self) -> tuple[str, ...]:
        if self.steps:
            return tuple(s.text for s in self.steps if s.status != "completed")
        return self.next_steps

    @property
    def current_goal(self) -> str:
        for s in self.steps:
            if s.status == "in_progress":
                return s.text
        return self.requests[-1] if self.requests else self.instruction


def _dedupe_last(items: Iterable[str]) -> tuple[str, ...]:
    """Unique items ordered by their last occurrence."""
    order: dict[str, None] = {}
    for item in items:
        order.pop(item, None)
        order[item] = None
    return tuple(order)


def _unify_paths(paths: Sequence[str]) -> list[str]:
    """Relative paths replaced by the absolute path they abbreviate, when one is in the list (the
    first such path in list order). Candidates are found by file name, so this stays linear."""
    by_name: dict[str, list[str]] = {}
    for p in dict.fromkeys(paths):
        if p.startswith("/"):
            by_name.setdefault(p.rsplit("/", 1)[-1], []).append(p)
    out = []
    for p in paths:
        if not p.startswith("/"):
            tail = "/" + p.removeprefix("./")
            candidates = by_name.get(p.rsplit("/", 1)[-1], ())
            p = next((a for a in candidates if a.endswith(tail)), p)
        out.append(p)
    return out


def _dedupe_first(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _steps_from(call: ToolCall) -> tuple[Step, ...] | None:
    inp = call.input if isinstance(call.input, dict) else {}
    raw: Any = inp.get("todos", inp.get("plan"))
    if not isinstance(raw, list):
        return None
    steps = []
    for item in raw:
        if not isinstance(item, dict):
            continue
        text = item.get("content", item.get("step", ""))
        status = item.get("status", "pending")
        if isinstance(text, str) and text.strip():
            steps.append(Step(" ".join(text.split()), status if isinstance(status, str) else "pending"))
    return tuple(steps)


_READ_TOOLS = {"read", "view", "read_file", "cat", "open_file", "view_file", "notebookread"}


def files_read_by(call: ToolCall) -> list[str]:
    """Files a call reads: read tools' path, and what a shell command reads (``cat``, ``sed -n``,
    ``head`` ... as :mod:`ctxhealth.signals.calls` parses it)."""
    name = call.name.lower()
    if name in _READ_TOOLS:
        target = call_target(call)
        return [target] if target else []
    if tool_command(call):
        return list(parse_call(call).reads)
    return []


# --- one pass, in named steps -------------------------------------------------------------


def first_message_within(messages: Sequence[Message], max_chars: int) -> int:
    """The index of the oldest message such that it and every later one hold at most ``max_chars``
    characters of text and tool payload (walking back from the end; at least the last message)."""
    total = 0
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        size = len(m.text) + sum(len(r.text) for r in m.tool_results)
        size += sum(len(str(c.input)) for c in m.tool_calls)
        total += size
        if total > max_chars:
            return min(i + 1, len(messages) - 1)
    return 0


@dataclass(slots=True)
class _CallScan:
    """What the tool calls say: by id, counts, files edited and read, commits, the latest plan."""

    by_id: dict[str, ToolCall]
    counts: Counter[str]
    edited: list[str]
    read: list[str]
    for_goal: list[str]
    edits_since_commit: int = 0
    since_commit: list[str] | None = None
    commit_seen: bool = False
    steps: tuple[Step, ...] = ()


def _scan_calls(messages: Sequence[Message], goal_from: int, ids: list[str]) -> _CallScan:
    """Every tool call once: files it edits or reads (those at or after ``goal_from`` also count for
    the current goal), commits, todo lists; identifiers of shell commands go to ``ids``."""
    scan = _CallScan({}, Counter(), [], [], [], since_commit=[])
    since: list[str] = []
    for i, call in _iter_calls(messages):
        scan.by_id[call.id] = call
        scan.counts[call.name] += 1
        paths = edited_paths(call)
        if paths:
            scan.edited.extend(paths)
            scan.edits_since_commit += 1
            since.extend(paths)
        else:
            paths = files_read_by(call)
            scan.read.extend(paths)
        if i >= goal_from:
            scan.for_goal.extend(paths)
        command = tool_command(call)
        if "git commit" in command:
            scan.commit_seen = True
            scan.edits_since_commit = 0
            since = []
        if command:
            ids.extend(identifiers_in(command, commands=True))
        found = _steps_from(call) if call.name.lower() in _TODO_TOOLS else None
        if found is not None:
            scan.steps = found
    scan.since_commit = since
    return scan


def _scan_results(
    results: Sequence[tuple[int, ToolResult]], calls: dict[str, ToolCall], ids: list[str]
) -> list[ErrorEvent]:
    """Every failing result, each marked resolved when a later result of the same tool and target
    succeeded: one backward pass (the successes seen so far are the later ones), then in order.
    Commit hashes printed by ``git commit`` go to ``ids``."""
    later_success: set[tuple[str, str]] = set()
    found: list[ErrorEvent] = []
    for pos in range(len(results) - 1, -1, -1):
        i, r = results[pos]
        origin = calls.get(r.tool_call_id)
        name = origin.name if origin else "tool"
        target = call_target(origin) if origin else ""
        if not is_failure(r):
            if origin is not None:
                later_success.add((name, target))
            continue
        resolved = (name, target) in later_success
        text = clean_tool_text(r.text)
        found.append(ErrorEvent(i, name, target, error_signature(text), text, resolved, pos))
    for _, r in results:
        origin = calls.get(r.tool_call_id)
        if origin is not None and "git commit" in tool_command(origin) and not is_failure(r):
            ids.extend(_COMMIT_OUT.findall(r.text))
    found.reverse()
    return found


def _scan_assistant(messages: Sequence[Message], ids: list[str]) -> tuple[str, list[Decision], list[str]]:
    """Last progress, decisions and "next ..." sentences from assistant text; its ids go to ``ids``."""
    decisions: list[Decision] = []
    next_steps: list[str] = []
    last = ""
    for m in messages:
        if m.role is not Role.ASSISTANT:
            continue
        text = m.text
        if not text.strip():
            continue
        last = text
        if _DECISION.search(text) is None and _NEXT_ANYWHERE.search(text) is None:
            ids.extend(identifiers_in(text))
            continue  # no sentence of it can state a decision or a next step
        for s in sentences(text):
            if _DECISION.search(s):
                why = _WHY.search(s)
                decisions.append(Decision(s, why.group(2) if why else ""))
            if _NEXT.search(s):
                next_steps.append(s)
        ids.extend(identifiers_in(text))
    return " ".join(last.split()), decisions, next_steps


def _iter_calls(messages: Sequence[Message]) -> Iterator[tuple[int, ToolCall]]:
    for i, m in enumerate(messages):
        for c in m.tool_calls:
            yield i, c


def digest(session: Session, *, max_chars: int | None = None) -> Digest:
    """Read everything recovery needs from ``session`` in one pass per concern, each linear in the
    messages read (no joins between them: results find their call by id, a failure finds a later
    success of the same tool and target in a set).

    ``max_chars`` bounds the work for a caller with a time budget (a PreCompact hook on a very long
    transcript): only the latest messages holding at most that many characters of text and tool
    payload are read (``first_message`` says where that starts), plus the person's requests, which
    are read from the whole session (they are short and they are the task). Without it the whole
    session is read. Deterministic: same session, same bound, same digest.
    """
    messages = session.messages
    start = first_message_within(messages, max_chars) if max_chars is not None else 0
    request_at = [i for i, m in enumerate(messages) if is_user_request(m)]
    requests = [clean_user_text(messages[i].text) for i in request_at]
    constraints = _dedupe_first(s for r in requests for s in constraint_sentences(r))
    recent = messages[start:]
    goal_from = max(0, (request_at[-1] if request_at else 0) - start)
    ids: list[str] = []
    calls = _scan_calls(recent, goal_from, ids)
    results = [(start + i, r) for i, m in enumerate(recent) for r in m.tool_results]
    errors = _scan_results(results, calls.by_id, ids)
    findings = tuple(
        (_finding_source(calls.by_id.get(r.tool_call_id)), clean_tool_text(r.text)) for _, r in results[-5:]
    )
    last_progress, decisions, next_steps = _scan_assistant(recent, ids)
    for request in requests:
        ids.extend(identifiers_in(request))
    return Digest(
        instruction=requests[0] if requests else "",
        requests=tuple(requests),
        constraints=constraints,
        tools_used=tuple(name for name, _ in sorted(calls.counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        tool_call_count=sum(calls.counts.values()),
        findings=findings,
        last_progress=last_progress,
        files_edited=_dedupe_last(_unify_paths(calls.edited)),
        files_read=_dedupe_last(calls.read),
        edits_since_commit=calls.edits_since_commit,
        files_since_commit=_dedupe_last(_unify_paths(calls.since_commit or [])),
        commit_seen=calls.commit_seen,
        errors=tuple(errors),
        tool_result_count=len(results),
        decisions=tuple({d.text: d for d in decisions}.values()),
        steps=calls.steps,
        next_steps=_dedupe_last(next_steps),
        identifiers=_dedupe_last(ids),
        files_for_goal=_dedupe_last(_unify_paths(calls.for_goal)),
        first_message=start,
    )
