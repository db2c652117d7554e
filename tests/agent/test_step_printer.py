"""The live step lines of `assay ask`: tool, one-line arguments, outcome; streamed text as it arrives."""

from __future__ import annotations

from assay.kernel.messages import Message, ToolCall
from assay.plugins.agent.ask import AskOptions, ask
from assay.plugins.agent.cli_ask import StepPrinter, summarize_arguments


class StreamingModel:
    """Streams its answer in three deltas after one sql_query call."""

    model_id = "streaming"

    def __init__(self):
        self.turn = 0

    async def acomplete(self, messages, tools, *, on_text=None):
        self.turn += 1
        if self.turn == 1:
            return Message(
                role="assistant",
                tool_calls=[
                    ToolCall(
                        id="c1",
                        name="sql_query",
                        arguments={
                            "sql": "SELECT region,\n   SUM(amount) AS total\nFROM sales GROUP BY region"
                        },
                    )
                ],
            )
        for delta in ("South ", "sells ", "most."):
            on_text(delta)
        return Message(role="assistant", content="South sells most.")


def test_steps_and_streamed_text_are_printed_as_they_happen(agent_kernel):
    lines: list[str] = []
    printer = StepPrinter(echo=lambda text="", nl=True: lines.append(text + ("\n" if nl else "")))
    transcript = ask(
        agent_kernel(),
        AskOptions(question="who?", databases=["shop"]),
        model=StreamingModel(),
        observers=[printer],
    )
    out = "".join(lines)
    artifact = transcript.artifact_ids[0]
    assert "[1] sql_query  SELECT region, SUM(amount) AS total FROM sales GROUP BY region\n" in out
    assert f"    -> 2 rows, {artifact}, " in out
    assert (
        out.endswith("South sells most.\n") and printer.streamed_answer
    )  # the answer is not printed again


def test_argument_summaries_fit_one_line():
    assert (
        summarize_arguments("sql_query", {"sql": "SELECT 1", "datasource": "shop"})
        == "SELECT 1 datasource=shop"
    )
    long = summarize_arguments("code_interpreter", {"code": "x = 1\n" * 100})
    assert len(long) == 90 and long.endswith("...") and "\n" not in long
    assert summarize_arguments("t", '{"broken": ') == '{"broken":'


def test_the_last_report_is_shown_after_the_answer_and_in_the_run_record(agent_kernel, capsys):
    from assay.plugins.agent.cli_ask import print_result
    from assay.plugins.models.scripted import ScriptedModel

    model = ScriptedModel(
        [
            {"tool": "sql_query", "arguments": {"sql": "SELECT * FROM sales"}},
            {"tool": "generate_report", "arguments": {"status": "partial"}},
            {"text": "see the report"},
        ]
    )
    transcript = ask(
        agent_kernel(), AskOptions(question="report?", databases=["shop"]), model=model
    )
    print_result(transcript, None, "steps")
    out = capsys.readouterr().out
    assert "report: partial, artifact art_report_partial\n# Report\n\nstatus partial" in out
    assert "status: partial (the last report says partial)" in out
    assert transcript.summary()["report"] == {
        "status": "partial",
        "artifact_id": "art_report_partial",
        "text": "# Report\n\nstatus partial",
        "unbound_figures": [],
    }
