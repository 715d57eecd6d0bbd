"""Logistic fitting: an L2-regularised logistic regression solved by Newton's method
(:func:`fit_weights`) and the standardised :class:`~ctxhealth.risk.model.RiskModel` fitted with it
(:func:`fit_model`).

Pure Python, no numerical dependency: a handful of features and a few hundred runs make the exact
solve fast.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ctxhealth.errors import ConfigError
from ctxhealth.risk.model import RiskModel, sigmoid


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Solve ``a x = b`` by Gaussian elimination with partial pivoting (a is small and SPD here)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            m[pivot][col] = 1e-12
        m[col], m[pivot] = m[pivot], m[col]
        p = m[col][col]
        for r in range(col + 1, n):
            f = m[r][col] / p
            if f:
                row_r, row_c = m[r], m[col]
                for c in range(col, n + 1):
                    row_r[c] -= f * row_c[c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        s = m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))
        x[r] = s / m[r][r]
    return x


def fit_weights(
    x: Sequence[Sequence[float]], y: Sequence[int], *, l2: float = 1.0, iterations: int = 50
) -> tuple[list[float], float]:
    """L2-regularised logistic regression by Newton's method; the bias is not penalised.

    ``x`` rows are already standardised. Returns ``(weights, bias)``.
    """
    n = len(x)
    if n == 0 or n != len(y):
        raise ConfigError("cannot fit a risk model on no runs", hint="pass labelled runs")
    d = len(x[0])
    beta = [0.0] * (d + 1)  # last entry is the bias
    rows = [[*row, 1.0] for row in x]
    for _ in range(iterations):
        grad = [0.0] * (d + 1)
        hess = [[0.0] * (d + 1) for _ in range(d + 1)]
        for row, label in zip(rows, y, strict=True):
            p = sigmoid(sum(b * v for b, v in zip(beta, row, strict=True)))
            err = p - label
            w = max(p * (1.0 - p), 1e-9)
            for i in range(d + 1):
                ri = row[i]
                grad[i] += err * ri
                wri = w * ri
                hrow = hess[i]
                for j in range(i, d + 1):
                    hrow[j] += wri * row[j]
        for i in range(d):
            grad[i] += l2 * beta[i]
            hess[i][i] += l2
        for i in range(d + 1):
            for j in range(i):
                hess[i][j] = hess[j][i]
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-8:
            break
    return beta[:d], beta[d]


def _transform(
    rows: Sequence[Mapping[str, float]], features: Sequence[str], logs: frozenset[str]
) -> list[list[float]]:
    out = []
    for r in rows:
        out.append([math.log1p(max(r.get(f, 0.0), 0.0)) if f in logs else r.get(f, 0.0) for f in features])
    return out


def fit_model(
    rows: Sequence[Mapping[str, float]],
    y: Sequence[int],
    features: Sequence[str],
    *,
    log_features: frozenset[str] = frozenset(),
    l2: float = 1.0,
    meta: Mapping[str, Any] | None = None,
) -> RiskModel:
    """Fit a :class:`RiskModel` (standardisation + logistic weights) on feature rows and failure labels."""
    raw = _transform(rows, features, log_features)
    d = len(features)
    n = len(raw)
    mean = [sum(r[i] for r in raw) / n for i in range(d)]
    scale = []
    for i in range(d):
        var = sum((r[i] - mean[i]) ** 2 for r in raw) / n
        scale.append(math.sqrt(var) if var > 1e-12 else 1.0)
    std = [[(r[i] - mean[i]) / scale[i] for i in range(d)] for r in raw]
    weights, bias = fit_weights(std, y, l2=l2)
    return RiskModel(
        features=tuple(features),
        weights=tuple(weights),
        bias=bias,
        mean=tuple(mean),
        scale=tuple(scale),
        log_features=frozenset(f for f in log_features if f in features),
        l2=l2,
        meta=dict(meta or {}),
    )
