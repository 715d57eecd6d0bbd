"""`ctxhealth report`: one self-contained HTML file; a timeline point per turn; text escaped; zones
where the profile puts them; and, in headless Chromium, it renders with no console error and no
request leaving the page (a screenshot is kept as a test artifact)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from audit_fixtures import ClaudeLog
from conftest import invoke
from ctxhealth.analysis import analyse_session
from ctxhealth.policy.profile import default_profile
from ctxhealth.report.html.build import zone_bands
from ctxhealth.sources import read_session

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "claude-code-session.jsonl"
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("CTXHEALTH_TEST_ARTIFACTS", REPO / "test-artifacts"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chat(path: Path, fills: list[int], user_text: str = "Fix the failing parser test") -> Path:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": user_text},
    ]
    for n, fill in enumerate(fills):
        messages.append(
            {"role": "assistant", "id": f"r{n}", "content": f"step {n}", "usage": {"prompt_tokens": fill}}
        )
        messages.append({"role": "user", "content": f"go on {n}"})
    path.write_text(json.dumps({"model": "gpt-4o", "messages": messages}))
    return path


def report(tmp_path: Path, *paths: Path) -> str:
    out = tmp_path / "report.html"
    result = invoke(["report", *map(str, paths), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8")


def check_turns(*paths: Path) -> dict[str, int]:
    result = invoke(["check", "--json", *map(str, paths)])
    return {json.loads(line)["path"]: json.loads(line)["turns"] for line in result.stdout.splitlines()}


def test_one_timeline_point_per_turn_and_nothing_fetched(tmp_path: Path) -> None:
    other = chat(tmp_path / "other.json", [10_000, 90_000, 125_000, 170_000])
    html = report(tmp_path, EXAMPLE, other)
    turns = check_turns(EXAMPLE, other)
    sections = re.findall(r'<section class="session".*?</section>', html, flags=re.S)
    assert len(sections) == 2
    for section in sections:
        path = re.search(r'<div class="muted">(.*?) · ', section)
        assert path is not None
        assert section.count('class="pt"') == turns[path.group(1)]
    # self-contained: no script, style, font or image from anywhere else
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html
    assert "Content-Security-Policy" in html
    assert '<section id="overview">' in html  # two sessions: the overview comes first
    assert html.index('id="overview"') < html.index('class="session"')


def test_a_single_session_has_no_overview_and_lists_its_signals_with_evidence(tmp_path: Path) -> None:
    html = report(tmp_path, EXAMPLE)
    assert 'id="overview"' not in html
    analysis = analyse_session(read_session(EXAMPLE))
    for name, signal in analysis.final.signals.items():
        evidence = ", ".join(str(i) for i in signal.evidence)
        assert f'<tr data-signal="{name}"><td>' in html
        assert f"<td>{evidence}</td>" in html
    # the example's compaction and its failed tool calls are marked on the timeline
    assert html.count('class="ev ev-compaction"') == len(analysis.account.compactions) == 1
    failures = sum(1 for e in analysis.rows.events if e.kind == "tool_failure")
    assert failures > 0
    assert html.count('class="ev ev-tool_failure"') == failures


def test_transcript_text_is_escaped(tmp_path: Path) -> None:
    hostile = chat(
        tmp_path / "hostile.json", [1_000, 2_000], user_text='<script>alert("x")</script> & <img src=x>'
    )
    html = report(tmp_path, hostile)
    assert "<script>alert" not in html and "<img src=x>" not in html
    assert html.count("<script>") == 1  # the page's own hover script


def test_zone_bands_start_where_the_tier_or_the_window_zone_does(tmp_path: Path) -> None:
    profile = default_profile()
    analysis = analyse_session(read_session(chat(tmp_path / "a.json", [1_000])))
    info = analysis.account.model
    th = profile.zones(info)  # the tier's zones fitted inside this model's usable window
    bands = zone_bands(info.tier, info.window, info.usable_window, analysis.account.peak, profile)
    assert [b.zone for b in bands] == ["green", "yellow", "orange", "red", "critical"]
    assert bands[1].low == min(th.sweet_spot, round(profile.window_yellow * info.usable_window))
    assert bands[3].low == min(th.hard_limit, round(profile.window_critical * info.usable_window))
    assert all(a.high == b.low for a, b in itertools.pairwise(bands))
    assert bands[-1].high == info.window


def test_report_needs_paths_or_tables(tmp_path: Path) -> None:
    result = invoke(["report", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 2


@pytest.fixture
def browser() -> Any:
    if not CHROMIUM.exists():
        pytest.skip(f"no chromium binary at {CHROMIUM} (install Debian's chromium: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def test_renders_in_chromium_without_errors_or_requests(browser: Any, tmp_path: Path) -> None:
    other = chat(tmp_path / "other.json", [10_000, 90_000, 125_000, 170_000])
    idle = ClaudeLog("idle").user("go").response(read=0, write=20_000)
    idle.response(read=20_000, write=500).wait(600).response(read=0, write=20_600)
    broken = idle.write(tmp_path / "idle.jsonl")  # one cache break: idle past the 5-minute TTL
    html_path = tmp_path / "report.html"
    html_path.write_text(report(tmp_path, EXAMPLE, other, broken), encoding="utf-8")
    turns = sum(check_turns(EXAMPLE, other, broken).values())
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))

    def route(r: Any) -> None:
        requests.append(r.request.url)
        if r.request.url == html_path.as_uri():
            r.continue_()
        else:
            r.abort()

    page.route("**/*", route)
    page.goto(html_path.as_uri())
    page.wait_for_load_state("load")
    assert page.locator("circle.pt").count() == turns
    assert page.locator("section.session svg.timeline").count() == 3
    # hovering a point shows its turn, fill and decision
    page.locator("circle.pt").first.hover()
    tip = page.locator("#tip")
    assert tip.is_visible()
    assert re.match(r"turn \d+ \(message \d+\): [\d,]+ tokens", tip.inner_text())
    # the cache breaks are marked (the example's compaction, the idle one); the hover gives the
    # cause, the tokens lost and the cost
    marker = page.locator(f'section[id$="{broken.name.replace(".", "-")}"] text.ev-cache_break')
    assert marker.count() == 1
    assert page.locator("text.ev-cache_break").count() == 2
    marker.hover()
    assert tip.inner_text().startswith("cache break: idle")
    assert "tokens lost; cost $" in tip.inner_text()
    assert problems == []
    assert requests == [html_path.as_uri()]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    shutil.copy(html_path, ARTIFACTS / "report.html")
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000


def test_overview_figures_agree_with_check(tmp_path: Path) -> None:
    paths = [
        EXAMPLE,
        chat(tmp_path / "calm.json", [1_000, 2_000]),
        chat(tmp_path / "full.json", [100_000, 150_000, 181_000]),
    ]
    html = report(tmp_path, *paths)
    result = invoke(["check", "--json", *map(str, paths)])
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    unhealthy = [r for r in reports if not r["healthy"]]
    figure = re.search(r"unhealthy at the end</span><b>(\d+)", html)
    assert figure is not None and int(figure.group(1)) == len(unhealthy) > 0
    # every histogram accounts for every session (cost: every priced one)
    for label, expected in (("peak fill, % of window", 3), ("final risk", 3)):
        counts = re.findall(re.escape(label) + r": [^:]*: (\d+) session", html)
        assert len(counts) == 10 and sum(map(int, counts)) == expected, label
    # ranked: the session that got the most unhealthy (past the hard limit) comes first
    table = re.search(r'<table class="ranked">.*?</table>', html, flags=re.S)
    assert table is not None
    rows = re.findall(r'<tr><td title="([^"]*)"', table.group(0))
    assert len(rows) == 3 and rows[0].endswith("full.json")
    assert len(re.findall(r"<td class=\"bad\">", table.group(0))) == len(unhealthy)


def test_total_cost_is_unknown_when_no_session_has_a_price(tmp_path: Path) -> None:
    runs = Path(__file__).parent / "fixtures" / "agents" / "tau-bench-results.json"  # no usage in the log
    html = report(tmp_path, runs)
    figure = re.search(r"total cost</span><b>([^<]*)", html)
    assert figure is not None and figure.group(1).startswith("unknown"), figure


def test_signal_table_words_and_numbers_say_what_they_measure(tmp_path: Path) -> None:
    """The drift detector's value is an on-task overlap (higher is better): the table calls it
    on-task; token counts are integers with separators, never ``1.553e+05``."""
    html = report(tmp_path, chat(tmp_path / "big.json", [10_000, 90_000, 155_300]))
    drift = re.search(r'<tr data-signal="drift"><td>([^<]*)</td><td class="num">([^<]*)<', html)
    assert drift is not None and drift.group(1) == "on-task"
    peak = re.search(r'<tr data-signal="peak_fill"><td>[^<]*</td><td class="num">([^<]*)<', html)
    assert peak is not None and peak.group(1) == "155,300"
    assert not re.search(r'<td class="num">[-\d.]+e[+-]\d+<', html)


def test_overview_says_sent_after_unhealthy_not_waste(tmp_path: Path) -> None:
    """The audit's waste is re-sent unused tool output; the report's figure is the prompt sent after
    the first unhealthy turn and is named so."""
    html = report(tmp_path, EXAMPLE, chat(tmp_path / "full.json", [100_000, 150_000, 181_000]))
    assert 'data-figure="after-unhealthy"' in html and "sent after unhealthy" in html
    assert 'data-figure="waste"' not in html and ">waste<" not in html and "waste, %" not in html


def test_timeline_marker_rows_are_labelled_and_the_x_axis_has_ticks(browser: Any, tmp_path: Path) -> None:
    """Each row of the marker strip has a label, the x axis more than two turn labels; in Chromium
    the labels are inside the chart and do not overlap one another."""
    from ctxhealth.report.html.svg import EVENT_LABELS, MARKER_ROWS, turn_ticks

    fills = [1_000 * (n + 1) for n in range(120)]
    html_path = tmp_path / "report.html"
    html_path.write_text(report(tmp_path, chat(tmp_path / "long.json", fills)), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    page.goto(html_path.as_uri())
    svg = page.locator("svg.timeline").first
    rows = svg.locator("text.rowlabel")
    assert rows.count() == MARKER_ROWS
    assert {t.text_content() for t in rows.all()} == set(EVENT_LABELS.values())
    ticks = svg.locator("text.xlabel")
    labels = [str(t.text_content()) for t in ticks.all()]
    assert len(labels) > 2 and labels[0] == "turn 0" and labels[-1] == str(len(fills) - 1)
    assert [int(t.split()[-1]) for t in labels] == turn_ticks(len(fills) - 1)
    box = svg.bounding_box()
    assert box is not None
    boxes = [b for b in (t.bounding_box() for t in [*ticks.all(), *rows.all()]) if b is not None]
    assert len(boxes) == len(labels) + MARKER_ROWS
    for b in boxes:
        assert box["x"] <= b["x"] and b["x"] + b["width"] <= box["x"] + box["width"] + 0.5
    for a, b in itertools.combinations(boxes, 2):
        apart = (
            a["x"] + a["width"] <= b["x"]
            or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"]
            or b["y"] + b["height"] <= a["y"]
        )
        assert apart, (a, b)
