"""How a step states a finding: the `Finding` it returns and the number formats every message shares."""

from __future__ import annotations

from evalward.model.cases import CaseKey
from evalward.model.verdict import Finding, FindingKind, Severity


def finding(
    kind: FindingKind,
    severity: Severity,
    message: str,
    *,
    key: CaseKey | None = None,
    metric: str | None = None,
    baseline_value: float | None = None,
    current_value: float | None = None,
    effect: float | None = None,
    ci: tuple[float | None, float | None] = (None, None),
    p_value: float | None = None,
    test: str | None = None,
) -> Finding:
    """One finding; `key` names the case it concerns, `ci` is its (ci_low, ci_high)."""
    return Finding(
        kind=kind,
        severity=severity,
        message=message,
        metric=metric,
        eval_set_id=key[0] if key else None,
        case_id=key[1] if key else None,
        baseline_value=baseline_value,
        current_value=current_value,
        effect=effect,
        ci_low=ci[0],
        ci_high=ci[1],
        p_value=p_value,
        test=test,
    )


def fmt_num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def fmt_signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def fmt_p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def case_name(key: CaseKey) -> str:
    return f"{key[0]}/{key[1]}"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
