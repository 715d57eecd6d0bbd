"""One audit run: transcripts, pack manifests and instruction files in, one document per session
and a totals document with every check's verdict out.

:func:`run_audit` streams: sessions are read, audited and yielded one at a time (a folder of
thousands never sits in memory); what spans sessions (cost by project / day / week and its
trend, the hit rate of the last 50 requests, manifests, instruction files) is kept in running
totals and yielded last. What each check looks at:

* ``cache`` — the last-50 hit rate over all sessions must beat the target (fail); a session
  below it, and every cache break that was not a compaction or clear, is a warning;
* ``cost`` — a week more than 20% over the week before: fail for the latest week, warning for
  earlier ones; responses of a model without prices are a warning;
* ``usage`` — a session's peak fill or a pack's tokens at 80% of the window (or over budget);
* ``scores`` / ``ground-rules`` — pack manifests (:mod:`.scores`, :mod:`.ground_rules`);
* ``instructions`` — instruction files under the given folders (:mod:`.instructions`).
"""

from __future__ import annotations

import heapq
import itertools
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ctxhealth import Profile
from ctxhealth.accounting.cost import iter_threads
from ctxhealth.accounting.fill import account_session, session_model_id
from ctxhealth.accounting.registry import ModelRegistry
from ctxhealth.audit.cache import EXPECTED_CAUSES, audit_cache
from ctxhealth.audit.cost import TREND_GROWTH, CostLedger, response_rows, session_cost
from ctxhealth.audit.findings import Check, Evidence, Finding, Severity, Verdict, fails, verdict, worst
from ctxhealth.audit.ground_rules import ground_rules
from ctxhealth.audit.instructions import (
    find_instruction_files,
    instruction_findings,
    read_instruction_file,
)
from ctxhealth.audit.manifest import PackManifest, looks_like_manifest, read_manifest
from ctxhealth.audit.responses import Response, session_responses
from ctxhealth.audit.scores import manifest_scores
from ctxhealth.audit.usage import USAGE_MAX, manifest_usage, session_usage
from ctxhealth.audit.waste import audit_waste
from ctxhealth.errors import InputError, TranscriptError
from ctxhealth.model import Session
from ctxhealth.sources import read_sessions

SCHEMA_VERSION = 1
CACHE_TARGET = 0.60
LAST_N = 50
_HEAD = 4096
_MANIFEST_CHECKS = frozenset({Check.USAGE, Check.SCORES, Check.GROUND_RULES})
_SESSION_CHECKS = frozenset({Check.USAGE, Check.CACHE, Check.COST})
_NO_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """What to check and the thresholds (defaults from the spec)."""

    checks: frozenset[Check] = frozenset(Check)
    since: datetime | None = None
    model: str | None = None
    fail_on: Severity = Severity.FAIL
    last_n: int = LAST_N
    cache_target: float = CACHE_TARGET
    trend_growth: float = TREND_GROWTH
    usage_max: float = USAGE_MAX
    profile: Profile | None = None
    """The policy's thresholds (compress gate, tier hard limits) for the waste estimates."""


@dataclass(slots=True)
class _Inputs:
    transcripts: list[str] = field(default_factory=list)
    manifests: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)


def _split_inputs(paths: Iterable[str], options: AuditOptions) -> _Inputs:
    """Transcripts go to the readers; manifests and instruction folders are picked out here."""
    inputs = _Inputs()
    want_manifests = bool(options.checks & _MANIFEST_CHECKS)
    for raw in paths:
        path = Path(raw)
        if raw != "-" and not path.exists():
            raise InputError(
                "no such file or folder", hint="give transcripts, folders or pack manifests", path=raw
            )
        if raw != "-" and path.is_file():
            if _is_manifest(path):
                inputs.manifests.append(path)
            elif read_instruction_file(path) is not None:
                inputs.folders.append(path)
            else:
                inputs.transcripts.append(raw)
            continue
        inputs.transcripts.append(raw)
        if path.is_dir():
            inputs.folders.append(path)
            if want_manifests:
                inputs.manifests.extend(_manifests_under(path))
    return inputs


def _is_manifest(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    try:
        with path.open("rb") as handle:
            return looks_like_manifest(handle.read(_HEAD))
    except OSError:
        return False


def _manifests_under(root: Path) -> Iterator[Path]:
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(dirs)
        for name in sorted(names):
            path = Path(folder) / name
            if _is_manifest(path):
                yield path


@dataclass(slots=True)
class _Totals:
    """What spans sessions: cost ledger, the latest requests, findings and counts."""

    options: AuditOptions
    cost: CostLedger = field(default_factory=CostLedger)
    recent: list[tuple[datetime, int, int, int, Evidence]] = field(default_factory=list)
    order: itertools.count[int] = field(default_factory=itertools.count)
    findings: list[Finding] = field(default_factory=list)
    sessions: int = 0
    breaks: int = 0
    breaks_by_cause: Counter[str] = field(default_factory=Counter)
    usd_breaks: float = 0.0
    requests: int = 0

    def add_responses(self, path: str, responses: list[Response], project: str | None = None) -> None:
        """Count the session's responses in the totals, each response id once over all sessions."""
        n = self.options.last_n
        for r in self.cost.add(path, responses, project=project):
            self.requests += 1
            # Without a timestamp a response sorts before every timed one, in read order.
            item = (
                r.time or _NO_TIME,
                next(self.order),
                r.usage.cache_read_tokens,
                r.usage.context_tokens,
                Evidence(path, r.line, r.response_id),
            )
            if len(self.recent) < n:
                heapq.heappush(self.recent, item)
            elif n > 0:
                heapq.heappushpop(self.recent, item)


def run_audit(
    paths: Iterable[str], options: AuditOptions | None = None, *, registry: ModelRegistry | None = None
) -> Iterator[dict[str, Any]]:
    """One document per session, then the totals document (with ``verdicts`` and ``status``)."""
    options = options or AuditOptions()
    registry = registry or ModelRegistry.default()
    inputs = _split_inputs(paths, options)
    totals = _Totals(options)
    # Checks of manifests and instruction files alone read no transcript (fast in a repository's CI).
    for session in _sessions(inputs) if options.checks & _SESSION_CHECKS else ():
        yield _session_document(session, options, registry, totals)
    yield _totals_document(inputs, options, totals)


def _sessions(inputs: _Inputs) -> Iterator[Session]:
    """Sessions of every transcript input; a folder holding only manifests or instruction files is
    not an error (it is one when it holds nothing the audit reads)."""
    for raw in inputs.transcripts:
        path = Path(raw)
        yielded = False
        try:
            for session in read_sessions([raw]):
                yielded = True
                yield session
        except TranscriptError:
            other = any(m.is_relative_to(path) for m in inputs.manifests) or any(
                True for _ in find_instruction_files([path])
            )
            if yielded or not path.is_dir() or not other:
                raise


def _session_document(
    session: Session, options: AuditOptions, registry: ModelRegistry, totals: _Totals
) -> dict[str, Any]:
    responses = session_responses(session, registry, model=options.model, since=options.since)
    totals.add_responses(session.path, responses, project=session.cwd)
    totals.sessions += 1
    cache = audit_cache(session, responses, last_n=options.last_n)
    account = account_session(session, registry=registry, model=options.model)
    usage_doc, usage_found = session_usage(account, options.usage_max)
    model_id = options.model or session_model_id(session)
    profile = options.profile or Profile()
    # The fill at which the policy compresses: pressure (the larger of fill / tier hard limit and
    # fill / usable window) at the compress gate.
    limit = min(profile.zones(account.model).hard_limit, account.usable_window)
    waste = audit_waste(
        session, registry.lookup(model_id).prices, compress_at=round(profile.pressure_compress * limit)
    )
    findings: list[Finding] = []
    if Check.CACHE in options.checks:
        for b in cache.breaks:
            if b.cause in EXPECTED_CAUSES:
                continue
            cost = f"; cost ${b.usd:.4f}" if b.usd is not None else ""
            findings.append(
                Finding(
                    Check.CACHE,
                    Severity.WARN,
                    f"cache break ({b.cause}): cached prefix {b.previous.usage.cache_read_tokens:,} -> "
                    f"{b.response.usage.cache_read_tokens:,} tokens, {b.detail}{cost}",
                    Evidence(session.path, b.response.line, b.response.response_id),
                )
            )
        rate = cache.last_n_hit_rate
        if rate is not None and rate <= options.cache_target and responses:
            last = responses[-1]
            findings.append(
                Finding(
                    Check.CACHE,
                    Severity.WARN,
                    f"cache hit rate over the session's last {options.last_n} requests {rate:.0%} "
                    f"(target > {options.cache_target:.0%})",
                    Evidence(session.path, last.line, last.response_id),
                )
            )
        totals.breaks += sum(1 for b in cache.breaks if b.cause not in EXPECTED_CAUSES)
        totals.breaks_by_cause.update(str(b.cause) for b in cache.breaks)
        totals.usd_breaks += cache.usd_breaks
    if Check.USAGE in options.checks:
        findings.extend(usage_found)
    totals.findings.extend(findings)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "session",
        "path": session.path,
        "session_id": session.session_id,
        "format": str(session.format),
        "model": model_id,
        "cache": cache.to_dict(),
        "cost": session_cost(responses),
        "responses": response_rows(responses),
        "waste": waste.to_dict(),
        "usage": usage_doc,
        "warnings": [str(w) for t in iter_threads(session) for w in t.warnings],
        "findings": [f.to_dict() for f in findings],
    }


def _totals_document(inputs: _Inputs, options: AuditOptions, totals: _Totals) -> dict[str, Any]:
    checks = options.checks
    findings = totals.findings
    last = sorted(totals.recent)
    last_read = sum(item[2] for item in last)
    last_prompt = sum(item[3] for item in last)
    last_rate = last_read / last_prompt if last_prompt > 0 else None
    if Check.CACHE in checks and last_rate is not None and last_rate <= options.cache_target:
        findings.append(
            Finding(
                Check.CACHE,
                Severity.FAIL,
                f"cache hit rate over the last {len(last)} requests {last_rate:.0%} "
                f"(target > {options.cache_target:.0%})",
                last[-1][4],
            )
        )
    trend = totals.cost.trend(options.trend_growth)
    if Check.COST in checks:
        alerts = [t for t in trend if t.alert]
        for t in alerts:
            latest = t is trend[-1]
            findings.append(
                Finding(
                    Check.COST,
                    Severity.FAIL if latest else Severity.WARN,
                    f"cost of week {t.week} ${t.usd:.2f} is {t.growth:.0%} over the week before "
                    f"(${t.previous_usd:.2f}; alert above {options.trend_growth:.0%})",
                    totals.cost.week_evidence.get(t.week, Evidence("-")),
                )
            )
        if totals.cost.unpriced:
            findings.append(
                Finding(
                    Check.COST,
                    Severity.WARN,
                    f"{totals.cost.unpriced} responses from models without prices are not in the cost; "
                    'add prices in config ([models."<id>"] input/output/cache_write/cache_read)',
                    totals.cost.unpriced_evidence or Evidence("-"),
                )
            )
    manifests: list[PackManifest] = [read_manifest(p) for p in inputs.manifests]
    if Check.USAGE in checks:
        for m in manifests:
            findings.extend(manifest_usage(m, options.usage_max))
    if Check.SCORES in checks:
        for m in manifests:
            findings.extend(manifest_scores(m))
    if Check.GROUND_RULES in checks:
        findings.extend(ground_rules(manifests))
    instruction_docs = []
    if Check.INSTRUCTIONS in checks:
        files = [
            f for f in map(read_instruction_file, find_instruction_files(inputs.folders)) if f is not None
        ]
        per_session = totals.requests / totals.sessions if totals.sessions else None
        instruction_docs = [f.to_dict(per_session) for f in files]
        findings.extend(instruction_findings(files))
    verdicts = _verdicts(checks, findings, totals, manifests, len(instruction_docs), last_rate, options)
    status = worst(v.status for v in verdicts.values())
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "totals",
        # False when the selected checks read no transcript (manifests and instruction files only)
        "transcripts_read": bool(checks & _SESSION_CHECKS),
        "sessions": totals.sessions,
        "requests": totals.requests,
        "cache": {
            "hit_rate": totals.cost.hit_rate,
            "last50_hit_rate": last_rate,
            "breaks": totals.breaks,
            "breaks_by_cause": dict(sorted(totals.breaks_by_cause.items())),
            "usd_breaks": totals.usd_breaks,
        },
        "cost": totals.cost.to_dict(options.trend_growth),
        "manifests": [m.path for m in manifests],
        "instructions": instruction_docs,
        "findings": [f.to_dict() for f in findings],
        "verdicts": {str(c): v.to_dict() for c, v in verdicts.items()},
        "status": str(status),
        "fail_on": str(options.fail_on),
        "failed": any(fails(v.status, options.fail_on) for v in verdicts.values()),
    }


def _verdicts(
    checks: frozenset[Check],
    findings: list[Finding],
    totals: _Totals,
    manifests: list[PackManifest],
    instruction_files: int,
    last_rate: float | None,
    options: AuditOptions,
) -> dict[Check, Verdict]:
    rate = (
        "no cache usage reported" if last_rate is None else f"last-{options.last_n} hit rate {last_rate:.0%}"
    )
    passed = {
        Check.USAGE: f"{totals.sessions} sessions and {len(manifests)} packs under {options.usage_max:.0%}",
        Check.CACHE: f"{rate}, no unexpected cache breaks",
        Check.COST: f"${totals.cost.usd:.2f} over {totals.cost.requests} requests, no week over "
        f"+{options.trend_growth:.0%}",
        Check.SCORES: f"every packed file at or above its threshold ({len(manifests)} manifests)",
        Check.GROUND_RULES: f"{len(manifests)} manifests keep L1/L2 and order stable",
        Check.INSTRUCTIONS: f"{instruction_files} instruction files within their line limits",
    }
    return {check: verdict(check, findings, passed=passed[check]) for check in Check if check in checks}
