"""A synthetic agent whose chance of answering each case correctly is set by the case itself.

Case `inputs.p` is the pass probability; `EVALWARD_SIM_DROP` lowers every p (a simulated regression) and
`EVALWARD_SIM_SEED` makes each simulated run reproducible. A pass = the expected tool call.
"""

from __future__ import annotations

import os
import random
from typing import Any


def agent(request: dict[str, Any]) -> dict[str, Any]:
    p = float(request["inputs"]["p"]) - float(os.environ.get("EVALWARD_SIM_DROP", "0"))
    seed = f"{os.environ.get('EVALWARD_SIM_SEED', '0')}/{request['case_id']}/{request['repetition']}"
    ok = random.Random(seed).random() < p
    return {"response": "done", "tool_calls": [{"name": "solve" if ok else "give_up", "args": {}}]}
