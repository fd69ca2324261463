"""How a variant's answers were obtained: decoded, or verified against the reference's.

A candidate given the reference's answer to the same prompt reads it at prefill speed and keeps
each token it would have chosen itself (`quantgate.backends.llamacpp._slots`): `verified` when that is every
token and it ends there too (its answer *is* the reference's, obtained without decoding),
`verified_then_decoded` when it decoded from the first position where it would not, `decoded` when
no answer was given. A case is `verified` when each of its model calls was, `decoded` when none was
given an answer. `VerificationSummary` counts them per variant; a verified case has no latency
(`evaluators.latency.decoded_in_full`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from evaluators.results import EvaluatorResult
from evaluators.verified_fidelity import VerifiedFidelity, summarize_verified_fidelity

__all__ = ["Obtained", "VerificationSummary", "case_obtained", "summarize_verification"]

Obtained = Literal["decoded", "verified", "verified_then_decoded"]


def case_obtained(attempts: Sequence[Mapping[str, Any]]) -> Obtained | None:
    """How a case's answers were obtained over its model calls; None when no call says (a backend
    that does not report it, or a record from before verification)."""
    said = [a.get("obtained") for a in attempts if a.get("obtained") is not None]
    if not said:
        return None
    if all(how == "decoded" for how in said):
        return "decoded"
    return "verified" if all(how == "verified" for how in said) else "verified_then_decoded"


def verified_tokens(attempts: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    """(tokens verified, tokens of the answers given) over a case's calls given an answer; None when
    no call was given one."""
    given = [a for a in attempts if (a.get("reported") or {}).get("answer_tokens") is not None]
    if not given:
        return None
    reported = [a["reported"] for a in given]
    return int(sum(r.get("verified_tokens") or 0 for r in reported)), int(
        sum(r["answer_tokens"] for r in reported)
    )


class VerificationSummary(EvaluatorResult):
    """How a variant's answers were obtained (all None when no case says: the reference, a backend
    that does not verify, or a run with verification off)."""

    verified_cases: int | None = Field(
        default=None,
        description="Cases whose every answer was the reference's, read and confirmed token by token.",
    )
    verified_then_decoded_cases: int | None = Field(
        default=None,
        description="Cases given the reference's answer that decoded from the first differing position.",
    )
    decoded_cases: int | None = Field(default=None, description="Cases decoded in full (no answer given).")
    verified_token_share: float | None = Field(
        default=None,
        description="Tokens confirmed over the tokens of the reference's answers given (None: none given).",
    )
    verified_fidelity: VerifiedFidelity | None = Field(
        default=None,
        description="Token fidelity over the positions read while verifying "
        "(`evaluators.verified_fidelity`); None: no case compared any.",
    )


def summarize_verification(cases: Iterable[Sequence[Mapping[str, Any]]]) -> VerificationSummary:
    """Count the cases by how they were obtained, from each case's attempts."""
    attempts = list(cases)
    how = [case_obtained(a) for a in attempts]
    if all(h is None for h in how):
        return VerificationSummary()
    tokens = [t for t in (verified_tokens(a) for a in attempts) if t is not None]
    given = sum(n for _, n in tokens)
    return VerificationSummary(
        verified_cases=how.count("verified"),
        verified_then_decoded_cases=how.count("verified_then_decoded"),
        decoded_cases=how.count("decoded"),
        verified_token_share=sum(v for v, _ in tokens) / given if given else None,
        verified_fidelity=summarize_verified_fidelity(attempts, given=len(tokens)),
    )
