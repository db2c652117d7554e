// The assay page: sign in once, ask, watch the steps, read the answer and the report, come back to
// any run from the history. Plain JavaScript modules, no build step, nothing loaded from elsewhere.
// Signed in by an HttpOnly session cookie (POST /session): no script here ever holds the token.
"use strict";

import { el, markdown } from "/static/render.js";
import { StepList } from "/static/steps.js";
import { Attachments } from "/static/attach.js";
import { drawTurns } from "/static/thread.js";

const $ = (id) => document.getElementById(id);
let current = null; // {runId, controller, live, thread}
let continuing = true; // the question box continues the thread of the run shown ("New thread": not)
let runs = [];
let reportUrl = null;

// --- the API ----------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, body, retry) {
    super((body.code || status) + ": " + (body.message || "request failed") + (body.hint ? " (" + body.hint + ")" : "") +
      (retry ? " - retry in " + retry + " s" : ""));
    this.status = status;
    this.code = body.code;
  }
}

async function api(path, options) {
  const opts = Object.assign({ credentials: "same-origin" }, options || {});
  delete opts.quiet;
  const response = await fetch(path, opts);
  if (!response.ok) {
    let body = {};
    try { body = await response.json(); } catch (e) { /* not JSON */ }
    if (response.status === 401 && !(options && options.quiet)) showSignIn();
    throw new ApiError(response.status, body, response.headers.get("Retry-After"));
  }
  return response;
}

const postJson = (path, body, method) => api(path, { method: method || "POST", body: JSON.stringify(body || {}),
  headers: { "Content-Type": "application/json" } });

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

async function download(path, name) {
  try {
    const url = URL.createObjectURL(await (await api(path)).blob());
    const a = el("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { showError(e.message); }
}

const steps = new StepList($("steps"), $("thinking"), api, download);
const attachments = new Attachments($("ask"), $("file-input"), $("chips"), $("upload-progress"), showError);

function showThreadNote() {
  const on = Boolean(current && continuing);
  $("thread-note").hidden = !on;
  $("new-thread-button").hidden = !on;
}

async function showTurns(run) {
  if (current) current.thread = run.thread && run.thread.length ? run.thread : [run.run_id];
  await drawTurns($("turns"), run, api);
}

// --- signing in -------------------------------------------------------------------------------

function showSignIn() {
  $("workspace").hidden = true;
  $("signin").hidden = false;
  $("who").hidden = $("signout-button").hidden = true;
  $("token").focus();
}

async function signedIn(owner) {
  $("signin").hidden = true;
  $("workspace").hidden = false;
  $("who").textContent = owner;
  $("who").hidden = $("signout-button").hidden = false;
  await Promise.all([loadOptions(), loadHistory()]);
  const wanted = new URLSearchParams(location.hash.slice(1)).get("run");
  if (wanted) openRun(wanted);
}

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("signin-error").hidden = true;
  try {
    const session = await (await postJson("/session", { token: $("token").value.trim() })).json();
    $("token").value = "";
    await signedIn(session.owner);
  } catch (e) {
    $("signin-error").textContent = e.message;
    $("signin-error").hidden = false;
  }
});

$("signout-button").addEventListener("click", async () => {
  try { await api("/session", { method: "DELETE" }); } catch (e) { /* signed out either way */ }
  history.replaceState(null, "", location.pathname);
  showSignIn();
});

// --- options and history ----------------------------------------------------------------------

async function loadOptions() {
  try {
    const options = await (await api("/options")).json();
    $("datasource").replaceChildren(...options.datasources.map((d) =>
      el("option", { value: d.name, text: d.description ? d.name + " - " + d.description : d.name })));
  } catch (e) { showError(e.message); }
}

async function loadHistory() {
  try {
    runs = (await (await api("/runs?limit=200")).json()).runs;
    drawHistory();
  } catch (e) { showError(e.message); }
}

function drawHistory() {
  const term = $("history-search").value.trim().toLowerCase();
  const shown = runs.filter((r) => !term || (r.question || "").toLowerCase().includes(term));
  $("history-list").replaceChildren(...shown.map((r) => {
    const when = r.started_at ? new Date(r.started_at * 1000).toLocaleString() : "";
    const button = el("button", { type: "button", "data-run": r.run_id, "aria-current": current && current.runId === r.run_id ? "true" : null },
      el("span", { class: "q", text: r.question || r.run_id }),
      el("span", { class: "meta" }, el("span", { class: "badge " + r.status, text: r.status.replace(/_/g, " ") }), when));
    button.addEventListener("click", () => openRun(r.run_id));
    return el("li", {}, button);
  }));
  $("history-empty").hidden = shown.length > 0;
}

$("history-search").addEventListener("input", drawHistory);

// --- a run: asked, reopened or reattached -----------------------------------------------------

function resetRun(runId, question) {
  if (current && current.controller) current.controller.abort();
  current = { runId, controller: new AbortController(), answer: "", thread: [runId] };
  continuing = true;
  showThreadNote();
  $("turns").replaceChildren();
  $("turns").hidden = true;
  steps.clear();
  $("run").hidden = false;
  $("run-question").textContent = question || "";
  $("run-id").textContent = runId;
  $("answer").replaceChildren();
  $("answer-box").hidden = true;
  $("unsupported").hidden = true;
  $("report-box").hidden = true;
  $("verify-result").textContent = "";
  $("export-button").disabled = true;
  history.replaceState(null, "", "#run=" + encodeURIComponent(runId));
  drawHistory();
}

async function openRun(runId) {
  showError("");
  try {
    const run = await (await api("/runs/" + encodeURIComponent(runId))).json();
    resetRun(runId, run.question);
    showTurns(run);
    await follow(run);
  } catch (e) { if (!(e.name === "AbortError")) showError(e.message); }
}

async function follow(run) {
  const going = run.status === "queued" || run.status === "running";
  $("status").textContent = run.status;
  $("ask-button").disabled = going;
  $("cancel-button").disabled = !going;
  const mine = current;
  await streamEvents(run.run_id, mine);
  if (current === mine) await finish(run.run_id);
}

async function streamEvents(runId, mine) {
  const response = await api("/runs/" + encodeURIComponent(runId) + "/events", { signal: mine.controller.signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const kind = (frame.split("\n").find((l) => l.startsWith("event: ")) || "").slice(7);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (kind === "end") return;
      if (!data || current !== mine) continue;
      const event = JSON.parse(data);
      if (kind === "error") { showError(event.code + ": " + event.message); return; }
      if (event.kind === "text") streamAnswer(event.data.delta || "");
      if (event.kind === "model_request") mine.answer = "";  // a new turn: what streams next is its text
      steps.add(event);
    }
  }
}

function streamAnswer(delta) {
  current.answer += delta;
  $("answer").replaceChildren(markdown(current.answer));
  $("answer-box").hidden = false;
}

function showAnswer(run) {
  // Markdown; an answer with figures not found in the evidence is shown as text with them marked
  const box = $("answer");
  const text = run.answer || run.status_reason || "";
  const figures = (run.answer && run.unsupported_figures) || [];
  if (!figures.length) {
    box.replaceChildren(markdown(text));
  } else {
    box.replaceChildren();
    let at = 0;
    figures.slice().sort((a, b) => a.start - b.start).forEach((f) => {
      if (f.start < at || f.end > text.length) return;
      box.append(text.slice(at, f.start), el("mark", { class: "unsupported", title: "not found in the evidence",
        text: text.slice(f.start, f.end) }));
      at = f.end;
    });
    box.append(text.slice(at));
  }
  const listed = [...new Set(figures.map((f) => f.text))];
  const unbound = run.report_unbound_figures || [];
  $("unsupported").textContent = [listed.length ? "not found in the evidence: " + listed.join("; ") : "",
    unbound.length ? "report figures not bound to evidence: " + unbound.join("; ") : ""].filter(Boolean).join(" · ");
  $("unsupported").hidden = !listed.length && !unbound.length;
}

async function finish(runId) {
  const run = await (await api("/runs/" + encodeURIComponent(runId))).json();
  $("status").textContent = run.status;
  $("status").className = run.status === "answered_unverified" ? "unverified" : "";
  showAnswer(run);
  $("answer-box").hidden = false;
  $("export-button").disabled = false;
  $("cancel-button").disabled = true;
  $("ask-button").disabled = false;
  $("thinking").hidden = true;
  await showTurns(run);
  const known = runs.find((r) => r.run_id === runId);
  if (known) { known.status = run.status; drawHistory(); }
  await showReport(runId);
}

async function showReport(runId) {
  const base = "/runs/" + encodeURIComponent(runId) + "/report";
  let html;
  try {
    if (!(await (await api(base + "/info", { quiet: true })).json()).has_report) return;
    html = await (await api(base + "?format=html", { quiet: true })).text();
  } catch (e) { return; } // no report to show
  // a blob: URL, not srcdoc: the report's own #citation links then move within the report
  if (reportUrl) URL.revokeObjectURL(reportUrl);
  reportUrl = URL.createObjectURL(new Blob([html], { type: "text/html" }));
  $("report").src = reportUrl;
  $("report-open").href = reportUrl;
  $("report-box").hidden = false;
}

async function ask() {
  const question = $("question").value.trim();
  if (!question || $("ask-button").disabled) return;
  showError("");
  try {
    const parent = continuing && current ? current : null;
    const body = { question, datasource: $("datasource").value || null };
    if (parent) body.parent_run_id = parent.runId;
    if (attachments.ids().length) body.files = attachments.ids();
    const run = await (await postJson("/runs", body)).json();
    attachments.clear();
    $("question").value = "";
    runs.unshift(run);
    resetRun(run.run_id, question);
    if (parent) showTurns({ run_id: run.run_id, thread: [...parent.thread, run.run_id] });
    await follow(run);
  } catch (e) {
    if (e.name !== "AbortError") showError(e.message);
    $("ask-button").disabled = false;
  }
}

async function cancel() {
  if (!current || $("cancel-button").disabled) return;
  try { await api("/runs/" + encodeURIComponent(current.runId), { method: "DELETE" }); } catch (e) { showError(e.message); }
}

$("ask-button").addEventListener("click", ask);
$("attach-button").addEventListener("click", () => $("file-input").click());
$("new-thread-button").addEventListener("click", () => {
  continuing = false;
  showThreadNote();
  $("question").focus();
});
$("cancel-button").addEventListener("click", cancel);
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); ask(); }
});
document.addEventListener("keydown", (event) => { if (event.key === "Escape") cancel(); });
$("export-button").addEventListener("click", () => {
  if (current) download("/runs/" + encodeURIComponent(current.runId) + "/export", current.runId + ".zip");
});
$("report-pdf").addEventListener("click", () => {
  if (current) download("/runs/" + encodeURIComponent(current.runId) + "/report?format=pdf", current.runId + ".pdf");
});
$("report-verify").addEventListener("click", async () => {
  const out = $("verify-result");
  out.textContent = "verifying…";
  out.className = "";
  try {
    const found = await (await api("/runs/" + encodeURIComponent(current.runId) + "/report/verify")).json();
    out.textContent = found.ok ? `verified: ${found.checked} citation(s) re-read, the report re-renders the same`
      : "not verified: " + [...found.problems, ...found.unbound.map((f) => "unbound figure " + f)].join("; ");
    out.className = found.ok ? "ok" : "bad";
  } catch (e) { out.textContent = e.message; out.className = "bad"; }
});
window.addEventListener("hashchange", () => {
  const wanted = new URLSearchParams(location.hash.slice(1)).get("run");
  if (wanted && (!current || current.runId !== wanted)) openRun(wanted);
});

api("/session", { quiet: true }).then((r) => r.json()).then((s) => s.signed_in ? signedIn(s.owner) : showSignIn())
  .catch(showSignIn);
