"""``python -m tests.model [--bound small|large] [--only NAME] [--traces]``: check every
configuration and every mutation at the bound, print the bounds and the states explored per
configuration (and the counterexamples with ``--traces``); exit 1 when an expectation fails."""

from __future__ import annotations

import argparse
import sys
import time

from tests.model.checker import check
from tests.model.configs import BOUNDS, Expectation, expectations, mutations
from tests.model.protocol import Features


def _met(expectation: Expectation, invariant: str | None, complete: bool) -> bool:
    if not complete:
        return False
    if not expectation.violates:
        return invariant is None
    return invariant in expectation.violates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.model", description=__doc__)
    parser.add_argument("--bound", choices=BOUNDS, default="small")
    parser.add_argument("--only", help="configurations whose name contains this text")
    parser.add_argument("--traces", action="store_true", help="print every counterexample")
    parser.add_argument("--no-mutations", action="store_true")
    args = parser.parse_args(argv)
    features = Features.of_code()
    print(f"== protocol model, bound {args.bound}; the code's features: {features.label()}")
    todo = [("configuration", e) for e in expectations(args.bound, features)]
    if not args.no_mutations:
        todo += [("mutation", e) for e in mutations(args.bound, features)]
    if args.only:
        todo = [(kind, e) for kind, e in todo if args.only in e.config.name]
    failed = 0
    states = 0
    started = time.perf_counter()
    for kind, expectation in todo:
        result = check(expectation.config)
        states += result.states
        invariant = result.violation.invariant if result.violation else None
        ok = _met(expectation, invariant, result.complete)
        failed += not ok
        expected = (
            "expected: no violation"
            if not expectation.violates
            else f"expected: a violation of {' or '.join(sorted(expectation.violates))}"
        )
        print(f"{'ok  ' if ok else 'FAIL'} {kind} {result.summary()}")
        print(f"       bounds: {expectation.config.describe()}; {expected}")
        if result.violation is not None and (args.traces or not ok):
            print("       " + result.counterexample().replace("\n", "\n       "))
        sys.stdout.flush()
    seconds = time.perf_counter() - started
    print(
        f"== {len(todo)} runs, {states} states in {seconds:.0f} s: "
        + ("every expectation met" if not failed else f"{failed} expectation(s) NOT met")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
