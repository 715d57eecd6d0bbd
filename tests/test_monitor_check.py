"""``ctxhealth check`` carries the assessment (zone, pressure, risk, action, reasons, signals) and --upto."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke


def _trajectory(path: Path, turns: int) -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "<pr_description>Fix the widget parser.</pr_description>"},
    ]
    for t in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: look at the widget parser.\n\n```bash\ncat widget_{t}.py\n```",
                "extra": {"response": {"usage": {"prompt_tokens": 2000 + 5000 * t, "completion_tokens": 40}}},
            }
        )
        messages.append({"role": "user", "content": "<returncode>1</returncode>\n<output>\nnope\n</output>"})
    doc = {
        "info": {"exit_status": "Submitted"},
        "messages": messages,
        "trajectory_format": "x",
        "instance_id": "i",
    }
    path.write_text(json.dumps(doc))


def test_check_json_has_the_assessment_keys(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    _trajectory(path, 8)
    r = invoke(["check", str(path), "--json"])
    doc = json.loads(r.output)
    assert {"zone", "pressure", "risk", "action", "reasons", "signals"} <= set(doc)
    # every call failed: the failure spiral decides
    assert doc["action"] == "restart" and "failure spiral" in doc["reasons"][0]
    assert doc["signals"]["failure_rate"]["fired"] is True
    assert doc["signals"]["failure_rate"]["evidence"][-1] == 17
    assert doc["turns"] == 8


def test_check_upto_assesses_a_prefix(tmp_path: Path) -> None:
    path = tmp_path / "run.traj.json"
    _trajectory(path, 8)
    r = invoke(["check", str(path), "--json", "--upto", "0.25"])
    doc = json.loads(r.output)
    assert doc["turns"] == 2
    assert doc["fill"]["peak"] == 7000
    assert doc["action"] == "continue"  # two failed calls are not a spiral yet (>= 4 calls)
    bad = invoke(["check", str(path), "--upto", "1.5"])
    assert bad.exit_code == 2
