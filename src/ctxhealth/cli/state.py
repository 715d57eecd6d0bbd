"""``ctxhealth state ...`` (durable task state, the pressure gate) and ``ctxhealth checkpoint PATH``.

Every command takes ``--root`` (or ``CTXHEALTH_ROOT``; default ``./.ctxhealth``) and ``--json``,
prints a ``STATUS:*`` line (or one JSON document) and exits with the status's code:
0 go on / done, 1 halted at the context limit, 3 the state needs attention.
The ledger lives in ``$CTXHEALTH_HOME`` (default ``~/.ctxhealth``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import orjson

from ctxhealth.cli.common import SCHEMA_VERSION, echo_json, echo_read_warnings, guarded, transcripts_argument
from ctxhealth.cli.groups import SuggestingGroup
from ctxhealth.errors import LedgerError, StateError, UsageError
from ctxhealth.sources.reader import read_regular_file
from ctxhealth.state.status import Status
from ctxhealth.state.store import StateStore

if TYPE_CHECKING:
    from ctxhealth.state.gate import Thresholds
    from ctxhealth.state.ledger import Ledger
    from ctxhealth.state.startup import StartupResult

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_ROOT = ".ctxhealth"
_STRING_FIELDS = ("goal", "current_phase", "next_action")


def ledger_home() -> Path:
    """``$CTXHEALTH_HOME`` or ``~/.ctxhealth`` (the same resolution every command uses)."""
    from ctxhealth.config import resolve_home

    return resolve_home({}, os.environ)[0]


def _common(fn: F) -> F:
    fn = click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="CTXHEALTH_ROOT",
        default=DEFAULT_ROOT,
        show_default=True,
        help="State root directory (env: CTXHEALTH_ROOT).",
    )(fn)
    fn = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")(fn)
    return fn


def _finish(
    status: Status, payload: dict[str, Any], as_json: bool, lines: list[str], hint: str = ""
) -> NoReturn:
    """Print the result and exit with the status's code."""
    if as_json:
        echo_json({"schema_version": SCHEMA_VERSION, "status": status.value, **payload})
    else:
        click.echo(status.line)
        for line in lines:
            click.echo(line)
    if status.exit_code != 0:
        detail = payload.get("detail", "")
        message = f"{detail}. {hint}" if hint else str(detail)
        click.echo(f"ctxhealth: {status.line}: {message}", err=True)
    sys.exit(int(status.exit_code))


def _open_ledger() -> Ledger | None:
    """The ledger, or None (with a warning) when it cannot be opened: state writes must not wait on it."""
    from ctxhealth.state.ledger import Ledger

    try:
        return Ledger.open(ledger_home())
    except LedgerError as exc:
        click.echo(f"ctxhealth: warning: ledger unavailable, not recorded: {exc.render()}", err=True)
        return None


def _startup_payload(root: Path, result: StartupResult, **extra: Any) -> dict[str, Any]:
    from ctxhealth.state.payload import startup_payload

    return startup_payload(root, result, **extra)


@click.group("state", cls=SuggestingGroup)
def state() -> None:
    """Durable task state: status, ensure, checkpoint (the pressure gate), bundle, archive, override."""


@state.command("status")
@_common
@guarded
def status_cmd(root: Path, as_json: bool) -> None:
    """Report the startup status without writing anything."""
    from ctxhealth.state.startup import inspect

    result = inspect(StateStore(root))
    payload = _startup_payload(root, result)
    lines = [result.detail]
    if result.summary_conflict:
        lines.append("summary does not match the state (`ctxhealth state ensure` rewrites it)")
    _finish(result.status, payload, as_json, lines, result.hint)


@state.command("ensure")
@click.option("--goal", default="", help="Goal to record when a new task state is initialised.")
@_common
@guarded
def ensure_cmd(root: Path, as_json: bool, goal: str) -> None:
    """Run the startup branch: initialise, repair the summary, final write, or report what is wrong."""
    from ctxhealth.state.startup import ensure

    result = ensure(StateStore(root), goal=goal)
    payload = _startup_payload(root, result, written=[str(p) for p in result.written])
    lines = [result.detail] + [f"wrote {p}" for p in result.written]
    _finish(result.status, payload, as_json, lines, result.hint)


def _read_update(update: str | None, sets: tuple[str, ...]) -> dict[str, Any] | None:
    doc: dict[str, Any] = {}
    if update is not None:
        try:
            raw = sys.stdin.buffer.read() if update == "-" else read_regular_file(update, "--update")
        except OSError as exc:
            raise UsageError(
                f"cannot read --update {update}: {exc.strerror or exc}", hint="check the path"
            ) from None
        try:
            loaded = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise StateError(
                f"--update is not valid JSON ({exc})",
                hint="pass a JSON object of fields to change",
                path=update,
            ) from None
        if not isinstance(loaded, dict):
            raise StateError(
                "--update must be a JSON object", hint='e.g. {"next_action": "run tests"}', path=update
            )
        doc.update(loaded)
    for item in sets:
        name, sep, value = item.partition("=")
        if not sep or name not in _STRING_FIELDS:
            raise UsageError(
                f"--set expects FIELD=VALUE with FIELD one of {', '.join(_STRING_FIELDS)} (got {item!r})",
                hint="use --update FILE for list fields",
            )
        doc[name] = value
    return doc if (update is not None or sets) else None


def _gate_thresholds(warning: float | None, compress: float | None, critical: float | None) -> Thresholds:
    """The pressure gates of the configured profile, with any given flag in place of its gate."""
    from ctxhealth.config import load_settings
    from ctxhealth.state.gate import Thresholds

    base = Thresholds.configured(load_settings({}, os.environ, Path.cwd()))
    return Thresholds(
        warning=base.warning if warning is None else warning,
        compress=base.compress if compress is None else compress,
        critical=base.critical if critical is None else critical,
    )


@state.command("checkpoint")
@click.option("--pressure", type=float, default=None, help="Context pressure from the host (0..1).")
@click.option("--turn", type=int, default=None, help="1-based turn number (default: count of gate calls).")
@click.option("--action-changed-state", is_flag=True, help="The last action changed state: checkpoint.")
@click.option("--phase-or-goal-changed", is_flag=True, help="Phase or goal changed: fresh summary.")
@click.option("--summary-conflict", is_flag=True, help="The summary disagrees with the state: fresh summary.")
@click.option("--update", default=None, help="JSON file (or - for stdin) with state fields to change.")
@click.option("--set", "sets", multiple=True, help="FIELD=VALUE for goal, current_phase, next_action.")
@click.option("--session-id", default=None, help="Session id to record in the ledger.")
@click.option("--warning", type=float, default=None, help="Warning gate [default: the profile's, 0.55].")
@click.option("--compress", type=float, default=None, help="Compress gate [default: the profile's, 0.70].")
@click.option(
    "--critical", type=float, default=None, help="Critical gate (halt) [default: the profile's, 0.85]."
)
@_common
@guarded
def checkpoint_state_cmd(
    root: Path,
    as_json: bool,
    pressure: float | None,
    turn: int | None,
    action_changed_state: bool,
    phase_or_goal_changed: bool,
    summary_conflict: bool,
    update: str | None,
    sets: tuple[str, ...],
    session_id: str | None,
    warning: float | None,
    compress: float | None,
    critical: float | None,
) -> None:
    """The gate before a major action: update the state, checkpoint, summarise, halt at critical pressure.

    The gates are the profile's (``[profile] pressure_warning`` / ``_compress`` / ``_critical``, see
    ``ctxhealth config show``); a flag overrides one of them for this call."""
    from ctxhealth.state.gate import GateRequest, run_gate

    thresholds = _gate_thresholds(warning, compress, critical)
    request = GateRequest(
        pressure=pressure,
        turn=turn,
        action_changed_state=action_changed_state,
        phase_or_goal_changed=phase_or_goal_changed,
        summary_conflict=summary_conflict,
        update=_read_update(update, sets),
        session_id=session_id,
    )
    ledger = _open_ledger()
    try:
        result = run_gate(StateStore(root), request, thresholds, ledger=ledger)
    finally:
        if ledger is not None:
            ledger.close()
    if result.ledger_error:
        click.echo(f"ctxhealth: warning: not recorded in the ledger: {result.ledger_error}", err=True)
    from ctxhealth.state.payload import gate_payload

    payload = gate_payload(root, result, thresholds)
    lines = [result.detail]
    lines += [f"reason: {r}" for r in result.reasons]
    if result.checkpoint is not None:
        lines.append(f"checkpoint: {result.checkpoint}")
    if result.summary is not None:
        lines.append(f"summary: {result.summary}")
    _finish(result.status, payload, as_json, lines, result.hint)


@state.command("bundle")
@click.option("--full", is_flag=True, help="Add invariants, decisions and blockers.")
@_common
@guarded
def bundle_cmd(root: Path, as_json: bool, full: bool) -> None:
    """Print the working bundle: goal, phase, next action, last success, constraints, artifacts."""
    from ctxhealth.state.bundle import working_bundle
    from ctxhealth.state.startup import inspect

    result = inspect(StateStore(root))
    if result.state is None:
        _finish(
            result.status, {"root": str(root), "detail": result.detail}, as_json, [result.detail], result.hint
        )
    bundle = working_bundle(result.state, full=full)
    if as_json:
        echo_json(
            {"schema_version": SCHEMA_VERSION, "status": result.status.value, "bundle": bundle.to_dict()}
        )
    else:
        click.echo(result.status.line)
        click.echo(bundle.render_markdown(), nl=False)
    sys.exit(int(result.status.exit_code))


@state.command("archive")
@_common
@guarded
def archive_cmd(root: Path, as_json: bool) -> None:
    """Move the task state, summary alias, control file and legacy/foreign files to archive/<ts>/."""
    store = StateStore(root)
    result = store.archive()
    if as_json:
        echo_json(
            {
                "schema_version": SCHEMA_VERSION,
                "root": str(root),
                "archived": bool(result.moved),
                "destination": str(result.destination) if result.moved else None,
                "moved": [str(p) for p in result.moved],
            }
        )
    elif result.moved:
        click.echo(f"archived {len(result.moved)} file(s) to {result.destination}")
        for path in result.moved:
            click.echo(f"  {path.name}")
        click.echo("run `ctxhealth state ensure` to start a new task state")
    else:
        click.echo("nothing to archive")


@state.command("override")
@click.option("--reason", default="", help="Why the agent may go on (kept in control.json).")
@click.option("--allow", type=int, default=1, show_default=True, help="Critical gate calls to let through.")
@_common
@guarded
def override_cmd(root: Path, as_json: bool, reason: str, allow: int) -> None:
    """Lift a halt explicitly and let the next --allow critical gate calls through."""
    from ctxhealth.state.gate import override

    store = StateStore(root)
    before = store.read_control()
    control = override(store, reason=reason, allow=allow)
    detail = (
        f"halt lifted ({before.halt.reason}); {allow} critical gate call(s) allowed"
        if before.halt
        else f"no halt was active; {allow} critical gate call(s) allowed"
    )
    payload = {"root": str(root), "detail": detail, "override_remaining": control.override_remaining}
    _finish(Status.OK, payload, as_json, [detail])


@state.command("snapshot")
@transcripts_argument("transcript")
@_common
@guarded
def snapshot_cmd(root: Path, as_json: bool, transcript: str) -> None:
    """Write a pre-compaction snapshot (intent, active files, edit and correction counts) of TRANSCRIPT."""
    from ctxhealth.sources.reader import read_session
    from ctxhealth.state.memory import snapshot_from_session, write_snapshot

    store = StateStore(root)
    session = read_session(transcript)
    echo_read_warnings(session)
    snapshot = snapshot_from_session(session, created_at=store.now_iso())
    path = write_snapshot(store, snapshot)
    payload = {
        "root": str(root),
        "detail": f"snapshot written to {path}",
        "path": str(path),
        "snapshot": snapshot.to_dict(),
    }
    lines = [
        f"snapshot: {path}",
        f"edits: {snapshot.edit_count}  corrections: {snapshot.correction_count}  "
        f"active files: {len(snapshot.active_files)}",
    ]
    _finish(Status.OK, payload, as_json, lines)


@state.command("remember")
@click.argument("kind", type=click.Choice(["learnings", "issues", "decisions"]))
@click.argument("text")
@_common
@guarded
def remember_cmd(root: Path, as_json: bool, kind: str, text: str) -> None:
    """Append TEXT to the memory file KIND (learnings, issues or decisions)."""
    from ctxhealth.state.memory import MemoryKind, append_memory

    path = append_memory(StateStore(root), MemoryKind(kind), text)
    _finish(
        Status.OK,
        {"root": str(root), "detail": f"appended to {path}", "path": str(path)},
        as_json,
        [str(path)],
    )


@click.command("checkpoint")
@transcripts_argument("path")
@click.option("--budget", "budget_tokens", type=int, default=500, show_default=True, help="Token budget.")
@click.option("--no-ledger", is_flag=True, help="Do not record the checkpoint in the ledger.")
@_common
@guarded
def checkpoint(root: Path, as_json: bool, path: str, budget_tokens: int, no_ledger: bool) -> None:
    """Write a checkpoint of the transcript PATH (JSON + markdown, redacted) under the state root."""
    from ctxhealth.sources.reader import read_session
    from ctxhealth.state.checkpoint import write_transcript_checkpoint

    if budget_tokens < 50:
        raise UsageError(
            f"--budget must be at least 50 tokens (got {budget_tokens})", hint="try --budget 500"
        )
    session = read_session(path)
    echo_read_warnings(session)
    ledger = None if no_ledger else _open_ledger()
    try:
        files = write_transcript_checkpoint(
            StateStore(root), session, budget_tokens=budget_tokens, ledger=ledger
        )
    finally:
        if ledger is not None:
            ledger.close()
    if as_json:
        echo_json({"schema_version": SCHEMA_VERSION, **files.to_dict()})
    else:
        click.echo(f"checkpoint: {files.json_path}")
        click.echo(f"markdown:   {files.markdown_path}")
        over = " (over budget: never-drop content exceeds it)" if files.over_budget else ""
        click.echo(f"tokens:     {files.tokens} / {files.budget_tokens}{over}")
