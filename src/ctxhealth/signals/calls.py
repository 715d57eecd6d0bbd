"""What a tool call does, read from its name and input: reads, edits, deletions, searches, checks.

One parser shared by the repetition, indicator and fidelity detectors, so they agree on what a
"read" or an "edit" is. It understands structured tools (Read / Edit / Write / MultiEdit / Grep /
Glob / apply_patch ...) and shell commands (``bash`` / ``shell`` tools, mini-swe-agent actions):
``cat``/``nl``/``head``/``sed -n`` read, ``sed -i``/redirections/``tee``/heredocs edit, ``rm``
deletes, ``grep``/``find``/``ls`` search, test runners / builds / linters verify. It is a heuristic
on purpose: cheap, deterministic, and wrong only in the direction of "other".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum
from functools import cache
from typing import Any

import msgspec

from ctxhealth.lazy import pattern
from ctxhealth.model import ToolCall, ToolResult
from ctxhealth.native import KERNELS
from ctxhealth.signals.base import key_hash, matches_at_anchors, spaced_hash


class CallKind(StrEnum):
    READ = "read"
    EDIT = "edit"
    DELETE = "delete"
    SEARCH = "search"
    VERIFY = "verify"
    OTHER = "other"


class CallInfo(msgspec.Struct, frozen=True):
    """A parsed tool call: its key (a stable digest of tool + normalised input), its kinds and the
    paths involved."""

    key: int
    tool: str
    kinds: frozenset[CallKind]
    reads: tuple[str, ...] = ()
    edits: tuple[str, ...] = ()
    deletes: tuple[str, ...] = ()
    mentions: tuple[str, ...] = ()
    change: tuple[str, str] | None = None
    runs: tuple[str, ...] = ()
    """Files a shell command runs: an executed script (``./build.sh``) or the script or path given to
    an interpreter or test runner (``python repro.py``, ``pytest tests/test_x.py``)."""


SHELL_PARSE_LIMIT = 4000
"""Only the first characters of a shell command are parsed (heredoc bodies are data anyway)."""
SHELL_HEAD = 600
SHELL_TAIL = 200
"""A longer command is read at its head (verbs, paths) and its tail (a final ``> file``)."""

_READ_TOOLS = {"read", "view", "read_file", "open_file", "view_file", "notebookread"}
_EDIT_TOOLS = {
    "edit",
    "multiedit",
    "write",
    "notebookedit",
    "str_replace_editor",
    "create_file",
    "write_file",
}
_SEARCH_TOOLS = {"grep", "glob", "ls", "search", "find", "list_dir", "websearch", "webfetch"}
_SHELL_TOOLS = {"bash", "shell", "exec_command", "run_command", "terminal", "execute_command", "local_shell"}

_PATH = re.compile(r"(?<![\w$])(?:\.{0,2}/)?(?:[\w.+-]+/)*[\w+-][\w.+-]*\.[A-Za-z][\w]{0,7}\b")
_REDIRECT = re.compile(r">(?<![0-9&<]>)>?\s*([^\s;&|<>]+)")
"""``>`` or ``>>`` not after a digit, ``&`` or ``<``, then the target (starts with the literal ``>``
so the engine jumps from one ``>`` to the next)."""
_VERIFY_SOURCE = (
    # every alternative starts with one of these letters: the lookahead lets the engine skip the rest
    r"(?=[cefgjmnprtuvy])\b(pytest|py\.test|runtests(?:\.py)?|unittest|tox|nox|"
    r"cargo (?:test|check|build|clippy)|"
    r"go (?:test|vet|build)|"
    r"(?:npm|yarn|pnpm) (?:run )?(?:test|build|lint)|jest|vitest|mvn|gradle|ctest|make(?: \w+)?|mypy|ruff|"
    r"flake8|pylint|tsc|eslint|python[\d.]* -m (?:pytest|unittest|compileall|py_compile)|"
    r"python[\d.]* \S*(?:test|repro|reproduce|verify|check)\w*\.py)\b"
)
_VERIFY_HINTS = (
    "test",
    "tox",
    "nox",
    "cargo",
    "go ",
    "npm",
    "yarn",
    "pnpm",
    "jest",
    "mvn",
    "gradle",
    "make",
    "mypy",
    "ruff",
    "flake8",
    "pylint",
    "tsc",
    "eslint",
    "python",
    "repro",
    "check",
    "verify",
)
_VERIFY_HINT = "|".join(map(re.escape, _VERIFY_HINTS))
"""The hints as one pattern: faster than substring tests on a short command, slower on a long one
(compiled on first use: with the C kernels the gate is :func:`_hinted` in C and never needs it)."""


def _hinted_py(probe: str) -> bool:
    """Whether ``probe`` holds one of :data:`_VERIFY_HINTS` (the definition)."""
    return pattern(_VERIFY_HINT).search(probe) is not None


_hinted: Callable[[str], bool] = _hinted_py
"""The hint gate: :func:`_hinted_py`, or the same substring test in C (one pass by first letters)."""
if KERNELS is not None:
    _any_in: Callable[[str, tuple[str, ...]], bool] = KERNELS.any_in

    def _hinted(probe: str) -> bool:
        return _any_in(probe, _VERIFY_HINTS)


_SED_SUB_SOURCE = r"s([/|#,])((?:\\.|(?!\1).)*)\1((?:\\.|(?!\1).)*)\1"
_PATCH_FILE_SOURCE = r"^\*\*\* (?:Update|Add|Delete) File: (.+)$"
_READ_VERBS = {"cat", "nl", "head", "tail", "less", "more", "bat", "view"}
_SEARCH_VERBS = {"grep", "rg", "ag", "find", "ls", "tree", "git", "fd", "locate", "which"}
_PATH_VERBS = frozenset({"sed", "perl", "tee", "rm", *_READ_VERBS})
_RUNNERS = frozenset(
    {"python", "python2", "python3", "node", "bash", "sh", "zsh", "ruby", "perl", "php", "deno", "bun",
     "pytest", "py.test", "go", "tsx", "ts-node", "Rscript", "julia", "lua"}
)  # fmt: skip
"""Verbs whose first path argument is the script or file they run."""
"""The verbs whose arguments are read as paths (every other verb only sets the command's kind)."""
_LEAD_WORDS = frozenset({*_PATH_VERBS, "git", "patch", *_SEARCH_VERBS, *_RUNNERS})
"""First words the segment loop acts on: with no ``=`` or ``/`` in it (then the word is its verb)
and not ``python...``, any other first word is skipped by every branch of the loop."""


def _command_text(value: Any) -> str:
    if isinstance(value, dict):
        for key in ("command", "cmd", "script", "input"):
            if key in value:
                return _command_text(value[key])
        return ""
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value]
        if len(parts) >= 3 and parts[0] in {"bash", "sh", "zsh"} and parts[1] in {"-lc", "-c"}:
            return parts[2]
        return " ".join(parts)
    return value if isinstance(value, str) else ""


def _segments(command: str) -> list[str]:
    """The simple commands of a command line, split at ``&&``, ``||``, ``;``, ``|`` and newlines
    (plain string replacements: the same pieces as a regex split, cheaper on long commands)."""
    return _separated(command).split("\n")


def _separated(command: str) -> str:
    """``command`` with each separator of :func:`_segments` a newline (its segments are its lines)."""
    if "&" in command:
        command = command.replace("&&", "\n")
    if "|" in command:
        command = command.replace("||", "\n").replace("|", "\n")
    if ";" in command:
        command = command.replace(";", "\n")
    return command


def _lead_segments_py(lines: str, lead: frozenset[str]) -> list[tuple[str, str]]:
    """Each line of ``lines`` (the segments, see :func:`_separated`) whose first word makes its other
    words matter to the parse, with that word: one holding ``=`` or ``/``, one starting with
    ``python`` or one of ``lead`` (:data:`_LEAD_WORDS`). Any other first word is its segment's verb,
    and no branch of the parse reads such a segment (most lines of a quoted payload)."""
    out = []
    for segment in lines.split("\n"):
        first = segment.split(None, 1)
        if not first:
            continue
        word = first[0]
        if "=" in word or "/" in word or word in lead or word.startswith("python"):
            out.append((segment, word))
    return out


_lead_segments: Callable[[str, frozenset[str]], list[tuple[str, str]]] = _lead_segments_py
"""The segments the shell parse reads: :func:`_lead_segments_py`, or the same in C (one pass over
the lines, no list of segments, no split of the ones passed over)."""
if KERNELS is not None:
    _lead_segments = KERNELS.lead_segments


def _parse_shell(
    command: str, runs: list[str] | None = None
) -> tuple[set[CallKind], list[str], list[str], list[str], tuple[str, str] | None]:
    """Kinds, reads, edits, deletes and a ``sed`` substitution of a shell command; the files it runs
    (see :attr:`CallInfo.runs`) are appended to ``runs`` when given."""
    kinds: set[CallKind] = set()
    reads: list[str] = []
    edits: list[str] = []
    deletes: list[str] = []
    change: tuple[str, str] | None = None
    # A heredoc's body is data, not commands: keep only the line that opens it. Long commands are
    # mostly payload (a quoted file body): read their head, and their tail for a final redirection.
    head = command.split("\n", 1)[0] if "<<" in command else command
    probes = [head]
    if len(head) > SHELL_HEAD:
        probes = [head[:SHELL_HEAD], head[-SHELL_TAIL:]]
        head = head[:SHELL_HEAD]
    for probe in probes:
        if ">" not in probe:
            continue
        for target in _REDIRECT.findall(probe):
            if target not in {"/dev/null", "&1", "&2"} and not target.startswith("/dev/"):
                edits.append(target)
    # most segments of a long command are lines of a quoted payload: the first word decides whether
    # any other word matters, so only those segments are visited, and split whole only then
    for segment, word in _lead_segments(_separated(head), _LEAD_WORDS):
        words: list[str] | None = None
        if "=" in word and not word.startswith("-"):
            words = segment.split()
            while words and ("=" in words[0] and not words[0].startswith("-")):
                words = words[1:]
            if not words:
                continue
            word = words[0]
        verb = word[word.rfind("/") + 1 :]
        if verb not in _PATH_VERBS:
            # no path argument matters for this verb: only the kind of command (lines of a quoted
            # payload land here, so their words are never matched against the path pattern)
            if verb == "git":
                second = words if words is not None else segment.split(None, 2)
                kinds.add(
                    CallKind.EDIT
                    if len(second) > 1 and second[1] in {"apply", "checkout"}
                    else CallKind.SEARCH
                )
            elif verb == "patch":
                kinds.add(CallKind.EDIT)
            elif verb in _SEARCH_VERBS:
                kinds.add(CallKind.SEARCH)
            elif runs is not None and "." in segment and _may_run(word, verb):
                _add_run_target(words if words is not None else segment.split(), verb, runs)
            continue
        if words is None:
            words = segment.split()
        args = [w.strip("'\"") for w in words[1:] if not w.startswith("-")]
        paths = [a for a in args if "." in a and _PATH.fullmatch(a)]
        if verb == "sed" and any(w.startswith("-i") for w in words[1:]):
            edits.extend(paths)
            m = _re("_SED_SUB").search(segment)
            if m:
                change = (m.group(2), m.group(3))
        elif verb in {"perl"} and any(w.startswith("-pi") or w.startswith("-i") for w in words[1:]):
            edits.extend(paths)
        elif verb == "sed" or (verb in _READ_VERBS and ">" not in segment):
            reads.extend(paths)
        elif verb == "tee":
            edits.extend(paths)
        elif verb == "rm":
            deletes.extend(args)
        elif verb in {"patch"} or (verb == "git" and len(words) > 1 and words[1] in {"apply", "checkout"}):
            kinds.add(CallKind.EDIT)
        elif verb in _SEARCH_VERBS:
            kinds.add(CallKind.SEARCH)
    # a check may follow a heredoc or a long payload: look at the command's start and its end
    probe = (
        command
        if len(command) <= SHELL_HEAD + SHELL_TAIL
        else f"{command[:SHELL_HEAD]}\n{command[-SHELL_TAIL:]}"
    )
    # a long probe goes straight to the anchors: each of them holds one of the hints, so the hint
    # gate could only say yes where an anchor is found anyway
    if (len(probe) >= 256 or _hinted(probe)) and _verifies(probe):
        kinds.add(CallKind.VERIFY)
    return kinds, reads, edits, deletes, change


_VERIFY_ANCHORS = (
    "pytest",
    "py.test",
    "runtests",
    "unittest",
    "tox",
    "nox",
    "cargo ",
    "go ",
    "npm ",
    "yarn ",
    "pnpm ",
    "jest",
    "vitest",
    "mvn",
    "gradle",
    "ctest",
    "make",
    "mypy",
    "ruff",
    "flake8",
    "pylint",
    "tsc",
    "eslint",
    "python",
)
"""Every match of :data:`_VERIFY` starts with one of these (one per alternative)."""


def _verifies(probe: str) -> bool:
    """``_VERIFY.search(probe)`` is not None, trying the pattern only where an anchor occurs (a
    ``match`` at a position sees the text before it, as a search does); short probes are searched."""
    pattern = _re("_VERIFY")
    if len(probe) < 256:
        return pattern.search(probe) is not None
    return matches_at_anchors(pattern.match, probe, _VERIFY_ANCHORS)


def _may_run(first: str, verb: str) -> bool:
    """Whether :func:`_add_run_target` can find anything in a simple command starting with ``first``
    (whose verb is ``verb``): an executed script or an interpreter or test runner."""
    return (
        ("/" in first and "." in verb)
        or verb in _RUNNERS
        or (verb.startswith("python") and verb[6:].replace(".", "").isdigit())
    )


def _add_run_target(words: list[str], verb: str, runs: list[str]) -> None:
    """The file a simple command runs: an executed script (``./build.sh``) or the first path given to
    an interpreter or test runner (``python repro.py``, ``pytest tests/test_x.py``)."""
    first = words[0]
    if "/" in first and "." in verb and _PATH.fullmatch(first):
        runs.append(first)
    elif verb in _RUNNERS or (verb.startswith("python") and verb[6:].replace(".", "").isdigit()):
        for word in words[1:]:
            arg = word.strip("'\"")
            if not word.startswith("-") and "." in arg and _PATH.fullmatch(arg):
                runs.append(arg)
                return


def parse_call(call: ToolCall) -> CallInfo:
    """Classify one tool call. Never raises: unknown shapes become :attr:`CallKind.OTHER`."""
    name = call.name
    lname = name.lower()
    value = call.input
    kinds: set[CallKind]
    reads: list[str] = []
    edits: list[str] = []
    deletes: list[str] = []
    change: tuple[str, str] | None = None
    runs: list[str] = []
    if lname in _SHELL_TOOLS:
        # the usual shell input, ``{"command": "..."}``, without the general walk
        raw = value.get("command") if type(value) is dict else None
        command = raw if type(raw) is str else _command_text(value)
        key = spaced_hash(f"{name}:", command)
        kinds, reads, edits, deletes, change = _parse_shell(command[:SHELL_PARSE_LIMIT], runs)
    else:
        key = key_hash(f"{name}:", value)
        kinds = set()
        path = ""
        if isinstance(value, dict):
            raw = value.get("file_path") or value.get("path") or value.get("notebook_path") or ""
            path = raw if isinstance(raw, str) else ""
        if lname in _READ_TOOLS and path:
            reads.append(path)
        elif lname in _EDIT_TOOLS and path:
            edits.append(path)
            if isinstance(value, dict) and isinstance(value.get("old_string"), str):
                change = (value["old_string"], str(value.get("new_string", "")))
        elif lname == "apply_patch":
            text = _command_text(value) if not isinstance(value, str) else value
            edits.extend(_re("_PATCH_FILE").findall(text))
        elif lname in _SEARCH_TOOLS:
            kinds.add(CallKind.SEARCH)
    # most calls touch one list or none: empty ones are the shared empty tuple, a lone list is its
    # own mentions
    read_paths = tuple(dict.fromkeys(reads)) if reads else ()
    edit_paths = tuple(dict.fromkeys(edits)) if edits else ()
    if reads:
        kinds.add(CallKind.READ)
    if edits:
        kinds.add(CallKind.EDIT)
    if deletes:
        kinds.add(CallKind.DELETE)
    return CallInfo(
        key=key,
        tool=name,
        kinds=frozenset(kinds) if kinds else _OTHER,
        reads=read_paths,
        edits=edit_paths,
        deletes=tuple(dict.fromkeys(deletes)) if deletes else (),
        mentions=(tuple(dict.fromkeys(reads + edits)) if edits else read_paths) if reads else edit_paths,
        change=change,
        runs=tuple(dict.fromkeys(runs)) if runs else (),
    )


_OTHER = frozenset({CallKind.OTHER})


_SIGNATURE_SOURCE = r"^\s*(\w*(?:Error|Exception)\b.*|error: .*|.*command not found.*|.*No such file.*)$"
_SIGNATURE_LINE_SOURCE = r"\s*(\w*(?:Error|Exception)\b.*|error: .*|.*command not found.*|.*No such file.*)$"
""":data:`_SIGNATURE` for one line (no newline inside)."""
_SIGNATURE_HINTS = ("Error", "Exception", "error: ", "command not found", "No such file")
_NUMBERS_SOURCE = r"\d+"

# Patterns only some calls or results need, compiled on first use (a hook process sees one turn);
# the module attributes of the same names (``calls._VERIFY``) give the compiled patterns too.
_LAZY: dict[str, tuple[str, int]] = {
    "_VERIFY": (_VERIFY_SOURCE, 0),
    "_SED_SUB": (_SED_SUB_SOURCE, 0),
    "_PATCH_FILE": (_PATCH_FILE_SOURCE, re.M),
    "_SIGNATURE": (_SIGNATURE_SOURCE, re.M),
    "_SIGNATURE_LINE": (_SIGNATURE_LINE_SOURCE, 0),
    "_NUMBERS": (_NUMBERS_SOURCE, 0),
}


@cache
def _re(name: str) -> re.Pattern[str]:
    source, flags = _LAZY[name]
    return re.compile(source, flags)


def __getattr__(name: str) -> re.Pattern[str]:
    if name in _LAZY:
        return _re(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def error_signature(result: ToolResult) -> str:
    """A short, number-free form of the error, so "the same mistake" can be recognised; ``""`` when the
    output holds no error line. A signature comes from the error or there is none: the last output line
    is no stand-in (three different LaTeX failures all end "Transcript written on x.log.")."""
    text = result.text
    probe = text if len(text) <= 4000 else text[:1000] + "\n" + text[-3000:]
    found = _last_signature_line(probe)
    return "" if found is None else _re("_NUMBERS").sub("N", found.strip())[:160]


def _last_signature_line(probe: str) -> str | None:
    """The last line matching :data:`_SIGNATURE_LINE` (leading whitespace dropped): the same line
    ``_SIGNATURE.findall(probe)[-1]`` gives. Only a line holding one of :data:`_SIGNATURE_HINTS`
    can match: they are found from the end with ``rfind`` (a hint never spans a newline), so the
    lines without one are never split out or looked at (a 20-line output cost ~16 µs line by line)."""
    rfind = probe.rfind
    end = len(probe)
    while True:
        at = max([rfind(h, 0, end) for h in _SIGNATURE_HINTS])
        if at < 0:
            return None
        start = rfind("\n", 0, at) + 1
        stop = probe.find("\n", at)
        m = _re("_SIGNATURE_LINE").match(probe, start, len(probe) if stop < 0 else stop)
        if m is not None:
            return m.group(1)
        if start == 0:
            return None
        # the lines before this one: a hint must end before its newline
        end = start - 1
