"""The usage check: context fill stays under 80% of the window, and a pack stays inside its budget.

For a session, the peak fill of its main thread (the accounting's one fill series) against the
model's window; for a pack manifest, its tokens against its budget and, when it names a window,
against 80% of that window.
"""

from __future__ import annotations

from ctxhealth.accounting.fill import SessionAccount
from ctxhealth.audit.findings import Check, Evidence, Finding, Severity
from ctxhealth.audit.manifest import PackManifest

USAGE_MAX = 0.80


def session_usage(
    account: SessionAccount, limit: float = USAGE_MAX
) -> tuple[dict[str, object], list[Finding]]:
    """``{peak, window, fraction, source}`` and a finding when the peak reaches ``limit`` of the window."""
    session = account.session
    peak_turn = max(account.turns, key=lambda t: t.tokens, default=None)
    fraction = account.peak / account.window if account.window else 0.0
    doc: dict[str, object] = {
        "peak": account.peak,
        "window": account.window,
        "fraction": fraction,
        "source": str(account.source),
    }
    findings = []
    if peak_turn is not None and fraction >= limit:
        message = session.messages[peak_turn.message_index]
        findings.append(
            Finding(
                Check.USAGE,
                Severity.FAIL,
                f"context fill peaked at {account.peak:,} of {account.window:,} tokens "
                f"({fraction:.0%} >= {limit:.0%} of the window)",
                Evidence(session.path, message.line, message.response_id),
            )
        )
    return doc, findings


def manifest_usage(manifest: PackManifest, limit: float = USAGE_MAX) -> list[Finding]:
    """Findings when a pack exceeds its budget or ``limit`` of the window it names."""
    where = Evidence(manifest.path)
    findings = []
    if manifest.tokens > manifest.budget:
        findings.append(
            Finding(
                Check.USAGE,
                Severity.FAIL,
                f"pack holds {manifest.tokens:,} tokens, over its budget of {manifest.budget:,}",
                where,
            )
        )
    if manifest.window and manifest.tokens > limit * manifest.window:
        findings.append(
            Finding(
                Check.USAGE,
                Severity.FAIL,
                f"pack holds {manifest.tokens:,} tokens, {manifest.tokens / manifest.window:.0%} of the "
                f"{manifest.window:,}-token window (limit {limit:.0%})",
                where,
            )
        )
    return findings
