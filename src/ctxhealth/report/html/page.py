"""The page around the charts: inline style, the hover script, and the document skeleton.

Everything is inline (no fonts, images, scripts or styles from anywhere else), so the file works
from ``file://`` with the network off. The one script only moves a tooltip: the charts are SVG
and need no script to draw.
"""

from __future__ import annotations

from ctxhealth.report.html.shown import shown

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1040px;
padding:16px 20px 60px;color:#222}
h1{font-size:22px;margin:8px 0 2px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin:20px 0 4px;word-break:break-all}
.muted{color:#666}.figures{display:flex;flex-wrap:wrap;gap:8px 22px;margin:8px 0}
.figures div b{display:block;font-size:17px}
.charts{display:flex;flex-wrap:wrap;gap:14px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bad{color:#b71c1c;font-weight:600}.ok{color:#2e7d32}
svg text{font-size:11px}svg text.axis,svg text.title{fill:#444}svg text.title{font-size:12px;font-weight:600}
svg .ev{font-size:12px;cursor:default}
.legend span{margin-right:14px;white-space:nowrap}
#tip{position:absolute;display:none;max-width:460px;background:#263238;color:#fff;padding:6px 8px;
border-radius:4px;font-size:12px;white-space:pre-wrap;pointer-events:none;z-index:10}
section.session{margin-top:26px}
"""

SCRIPT = """
(function () {
  var tip = document.getElementById("tip");
  document.addEventListener("mouseover", function (e) {
    var el = e.target && e.target.closest ? e.target.closest("[data-tip]") : null;
    if (!el) { tip.style.display = "none"; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.style.display = "block";
  });
  document.addEventListener("mousemove", function (e) {
    tip.style.left = Math.min(e.pageX + 14, document.body.scrollWidth - 480) + "px";
    tip.style.top = (e.pageY + 14) + "px";
  });
})();
"""


def document(title: str, body: str) -> str:
    """The whole HTML file around ``body`` (already escaped markup)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # nothing may be fetched: the policy makes a stray reference fail instead of leaking
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        f"<title>{shown(title)}</title><style>{STYLE}</style></head><body>"
        f'{body}<div id="tip"></div><script>{SCRIPT}</script></body></html>\n'
    )
