"""What the fault tests share: the cluster's settings (short bounds, no real back-off waits) and the check
that no run was lost, stuck, executed twice, or left with a transcript that is neither complete nor marked."""

from __future__ import annotations

import json
import time
from collections import Counter

# model turns that take a little time, so runs are still queued and running when the fault comes
PACED = [
    {
        "tool": "sql_query",
        "delay_s": 0.3,
        "arguments": {
            "sql": "SELECT region, SUM(amount) AS total FROM sales GROUP BY region ORDER BY region"
        },
    },
    {"text": "East sold the most.", "delay_s": 0.3},
]
REQUEUE_AFTER_S = 4.0
FINAL = ("queued", "running")


def catalog(url: str, sql: str, *args) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, connect_timeout=5) as conn:
        return conn.execute(sql, args).fetchall()


def settle(url: str, ids: list[str], within_s: float) -> dict[str, str]:
    """Each run's final status, once none is queued or running; fails naming the runs still stuck."""
    deadline = time.monotonic() + within_s
    statuses: dict[str, str] = {}
    while time.monotonic() < deadline:
        try:
            statuses = dict(
                catalog(url, "SELECT run_id, status FROM runs WHERE run_id = ANY(%s)", ids)
            )
        except Exception:  # noqa: BLE001 - the catalog may be coming back
            time.sleep(0.2)
            continue
        if len(statuses) == len(ids) and not any(s in FINAL for s in statuses.values()):
            return statuses
        time.sleep(0.2)
    stuck = {
        i: statuses.get(i, "missing")
        for i in ids
        if statuses.get(i, "missing") in (*FINAL, "missing")
    }
    raise AssertionError(
        f"{len(stuck)} of {len(ids)} runs lost or stuck after {within_s} s: {stuck}"
    )


def assert_no_run_lost(
    url: str, ids: list[str], within_s: float, allowed: tuple[str, ...] = ("answered",)
) -> dict:
    """0 lost, 0 stuck past ``within_s``, 0 executed twice, every transcript complete or marked incomplete.

    Returns the figures of the check (for the report)."""
    statuses = settle(url, ids, within_s)
    kinds: dict[str, list[str]] = {i: [] for i in ids}
    for run_id, kind in catalog(
        url, "SELECT run_id, kind FROM run_events WHERE run_id = ANY(%s) ORDER BY run_id, seq", ids
    ):
        kinds[run_id].append(kind)
    summaries = {
        r: json.loads(s)
        for r, s in catalog(url, "SELECT run_id, summary FROM runs WHERE run_id = ANY(%s)", ids)
    }
    errors = {
        r: json.loads(e)["code"]
        for r, e in catalog(
            url, "SELECT run_id, error FROM runs WHERE run_id = ANY(%s) AND error IS NOT NULL", ids
        )
    }
    twice = [
        i for i in ids if kinds[i].count("run_started") > 1 or kinds[i].count("run_finished") != 1
    ]
    assert not twice, (
        f"runs started twice or not finished exactly once: { {i: kinds[i] for i in twice} }"
    )
    leases = dict(catalog(url, "SELECT run_id, state FROM run_leases WHERE run_id = ANY(%s)", ids))
    assert set(leases.values()) == {"ended"}, leases
    answered = [i for i in ids if statuses[i] == "answered"]
    usual = Counter(tuple(kinds[i]) for i in answered).most_common(1)
    complete = list(usual[0][0]) if usual else []
    for run_id in answered:
        assert kinds[run_id] == complete or summaries[run_id].get("transcript_incomplete"), (
            f"run {run_id}: transcript {kinds[run_id]} is neither complete ({complete}) nor marked incomplete"
        )
    unexpected = {
        i: (statuses[i], errors.get(i), summaries[i].get("status_reason"), kinds[i])
        for i in ids
        if statuses[i] not in allowed
    }
    if unexpected:
        tools = catalog(
            url,
            "SELECT run_id, data FROM run_events WHERE run_id = ANY(%s) AND kind = 'tool_finished'",
            list(unexpected),
        )
        raise AssertionError(
            f"runs that did not end as expected {allowed}: {unexpected}; their tool calls: {tools}"
        )
    return {
        "runs": len(ids),
        "statuses": dict(Counter(statuses.values())),
        "incomplete": sum(1 for i in answered if summaries[i].get("transcript_incomplete")),
    }
