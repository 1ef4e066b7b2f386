"""The response cache with claims (:class:`agentstats.llm.cache.JudgeCache`): states, stale claims, concurrent opening.

Moved from tests/scoring/test_judge.py with the cache (agentstats/llm/cache.py); the judge-level claim test (two
judges on one cache pay once) stays there.
"""

from __future__ import annotations

import time

from agentstats.llm.cache import JudgeCache


def test_claims_cached_mine_busy_and_release(tmp_path):
    a = JudgeCache(tmp_path, lease_s=30)
    b = JudgeCache(tmp_path, lease_s=30)
    assert a.claim("k") == ("mine", None)
    assert b.claim("k") == ("busy", None)  # a live owner has it
    assert a.claim("k") == ("mine", None)  # claiming again is idempotent for the owner
    found, free = b.poll(["k"])
    assert found == {} and free == set()
    a.put("k", {"score": 1.0})  # storing the verdict releases the claim
    assert a.claims().empty
    assert b.claim("k") == ("cached", {"score": 1.0})
    assert b.poll(["k"]) == ({"k": {"score": 1.0}}, set())
    assert a.claim("other") == ("mine", None)
    a.release("other")  # e.g. the verdict ended missing: another process may try
    assert b.claim("other") == ("mine", None)
    b.release_all()
    assert b.claims().empty


def test_stale_claims_are_taken_over(tmp_path):
    import subprocess
    import sys

    owner = JudgeCache(tmp_path, lease_s=30)
    other = JudgeCache(tmp_path, lease_s=30)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with owner._lock:  # a claim left by a process that no longer exists (killed mid-run)
        owner._con.execute("INSERT INTO claims VALUES ('k1', 'gone', ?, ?, ?)", (owner.host, dead.pid, time.time()))
        # and one whose owner stopped its heartbeat long ago (another host, so its pid cannot be checked)
        owner._con.execute("INSERT INTO claims VALUES ('k2', 'far', 'other-host', 1, ?)", (time.time() - 31,))
        owner._con.execute("INSERT INTO claims VALUES ('k3', 'far', 'other-host', 1, ?)", (time.time(),))
    assert other.poll(["k1", "k2", "k3"]) == ({}, {"k1", "k2"})
    assert other.claim("k1") == ("mine", None) and other.claim("k2") == ("mine", None)
    assert other.claim("k3") == ("busy", None)  # live: fresh heartbeat
    hb = other.claims().set_index("key")["heartbeat"]
    time.sleep(0.01)
    assert other.heartbeat() == 2 and (other.claims().set_index("key")["heartbeat"].loc[["k1", "k2"]] > hb.loc[
        ["k1", "k2"]]).all()


def test_judges_opening_a_new_cache_at_once_all_succeed(tmp_path):
    """Opening a fresh cache from several threads at once never fails with "database is locked" (it did, 1 in ~30)."""
    import threading

    for rep in range(25):
        path = tmp_path / f"c{rep}"
        errors: list[BaseException] = []
        opened: list[JudgeCache] = []

        def open_one(path=path, errors=errors, opened=opened):
            try:
                opened.append(JudgeCache(path))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=open_one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and len(opened) == 4
        assert opened[0]._con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
