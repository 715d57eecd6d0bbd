"""The four tools an agent calls on itself, as plain functions (no MCP import): each returns a
:class:`ToolOutput`, a JSON document plus the text a model reads, or raises a
:class:`~ctxhealth.errors.CtxHealthError` whose ``render()`` is the CLI's fix-it line.

Each tool is the library call its CLI command makes, so the two never disagree:

* :func:`context_health` is ``ctxhealth check --json`` on one session (``check_session``);
* :func:`write_checkpoint` is ``ctxhealth checkpoint --json`` (``write_transcript_checkpoint``);
* :func:`task_state` is ``ctxhealth state status|ensure|checkpoint --json`` (the same store, startup
  rules and pressure gate, with their ``STATUS:*`` signal);
* :func:`recovery_plan` runs ``ctxhealth recover``'s strategies and reports what each would keep,
  without handing a rewritten context back: the agent decides.

Everything returned passes through :func:`ctxhealth.redact.scrub`, as everything ctxhealth writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxhealth.config import Settings
from ctxhealth.errors import LedgerError, UsageError
from ctxhealth.mcpserver.sessions import Host, find_transcript
from ctxhealth.model import Session
from ctxhealth.redact import scrub

__all__ = [
    "RECOVERY_STRATEGIES",
    "SCHEMA_VERSION",
    "TASK_STATE_ACTIONS",
    "ToolContext",
    "ToolOutput",
    "context_health",
    "read_latest",
    "recovery_plan",
    "task_state",
    "write_checkpoint",
]

SCHEMA_VERSION = 1
TASK_STATE_ACTIONS = ("status", "ensure", "update")
RECOVERY_STRATEGIES = ("truncate", "restart", "reanchor", "clear")
KEPT_SHOWN = 12
"""Messages of a recovered context listed (role, size, opening words) in a recovery plan."""
PREVIEW_CHARS = 160


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What every tool call needs: the host (to find the session), the task-state root, the
    ledger's home and the settings (model registry, policy profile)."""

    host: Host
    root: Path
    home: Path
    settings: Settings


@dataclass(frozen=True, slots=True)
class ToolOutput:
    structured: dict[str, Any]
    text: str
    transcript: Path | None = field(default=None)


def _read(ctx: ToolContext, path: str | None, session_id: str | None) -> tuple[Path, Session]:
    from ctxhealth.sources.reader import read_session

    transcript = find_transcript(ctx.host, path=path, session_id=session_id)
    return transcript, read_session(transcript)


def _assess(ctx: ToolContext, session: Session) -> dict[str, Any]:
    from ctxhealth.policy.profile import resolve_profile
    from ctxhealth.report.assessed import check_session

    settings = ctx.settings
    profile = resolve_profile(settings.profile, settings.profile_overrides)
    report: dict[str, Any] = scrub(
        check_session(session, registry=settings.registry(), profile=profile, model=settings.model)
    )
    return report


def context_health(ctx: ToolContext, *, path: str | None = None, session_id: str | None = None) -> ToolOutput:
    """The session's assessment: the object ``ctxhealth check --json`` prints for it."""
    from ctxhealth.report.check_report import render_check_text

    transcript, session = _read(ctx, path, session_id)
    report = _assess(ctx, session)
    return ToolOutput(report, scrub(render_check_text(report)), transcript)


def _open_ledger(home: Path) -> tuple[Any, str]:
    from ctxhealth.state.ledger import Ledger

    try:
        return Ledger.open(home), ""
    except LedgerError as exc:
        return None, f"ledger unavailable, not recorded: {exc.render()}"


def write_checkpoint(
    ctx: ToolContext,
    *,
    path: str | None = None,
    session_id: str | None = None,
    budget_tokens: int = 500,
) -> ToolOutput:
    """Write a checkpoint of the session under the state root (the writer of ``ctxhealth checkpoint``)."""
    from ctxhealth.state.checkpoint import write_transcript_checkpoint
    from ctxhealth.state.store import StateStore

    if budget_tokens < 50:
        raise UsageError(f"budget must be at least 50 tokens (got {budget_tokens})", hint="try 500")
    transcript, session = _read(ctx, path, session_id)
    ledger, ledger_note = _open_ledger(ctx.home)
    try:
        files = write_transcript_checkpoint(
            StateStore(ctx.root), session, budget_tokens=budget_tokens, ledger=ledger
        )
    finally:
        if ledger is not None:
            ledger.close()
    markdown = files.markdown_path.read_text(encoding="utf-8")
    doc = {"schema_version": SCHEMA_VERSION, **files.to_dict(), "markdown": markdown}
    if ledger_note:
        doc["warning"] = ledger_note
    over = " (over budget: never-drop content exceeds it)" if files.over_budget else ""
    text = (
        f"checkpoint written: {files.json_path}\nmarkdown: {files.markdown_path}\n"
        f"tokens: {files.tokens} / {files.budget_tokens}{over}\n\n{markdown}"
    )
    return ToolOutput(scrub(doc), scrub(text), transcript)


def _status_text(status_line: str, payload: Mapping[str, Any]) -> str:
    lines = [status_line, str(payload.get("detail", ""))]
    lines += [f"reason: {r}" for r in payload.get("reasons", ())]
    for key in ("checkpoint", "summary"):
        if payload.get(key):
            lines.append(f"{key}: {payload[key]}")
    lines += [f"wrote {p}" for p in payload.get("written", ())]
    if payload.get("hint"):
        lines.append(f"next: {payload['hint']}")
    return "\n".join(line for line in lines if line)


def task_state(
    ctx: ToolContext,
    *,
    action: str = "status",
    goal: str = "",
    update: Mapping[str, Any] | None = None,
    pressure: float | None = None,
    turn: int | None = None,
    action_changed_state: bool = False,
    phase_or_goal_changed: bool = False,
    path: str | None = None,
    session_id: str | None = None,
) -> ToolOutput:
    """Read (``status``), start (``ensure``) or update through the pressure gate (``update``) the
    durable task state, as ``ctxhealth state status|ensure|checkpoint`` do.

    For ``update`` without ``pressure``, the pressure is the session's own (its assessment), when the
    session can be found; the document says which (``pressure_source``).
    """
    from ctxhealth.state.payload import gate_payload, startup_payload
    from ctxhealth.state.store import StateStore

    if action not in TASK_STATE_ACTIONS:
        raise UsageError(f"unknown action {action!r}", hint=f"use one of {', '.join(TASK_STATE_ACTIONS)}")
    store = StateStore(ctx.root)
    extra: dict[str, Any] = {}
    if action == "status":
        from ctxhealth.state.startup import inspect

        result = inspect(store)
        status, payload = result.status, startup_payload(ctx.root, result)
    elif action == "ensure":
        from ctxhealth.state.startup import ensure

        started = ensure(store, goal=goal)
        status = started.status
        payload = startup_payload(ctx.root, started, written=[str(p) for p in started.written])
    else:
        from ctxhealth.errors import InputError
        from ctxhealth.state.gate import GateRequest, Thresholds, run_gate

        source = "argument" if pressure is not None else None
        gate_session = session_id
        if pressure is None:
            try:
                transcript, session = _read(ctx, path, session_id)
            except InputError as exc:
                extra["pressure_note"] = f"no session pressure: {exc.render()}"
            else:
                pressure = float(_assess(ctx, session)["pressure"])
                source, gate_session = "session", session.session_id or gate_session
                extra["transcript"] = str(transcript)
        thresholds = Thresholds.configured(ctx.settings)
        request = GateRequest(
            pressure=pressure,
            turn=turn,
            action_changed_state=action_changed_state,
            phase_or_goal_changed=phase_or_goal_changed,
            update=dict(update) if update is not None else None,
            session_id=gate_session,
        )
        ledger, ledger_note = _open_ledger(ctx.home)
        try:
            gated = run_gate(store, request, thresholds, ledger=ledger)
        finally:
            if ledger is not None:
                ledger.close()
        status, payload = gated.status, gate_payload(ctx.root, gated, thresholds)
        extra["pressure_source"] = source
        if ledger_note or gated.ledger_error:
            extra["warning"] = ledger_note or f"not recorded in the ledger: {gated.ledger_error}"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "status": status.value,
        "signal": status.line,
        "may_continue": status.may_continue,
        **payload,
        **extra,
    }
    return ToolOutput(scrub(doc), scrub(_status_text(status.line, payload)))


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 3] + "..."


_RECOMMENDED = {
    "restart": "restart",
    "halt": "restart",
    "truncate": "truncate",
    "compress_history": "truncate",
    "reanchor": "reanchor",
    "warn": "reanchor",
    "clear_tool_results": "clear",
}


def recovery_plan(
    ctx: ToolContext,
    *,
    path: str | None = None,
    session_id: str | None = None,
    budget_tokens: int | None = None,
    strategies: Sequence[str] | None = None,
) -> ToolOutput:
    """What each recovery strategy would keep of the live context, within ``budget_tokens`` and the
    model's usable window (the strategies of ``ctxhealth recover``); nothing is rewritten."""
    from ctxhealth.errors import CtxHealthError
    from ctxhealth.recovery.report import Strategy
    from ctxhealth.recovery.run import run_strategy, usable_window

    chosen = list(strategies or ("truncate", "restart"))
    unknown = [s for s in chosen if s not in RECOVERY_STRATEGIES]
    if unknown:
        raise UsageError(
            f"unknown strategy {unknown[0]!r}", hint=f"use one of {', '.join(RECOVERY_STRATEGIES)}"
        )
    if budget_tokens is not None and budget_tokens < 1:
        raise UsageError(f"budget must be positive (got {budget_tokens})", hint="omit it to use the window")
    transcript, session = _read(ctx, path, session_id)
    assessment = _assess(ctx, session)
    window = usable_window(session, ctx.settings.registry(), ctx.settings.model)
    plans: list[dict[str, Any]] = []
    for name in chosen:
        try:
            out, report = run_strategy(
                session, Strategy(name), budget_tokens=budget_tokens, window_tokens=window
            )
        except CtxHealthError as exc:
            plans.append({"strategy": name, "error": exc.render()})
            continue
        kinds = Counter(r.kind.value for r in report.removals)
        plans.append(
            {
                "strategy": name,
                "tokens_before": report.tokens_before,
                "tokens_after": report.tokens_after,
                "messages_before": report.messages_before,
                "messages_after": report.messages_after,
                "changed": dict(sorted(kinds.items())),
                "injected": list(report.injected),
                "notes": list(report.notes),
                "kept": [{"role": m.role.value, "text": _preview(m.text)} for m in out.messages[:KEPT_SHOWN]],
                "kept_more": max(0, len(out.messages) - KEPT_SHOWN),
            }
        )
    action = str(assessment.get("action", "continue"))
    doc = {
        "schema_version": SCHEMA_VERSION,
        "path": str(transcript),
        "session_id": session.session_id,
        "usable_window": window,
        "budget_tokens": budget_tokens,
        "decision": {
            "zone": assessment.get("zone"),
            "pressure": assessment.get("pressure"),
            "action": action,
            "reasons": assessment.get("reasons", []),
        },
        "recommended": _RECOMMENDED.get(action),
        "plans": plans,
    }
    lines = [
        f"decision: {action} (zone {assessment.get('zone')}, pressure {assessment.get('pressure')})",
        *(f"reason: {r}" for r in assessment.get("reasons", [])),
    ]
    if doc["recommended"]:
        lines.append(f"recommended strategy: {doc['recommended']}")
    for plan in plans:
        if "error" in plan:
            lines.append(f"{plan['strategy']}: not possible: {plan['error']}")
        else:
            lines.append(
                f"{plan['strategy']}: {plan['tokens_before']:,} -> {plan['tokens_after']:,} tokens, "
                f"{plan['messages_before']} -> {plan['messages_after']} messages"
            )
    lines.append("Nothing was changed: apply a strategy yourself, or restart from the checkpoint.")
    return ToolOutput(scrub(doc), scrub("\n".join(lines)), transcript)


def read_latest(root: Path, name: str) -> str | None:
    """The text of a stable alias under the state root (``checkpoint.md``, ``checkpoint.json``,
    ``summary.md``), or None when none has been written yet."""
    from ctxhealth.state.store import StateStore

    store = StateStore(root)
    paths = {
        "checkpoint.md": store.checkpoints_dir / "latest-checkpoint.md",
        "checkpoint.json": store.checkpoints_dir / "latest-checkpoint.json",
        "summary.md": store.latest_summary_path,
    }
    target = paths.get(name)
    if target is None:
        raise UsageError(f"unknown resource {name!r}", hint=f"use one of {', '.join(paths)}")
    try:
        text: str = scrub(target.read_text(encoding="utf-8", errors="replace"))
    except FileNotFoundError:
        return None
    return text
