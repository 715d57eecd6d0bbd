"""The truth of a conformance run (from a fake server's log) and ctxhealth's reading of what the agent wrote.

:func:`truth_of` turns a fake server's log into the figures a test compares: ordinary model turns,
compactions, the fill each request reported (peak over the ordinary turns; each compaction's own prompt),
the failed tool calls the script asked for, and the cost at the registry's prices of every request the
server billed (compactions included). :func:`check_json` runs ``ctxhealth check --json`` on a file the
agent wrote.

:func:`record` keeps the agent's log and the truth as a regression fixture under
``tests/fixtures/agents/<agent>-<version>/<scenario>/`` when ``CTXHEALTH_RECORD_FIXTURES=1`` (recording is
explicit: fixtures never change as a side effect of a test run).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from conftest import invoke
from ctxhealth.accounting.cost import usage_cost
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.model import Usage

from .fake_http import Exchange

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"


@functools.cache
def cli_version(name: str) -> str:
    """The version of agent CLI ``name`` (the last version number its ``--version`` prints: an older
    CLI may print a warning after it), asked once per test run: a node CLI takes seconds to start."""
    from .agents import agent_or_skip, agent_version

    said = agent_version(agent_or_skip(name))
    numbers = re.findall(r"\b\d+\.\d+\.\d+\b", said)
    return numbers[-1] if numbers else said.split()[-1]


RECORD_ENV = "CTXHEALTH_RECORD_FIXTURES"


@dataclass
class Truth:
    """What the server saw and billed."""

    turns: int
    compactions: int
    peak_fill: int
    compaction_fills: list[int]
    failures: int
    cost_usd: float
    unlogged_cost_usd: float = 0.0
    """What the server billed for requests the agent's log does not account for (Gemini CLI's router)."""
    fills: list[int] = field(default_factory=list)
    model: str = ""
    billed: list[dict[str, Any]] = field(default_factory=list)
    """Every billed request: ``{model, usage, logged}`` (``logged``: the agent's log accounts for it), so a
    recorded truth is priced when it is read (:meth:`priced`), at the prices the registry has then."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def priced(self) -> Truth:
        """This truth with its costs at today's prices (a recording keeps usage, not prices that change)."""
        if not self.billed:
            return self
        cost = sum(request_cost(b["model"], b["usage"]) for b in self.billed if b["logged"])
        other = sum(request_cost(b["model"], b["usage"]) for b in self.billed if not b["logged"])
        return replace(self, cost_usd=round(cost, 6), unlogged_cost_usd=round(other, 6))


def request_cost(model: str, usage: dict[str, int]) -> float:
    """USD of one logged request at the registry's prices for ``model``."""
    prices = ModelRegistry.default().lookup(model).prices
    assert prices is not None, f"no prices for {model}"
    billed = Usage(
        input_tokens=usage["input"] - usage["cached"],
        cache_read_tokens=usage["cached"],
        output_tokens=usage["output"],
        reasoning_tokens=usage.get("reasoning", 0),
    )
    return usage_cost(billed, prices)


def truth_of(
    log: list[Exchange],
    model: str,
    *,
    failures: int,
    logged: tuple[str, ...] = ("turn", "compaction"),
    compaction_fill: str = "request",
) -> Truth:
    """The figures of a run from the server's log; ``failures`` is what the script made fail.

    Consecutive compaction requests are one compaction (Gemini CLI asks for a summary, then checks it).
    ``logged``: the kinds of request the agent's own log accounts for (their cost is the truth's cost; the
    rest is ``unlogged_cost_usd``). ``compaction_fill``: a compaction's fill is its own request's prompt
    (``request``, Codex) or the last turn's before it (``last_turn``, what Gemini CLI measures).
    """
    billed = [e for e in log if e.kind in ("turn", "compaction", "router") and e.usage]
    turns = [e for e in billed if e.kind == "turn"]
    compaction_fills: list[int] = []
    last_turn = 0
    previous = ""
    for e in billed:
        if e.kind == "turn":
            last_turn = e.usage["input"]
        elif e.kind == "compaction" and previous != "compaction":
            compaction_fills.append(e.usage["input"] if compaction_fill == "request" else last_turn)
        if e.kind != "router":
            previous = e.kind
    return Truth(
        turns=len(turns),
        compactions=len(compaction_fills),
        peak_fill=max((e.usage["input"] for e in turns), default=0),
        compaction_fills=compaction_fills,
        failures=failures,
        cost_usd=round(sum(request_cost(e.model or model, e.usage) for e in billed if e.kind in logged), 6),
        unlogged_cost_usd=round(
            sum(request_cost(e.model or model, e.usage) for e in billed if e.kind not in logged), 6
        ),
        fills=[e.usage["input"] for e in turns],
        model=model,
        billed=[{"model": e.model or model, "usage": e.usage, "logged": e.kind in logged} for e in billed],
    )


def check_json(path: Path, *extra: str) -> dict[str, Any]:
    """``ctxhealth check --json PATH``'s document (exit 0 or 1; anything else fails the test)."""
    done = invoke(["check", "--json", *extra, str(path)])
    assert done.exit_code in (0, 1), done.output
    value: dict[str, Any] = json.loads(done.stdout)
    return value


def assert_matches(figures: dict[str, Any], truth: Truth) -> None:
    """ctxhealth's ``check --json`` figures equal the server's truth."""
    seen = {
        "turns": figures["turns"],
        "compactions": len(figures["compactions"]),
        "peak_fill": figures["fill"]["peak"],
        "compaction_fills": [c["pre_tokens"] for c in figures["compactions"]],
        "failures": figures["tool_errors"],
        "cost_usd": round(figures["cost_usd"] or 0.0, 6),
    }
    expected = {k: getattr(truth, k) for k in seen}
    differ = {k: (seen[k], expected[k]) for k in seen if seen[k] != expected[k]}
    assert not differ, f"ctxhealth read (left) against the server's log (right): {differ}"


def recording() -> bool:
    """True when this run records fixtures (``CTXHEALTH_RECORD_FIXTURES=1``)."""
    return os.environ.get(RECORD_ENV) == "1"


def record(
    agent: str, version: str, scenario: str, files: dict[str, Path], truth: Truth, *, scratch: Path
) -> None:
    """Keep ``files`` (name in the fixture -> file the agent wrote) and the truth, when recording; the
    scratch directory's path is written as ``/tmp/conformance`` (no machine's paths in fixtures)."""
    if not recording():
        return
    folder = FIXTURES / f"{agent}-{version}" / scenario
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, source in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes().replace(str(scratch).encode(), b"/tmp/conformance")
        target.write_bytes(data)
    (folder / "truth.json").write_text(json.dumps(truth.to_json(), indent=2) + "\n", "utf-8")
