"""The scores check: every file a pack included scores at least the pack's relevance threshold."""

from __future__ import annotations

from ctxhealth.audit.findings import Check, Evidence, Finding, Severity
from ctxhealth.audit.manifest import PackManifest


def manifest_scores(manifest: PackManifest) -> list[Finding]:
    """One failing finding per included file whose score is below the manifest's threshold."""
    return [
        Finding(
            Check.SCORES,
            Severity.FAIL,
            f"{packed.path} was packed ({packed.level}) with score {packed.score:.3f} "
            f"< threshold {manifest.threshold:.3f}",
            Evidence(manifest.path),
        )
        for packed in manifest.files
        if packed.score < manifest.threshold
    ]
