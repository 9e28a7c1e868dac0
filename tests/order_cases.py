"""The generated order-lookup ADK eval set the scale tests use: case `order_N` asks "Where is order N?" and
expects one `lookup_order(order_id=N)` call and "Order N has shipped." (`benchmarks/vs_adk_eval.py` writes the
same set for its peers; it does not import tests/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CRITERIA = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}


def order_case(n: int, app_name: str = "shop") -> dict[str, Any]:
    return {
        "eval_id": f"order_{n}",
        "conversation": [
            {
                "invocation_id": f"inv-{n}",
                "user_content": {"role": "user", "parts": [{"text": f"Where is order {n}?"}]},
                "final_response": {"role": "model", "parts": [{"text": f"Order {n} has shipped."}]},
                "intermediate_data": {"tool_uses": [{"name": "lookup_order", "args": {"order_id": n}}]},
            }
        ],
        "session_input": {"app_name": app_name, "user_id": "user", "state": {}},
    }


def write_order_set(folder: Path, count: int, name: str = "orders.evalset.json") -> Path:
    """`order_1` … `order_COUNT` as eval set `orders` in `folder/name`, with its criteria in `test_config.json`."""
    path = folder / name
    cases = [order_case(n) for n in range(1, count + 1)]
    path.write_text(json.dumps({"eval_set_id": "orders", "eval_cases": cases}), encoding="utf-8")
    (folder / "test_config.json").write_text(json.dumps(CRITERIA), encoding="utf-8")
    return path
