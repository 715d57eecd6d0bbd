"""Counters for the status page and the Prometheus text exposition (format 0.0.4).

:class:`Metrics` counts requests by API and mode, responses by status, tokens by kind, actions by
kind and how they were applied, resets, and upstream latency as a histogram; the per-session fill
gauge comes from the guard's sessions. Rendering is plain text, no client library.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    return "{" + inner + "}" if inner else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()  # (api, mode)
        self.responses: Counter[tuple[str, str]] = Counter()  # (api, status)
        self.tokens: Counter[str] = Counter()  # kind
        self.actions: Counter[tuple[str, str]] = Counter()  # (action, applied)
        self.resets = 0
        self.errors = 0  # ctxhealth's own failures (the request went on unchanged)
        self.harness: Counter[str] = Counter()  # the agents' own compaction requests, by kind
        self.forwarded = 0  # requests on other paths, passed through
        self.latency_counts = [0] * (len(LATENCY_BUCKETS) + 1)
        self.latency_sum = 0.0
        self.latency_count = 0

    def observe_latency(self, seconds: float) -> None:
        self.latency_counts[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.latency_sum += seconds
        self.latency_count += 1

    def render(self, fills: Iterable[tuple[str, str, int]]) -> str:
        """The exposition text; ``fills`` are ``(session, api, fill)`` for the fill gauge."""
        out: list[str] = []

        def family(name: str, kind: str, help_text: str) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")

        family("ctxhealth_proxy_requests_total", "counter", "Model API requests seen, by API and mode.")
        for (api, mode), n in sorted(self.requests.items()):
            out.append(f"ctxhealth_proxy_requests_total{_labels([('api', api), ('mode', mode)])} {n}")
        family(
            "ctxhealth_proxy_passthrough_total", "counter", "Requests on other paths, forwarded as they are."
        )
        out.append(f"ctxhealth_proxy_passthrough_total {self.forwarded}")
        family("ctxhealth_proxy_responses_total", "counter", "Responses by API and HTTP status.")
        for (api, status), n in sorted(self.responses.items()):
            out.append(f"ctxhealth_proxy_responses_total{_labels([('api', api), ('status', status)])} {n}")
        family("ctxhealth_proxy_tokens_total", "counter", "Tokens the provider reported, by kind.")
        for kind, n in sorted(self.tokens.items()):
            out.append(f"ctxhealth_proxy_tokens_total{_labels([('kind', kind)])} {n}")
        family(
            "ctxhealth_proxy_actions_total", "counter", "Policy actions decided, by action and how applied."
        )
        for (action, applied), n in sorted(self.actions.items()):
            labels = _labels([("action", action), ("applied", applied)])
            out.append(f"ctxhealth_proxy_actions_total{labels} {n}")
        family(
            "ctxhealth_proxy_resets_total",
            "counter",
            "Requests whose history no longer matched (re-observed).",
        )
        out.append(f"ctxhealth_proxy_resets_total {self.resets}")
        family(
            "ctxhealth_proxy_errors_total",
            "counter",
            "ctxhealth's own failures; each request was passed through unchanged.",
        )
        out.append(f"ctxhealth_proxy_errors_total {self.errors}")
        family(
            "ctxhealth_proxy_agent_compactions_total",
            "counter",
            "The agents' own compaction requests, passed through.",
        )
        for kind, n in sorted(self.harness.items()):
            out.append(f"ctxhealth_proxy_agent_compactions_total{_labels([('kind', kind)])} {n}")
        family("ctxhealth_session_fill_tokens", "gauge", "Context fill of each session, in tokens.")
        for session, api, fill in fills:
            out.append(f"ctxhealth_session_fill_tokens{_labels([('session', session), ('api', api)])} {fill}")
        name = "ctxhealth_upstream_latency_seconds"
        family(name, "histogram", "Time from sending a request upstream to its last response byte.")
        running = 0
        for bound, n in zip((*LATENCY_BUCKETS, float("inf")), self.latency_counts, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else repr(bound)
            out.append(f'{name}_bucket{{le="{le}"}} {running}')
        out.append(f"{name}_sum {self.latency_sum:.6f}")
        out.append(f"{name}_count {self.latency_count}")
        return "\n".join(out) + "\n"
