"""LoadError crosses a process boundary (a pool's worker, a Ray task) as the same error: message and problems."""

from __future__ import annotations

import pickle

import cloudpickle

from agentstats.records.problems import LoadError, Problem


def test_a_load_error_pickles_with_its_message_problems_and_attributes():
    problems = [Problem("runs.jsonl", 3, "trial", "Field required"), Problem("runs.jsonl", 7, None, "not JSON")]
    err = LoadError(problems, "runs.jsonl", hint="see docs/data-format.md")
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        back = loads(dumps(err))
        assert type(back) is LoadError and isinstance(back, ValueError)
        assert str(back) == ("2 problems in runs.jsonl:\n  runs.jsonl, line 3, field 'trial': Field required\n"
                             "  runs.jsonl, line 7: not JSON\nsee docs/data-format.md")
        assert back.problems == problems and back.source == "runs.jsonl" and back.hint == "see docs/data-format.md"
        assert back.head == "2 problems in runs.jsonl" and back.skippable is True
