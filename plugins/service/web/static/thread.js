// A thread as a conversation: the earlier turns (question and answer) of the run shown, oldest first,
// above it. GET /runs/{id} gives a follow-up's `thread` (its chain of run ids, oldest first).
"use strict";

import { el, markdown } from "/static/render.js";

export async function drawTurns(list, run, api) {
  const earlier = (run.thread || []).filter((id) => id !== run.run_id);
  const turns = await Promise.all(earlier.map(async (id) => {
    try { return await (await api("/runs/" + encodeURIComponent(id))).json(); } catch (e) { return { run_id: id, question: id, answer: "(not available: " + e.message + ")" }; }
  }));
  list.replaceChildren(...turns.map((t) => el("li", { class: "turn", "data-run": t.run_id },
    el("p", { class: "turn-q" }, el("span", { class: "sr-only", text: "Question: " }), t.question || ""),
    el("div", { class: "turn-a markdown" }, markdown(t.answer || t.status_reason || t.status || "")))));
  list.hidden = !turns.length;
}
