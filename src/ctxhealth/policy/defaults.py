"""The spec's default thresholds as plain numbers, importing nothing.

One place for the values that the :class:`~ctxhealth.policy.Profile`, the pressure gate
(:mod:`ctxhealth.state.gate`) and the status line's fallback (used before the slow path has cached
a session's resolved thresholds) all start from. The status line imports this module on every
refresh, so it must stay free of imports.
"""

# pressure gates on the 0..1 scale: warning, compress, critical (halt)
PRESSURE_WARNING = 0.55
PRESSURE_COMPRESS = 0.70
PRESSURE_CRITICAL = 0.85

# window zones, as fractions of the usable window
WINDOW_YELLOW = 0.65
WINDOW_ORANGE = 0.80
WINDOW_CRITICAL = 0.90
WINDOW_AUTOCOMPACT = 0.93

# the full tier's absolute-token zones: end of the sweet spot, start of the compact zone, hard limit
FULL_TIER = (80_000, 120_000, 180_000)

# the tier zones are for 200K-class windows; a larger window scales them by (window / 200K) ** 0.5
ZONE_REFERENCE_WINDOW = 200_000
ZONE_WINDOW_EXPONENT = 0.5

DRIFT_THRESHOLD = 0.15
FAILURE_RATE = 0.40
FAILURE_MIN_CALLS = 4
CONSECUTIVE_FAILURES = 3
CACHE_HIT_MIN = 0.40
CACHE_MIN_PROMPT = 1_024
