"""``evictlens conformance``: run the shared test vectors through the kubelet port."""

from replay.conformance.runner import CaseResult, run_cases

__all__ = ["CaseResult", "run_cases"]
