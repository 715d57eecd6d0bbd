"""The ground-rules check on pack manifests: what must hold for a pack to keep the prompt cache warm.

For manifests of the same input (same ``input_digest``): the L1 (rules) and L2 (specs) levels are
byte-identical (same ``level_digests``) and the files come in the same order. For every manifest:
the L4 level (error output) is present when errors were given.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxhealth.audit.findings import Check, Evidence, Finding, Severity
from ctxhealth.audit.manifest import PackManifest

STABLE_LEVELS = ("L1", "L2")


def ground_rules(manifests: Sequence[PackManifest]) -> list[Finding]:
    """Findings over ``manifests`` (each compared with the first manifest of the same input)."""
    findings = []
    first: dict[str, PackManifest] = {}
    for manifest in manifests:
        where = Evidence(manifest.path)
        if manifest.errors_given and not (
            manifest.levels.get("L4", 0) > 0 or any(f.level == "L4" for f in manifest.files)
        ):
            findings.append(
                Finding(
                    Check.GROUND_RULES, Severity.FAIL, "errors were given but the pack has no L4 level", where
                )
            )
        base = first.setdefault(manifest.input_digest, manifest)
        if base is manifest:
            continue
        for level in STABLE_LEVELS:
            if manifest.level_digests.get(level) != base.level_digests.get(level):
                findings.append(
                    Finding(
                        Check.GROUND_RULES,
                        Severity.FAIL,
                        f"{level} differs from {base.path} for the same input (the cached prefix breaks)",
                        where,
                    )
                )
        order = [f.path for f in manifest.files]
        base_order = [f.path for f in base.files]
        if order != base_order:
            at = next((i for i, (a, b) in enumerate(zip(order, base_order, strict=False)) if a != b), None)
            at = min(len(order), len(base_order)) if at is None else at
            findings.append(
                Finding(
                    Check.GROUND_RULES,
                    Severity.FAIL,
                    f"file order differs from {base.path} for the same input (first at position {at})",
                    where,
                )
            )
    return findings
