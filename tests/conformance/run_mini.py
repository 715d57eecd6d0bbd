"""Runs mini-swe-agent 2.x (its own default agent, litellm model and local environment) on one task against a
fake chat-completions server; run as a script by ``test_mini_swe_agent.py`` so the agent gets a scratch HOME.

Usage: ``python run_mini.py JOBS`` where JOBS is a JSON list of ``[BASE_URL, MODE, TASK, OUTPUT]`` (one
process for every run: litellm takes seconds to import), MODE ``toolcall`` (``mini.yaml``, the default) or
``text`` (``mini_textbased.yaml``: actions fenced as ``mswea_bash_command``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from minisweagent.agents.default import DefaultAgent
from minisweagent.config import builtin_config_dir
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.litellm_model import LitellmModel
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel


def main() -> None:
    for base_url, mode, task, output in json.loads(sys.argv[1]):
        run(base_url, mode, task, output)


def run(base_url: str, mode: str, task: str, output: str) -> None:
    name = "mini.yaml" if mode == "toolcall" else "mini_textbased.yaml"
    config = yaml.safe_load((builtin_config_dir / name).read_text())
    model_config = {
        **config.get("model", {}),
        "model_name": "openai/gpt-5.5",
        "model_kwargs": {"api_base": base_url, "api_key": "sk-fake", "drop_params": True},
        "cost_tracking": "ignore_errors",
    }
    model_class = LitellmModel if mode == "toolcall" else LitellmTextbasedModel
    model = model_class(**model_config)
    env = LocalEnvironment(**{**config.get("environment", {}), "cwd": str(Path(output).parent)})
    agent_config = {**config.get("agent", {}), "step_limit": 20, "output_path": Path(output)}
    agent_config.pop("mode", None)  # the interactive agent's; the default agent runs unattended
    agent = DefaultAgent(model, env, **agent_config)
    agent.run(task)


if __name__ == "__main__":
    main()
