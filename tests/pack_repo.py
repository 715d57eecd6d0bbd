"""A small multi-language repository written by the pack tests (no real project's code)."""

from __future__ import annotations

from pathlib import Path

FILES: dict[str, str] = {
    "AGENTS.md": "# Agent rules\n\nRun the tests before every commit.\nNever edit generated files.\n",
    "billing/__init__.py": '"""Billing: invoices and payment reconciliation."""\n',
    "billing/invoice.py": (
        '"""Invoices: totals, taxes and the InvoiceRenderer."""\n\n'
        "from billing.tax import apply_tax\n"
        "from . import currency\n\n\n"
        "class InvoiceRenderer:\n"
        '    """Render an invoice as text."""\n\n'
        "    def render_total(self, amount):\n"
        "        # the total includes tax\n"
        "        return currency.format_amount(apply_tax(amount))\n"
    ),
    "billing/tax.py": (
        '"""Tax rates."""\n\nRATE = 0.2  # flat rate\n\n\n'
        "def apply_tax(amount):\n    return amount * (1 + RATE)\n"
    ),
    "billing/currency.py": 'def format_amount(value):\n    return f"{value:.2f} EUR"\n',
    "billing/refunds.py": (
        "from billing.tax import RATE\n\n\ndef refund(invoice):\n    return -invoice * RATE\n"
    ),
    "shipping/routes.py": (
        '"""Shipping routes between warehouses."""\n\n\n'
        "def shortest_route(graph, start, end):\n    return [start, end]\n"
    ),
    "tests/test_invoice.py": (
        "from billing.invoice import InvoiceRenderer\n\n\n"
        "def test_render_total():\n    assert InvoiceRenderer().render_total(10)\n"
    ),
    "web/app.ts": (
        "import { total } from './lib/total';\nexport function main(): number { return total(2); }\n"
    ),
    "web/lib/total.ts": "export function total(n: number): number {\n  return n * 2;\n}\n",
    "server/main.go": (
        'package main\n\nimport (\n\t"fmt"\n\t"example.com/shop/server/store"\n)\n\n'
        'func main() { fmt.Println(store.Open("x")) }\n'
    ),
    "server/store/store.go": "package store\n\nfunc Open(name string) string { return name }\n",
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "engine/src/lib.rs": "mod parser;\nuse crate::parser::parse;\npub fn run() { parse(); }\n",
    "engine/src/parser.rs": "pub fn parse() {}\n",
    "engine/Cargo.toml": '[package]\nname = "engine"\n',
    "jvm/src/com/shop/App.java": (
        "package com.shop;\n\nimport com.shop.util.Money;\n\npublic class App { Money m; }\n"
    ),
    "jvm/src/com/shop/util/Money.java": "package com.shop.util;\n\npublic class Money { }\n",
    "package-lock.json": '{"lockfileVersion": 3}\n',
    "static/app.min.js": "var a=1;" * 10 + "\n",
    "build/out.py": "GENERATED = True\n",
    "docs/guide.md": "# Guide\n\nHow invoices are rendered and totals computed.\n",
}


def write_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    """Write the repository (or ``files``) under ``root`` and return it."""
    for rel, text in (files or FILES).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
