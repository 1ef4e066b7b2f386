"""Agreement of agentstats' deterministic tool scorer (``bfcl`` preset) with BFCL's own verdicts.

Reads ``../shared/data/bfcl-results-2024-08`` (BFCL 2024-08-11 results of 71 models, gorilla data @ de8307b4),
imports every (model, entry) of the AST categories, scores it with :func:`agentstats.scoring.bfcl.bfcl_verdict`
and compares with BFCL's pass/fail. Prints the per-category table (Markdown) and the disagreements by kind.

Usage: ``python benchmarks/bfcl_agreement.py [--data PATH] [--models m1,m2] [--examples N]``
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from agentstats.io.readers.bfcl import AST_CATEGORIES, import_bfcl, output_style
from agentstats.scoring.bfcl import bfcl_verdict

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bfcl-results-2024-08"


def disagreement_kind(trial, ours: bool, theirs: bool, score, decode_error: str | None) -> str:
    """Coarse kind of a disagreement, for the docs table."""
    side = "we pass, BFCL fails" if ours else "we fail, BFCL passes"
    if decode_error is not None:
        return f"{side}: our decoder failed ({decode_error.split(':')[0]})"
    if not ours:
        reasons = collections.Counter(d.reason for p in score.pairs for d in p.diffs)
        if score.selection < 1:
            return f"{side}: call count/names differ"
        return f"{side}: argument {'/'.join(sorted(reasons)) or 'mismatch'}"
    return f"{side}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT)
    ap.add_argument("--models", default=None, help="comma-separated model folder names (default: all)")
    ap.add_argument("--examples", type=int, default=0, help="print N examples per disagreement kind")
    args = ap.parse_args(argv)
    if not args.data.exists():
        print(f"BFCL data not found at {args.data}", file=sys.stderr)
        return 2
    models = args.models.split(",") if args.models else None
    imp = import_bfcl(args.data, models=models)
    per_cat = collections.defaultdict(lambda: [0, 0, 0, 0])  # n, agree, bfcl_pass, our_pass
    kinds: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    for t in imp.trials:
        cat = t.tags[0]
        theirs = imp.verdicts[(t.agent, t.task_id)]
        ours, score = bfcl_verdict(t)
        row = per_cat[cat]
        row[0] += 1
        row[1] += ours == theirs
        row[2] += theirs
        row[3] += ours
        if ours != theirs:
            derr = imp.decode_errors.get((t.agent, t.task_id))
            if derr is None and not ours:
                _, score = bfcl_verdict(t, details=True)  # re-score with diffs for the explanation
            k = f"{disagreement_kind(t, ours, theirs, score, derr)} [style {output_style(t.agent)}]"
            kinds[k] += 1
            if len(examples[k]) < args.examples:
                examples[k].append(f"{t.agent} {t.task_id}: {str(t.interactions[0].answer)[:160]!r}")
    n_models = len({t.agent for t in imp.trials})
    print(f"Models: {n_models}; entries: {len(imp.trials)}\n")
    print("| category | entries | BFCL pass rate | our pass rate | agreement | disagreements |")
    print("|---|---|---|---|---|---|")
    tot = [0, 0, 0, 0]
    for cat in AST_CATEGORIES:
        if cat not in per_cat:
            continue
        n, a, bp, op = per_cat[cat]
        tot = [x + y for x, y in zip(tot, per_cat[cat], strict=True)]
        print(f"| {cat} | {n} | {bp / n:.4f} | {op / n:.4f} | {a / n:.4f} | {n - a} |")
    n, a, bp, op = tot
    print(f"| **all** | {n} | {bp / n:.4f} | {op / n:.4f} | **{a / n:.4f}** | {n - a} |")
    print("\n| disagreement kind | count |\n|---|---|")
    for k, v in kinds.most_common():
        print(f"| {k} | {v} |")
    if args.examples:
        for k, ex in examples.items():
            print(f"\n## {k}")
            for e in ex:
                print("  ", e)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
