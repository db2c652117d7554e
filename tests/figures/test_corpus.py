"""The figure check measured: false alarms on honest answers <= 2%, invented figures caught >= 98%.

The corpus (tests/figures/corpus.py) is checked against the evidence of one real run on the sample
retail database (SQLite). `pytest tests/figures/test_corpus.py -s` prints the rates by category
(the figures docs/agent.md gives).
"""

from __future__ import annotations

from collections import Counter

import pytest

from assay.plugins.figures import check_figures
from tests.figures.corpus import capture, corpus


@pytest.fixture(scope="module")
def retail_db(tmp_path_factory):
    from examples.retail.generate import write_sqlite

    path = tmp_path_factory.mktemp("retail") / "retail.db"
    write_sqlite(path, orders=20_000)  # 40 stores and 60 promotions, as in the demo
    return path


@pytest.fixture
def evidence(make_assay_kernel, retail_db, monkeypatch):
    from assay.plugins import evidence_tools, sql

    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"retail=sqlite:///{retail_db}")
    kernel = make_assay_kernel(sql, evidence_tools).start()
    with kernel.new_run() as run:
        yield capture(kernel, run)


def measure(evidence):
    catalog = evidence.run.artifacts.catalog
    outcomes = []
    for case in corpus(evidence):
        check = check_figures(
            case.text, catalog=catalog, artifact_ids=evidence.artifact_ids, question=case.question
        )
        flagged = [f.text for f in check.unsupported]
        outcomes.append((case, flagged))
    return outcomes


def test_the_corpus_has_at_least_60_answers_of_both_kinds(evidence):
    cases = corpus(evidence)
    kinds = Counter(c.category for c in cases)
    assert len(cases) >= 60 and kinds["honest"] >= 30
    assert {"invented", "one digit off", "wrong scale", "preview as total", "injected text"} <= set(
        kinds
    )


def test_false_alarms_on_honest_answers_are_at_most_2_percent_and_invented_figures_are_caught(
    evidence,
):
    outcomes = measure(evidence)
    honest = [(c, f) for c, f in outcomes if c.honest]
    false_alarms = [(c.text, f) for c, f in honest if f]
    invented = [
        (c, figure, figure in f) for c, f in outcomes if not c.honest for figure in c.invented
    ]
    missed = [(c.category, c.text, figure) for c, figure, caught in invented if not caught]
    by_category = Counter(c.category for c, _, _ in invented)
    caught_by = Counter(c.category for c, _, caught in invented if caught)
    print(
        f"\nhonest answers {len(honest)}: false alarms {len(false_alarms)} "
        f"({100 * len(false_alarms) / len(honest):.1f}%) {false_alarms}"
    )
    print(
        f"invented figures {len(invented)}: caught {len(invented) - len(missed)} "
        f"({100 * (len(invented) - len(missed)) / len(invented):.1f}%); missed {missed}"
    )
    for category, count in sorted(by_category.items()):
        print(f"  {category}: {caught_by[category]}/{count}")
    assert len(false_alarms) / len(honest) <= 0.02, false_alarms
    assert (len(invented) - len(missed)) / len(invented) >= 0.98, missed
