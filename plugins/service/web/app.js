// The assay page: ask a question, watch the steps stream, read the report, download evidence.
// Plain JavaScript, no build step, nothing loaded from elsewhere. The token stays in this tab
// (sessionStorage) and goes out only as the Authorization header of this server's API.
"use strict";

const $ = (id) => document.getElementById(id);
let current = null; // {runId, controller}

function token() { return $("token").value.trim(); }
function headers(extra) { return Object.assign({ Authorization: "Bearer " + token() }, extra || {}); }

function showError(text) {
  $("error").textContent = text;
  $("error").hidden = !text;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({}, options, { headers: headers(options && options.headers) }));
  if (!response.ok) {
    let body = {};
    try { body = await response.json(); } catch (e) { /* not JSON */ }
    const retry = response.headers.get("Retry-After");
    throw new Error((body.code || response.status) + ": " + (body.message || response.statusText) +
      (body.hint ? " (" + body.hint + ")" : "") + (retry ? " - retry in " + retry + " s" : ""));
  }
  return response;
}

async function loadOptions() {
  if (!token()) return;
  try {
    const options = await (await api("/options")).json();
    const select = $("datasource");
    select.replaceChildren(...options.datasources.map((d) => {
      const option = document.createElement("option");
      option.value = d.name;
      option.textContent = d.description ? d.name + " - " + d.description : d.name;
      return option;
    }));
    showError("");
  } catch (e) { showError(e.message); }
}

function artifactLink(id) {
  const a = document.createElement("a");
  a.href = "#";
  a.className = "artifact";
  a.textContent = id;
  a.title = "download " + id;
  a.addEventListener("click", async (event) => {
    event.preventDefault();
    await download("/artifacts/" + encodeURIComponent(id), id);
  });
  return a;
}

async function download(path, name) {
  try {
    const blob = await (await api(path)).blob();
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) { showError(e.message); }
}

function addStep(event) {
  const d = event.data || {};
  const li = document.createElement("li");
  li.dataset.kind = event.kind;
  const kind = document.createElement("span");
  kind.className = "kind";
  if (event.kind === "tool_started") {
    kind.textContent = "calling " + d.tool;
    li.append(kind);
    const pre = document.createElement("pre");
    pre.textContent = JSON.stringify(d.arguments, null, 1);
    li.append(pre);
  } else if (event.kind === "tool_finished") {
    kind.textContent = d.tool + (d.success ? " done" : " failed: " + d.error_code);
    if (!d.success) li.classList.add("failed");
    li.append(kind);
    if (d.row_count !== null && d.row_count !== undefined) li.append(" (" + d.row_count + " rows)");
    if (d.preview) {
      const pre = document.createElement("pre");
      pre.textContent = d.preview;
      li.append(pre);
    }
    (d.artifact_ids || []).forEach((id) => li.append(artifactLink(id)));
  } else if (event.kind === "limit") {
    kind.textContent = "limit reached: " + d.limit;
    li.append(kind);
  } else if (event.kind === "run_finished") {
    const s = d.summary || {};
    kind.textContent = "finished: " + s.status;
    li.append(kind);
    if (s.status_reason) li.append(" - " + s.status_reason);
  } else if (event.kind === "figure_check") {
    if (!d.correction_asked) return;
    kind.textContent = "figure check: not found in the evidence: " +
      [...new Set((d.unsupported || []).map((f) => f.text))].join("; ");
    li.classList.add("failed");
    li.append(kind, " - the model is asked to correct or cite them");
  } else {
    return;
  }
  $("steps").append(li);
}

async function streamEvents(runId, controller) {
  const response = await api("/runs/" + runId + "/events", { signal: controller.signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = frame.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      const kind = (frame.split("\n").find((l) => l.startsWith("event: ")) || "").slice(7);
      if (kind === "end") return;
      if (data) addStep(JSON.parse(data));
    }
  }
}

function showAnswer(run) {
  // the answer as text, each figure not found in the evidence marked (never as HTML: textContent only)
  const box = $("answer");
  box.replaceChildren();
  const text = run.answer || run.status_reason || "";
  const figures = (run.answer && run.unsupported_figures) || [];
  let at = 0;
  figures.slice().sort((a, b) => a.start - b.start).forEach((f) => {
    if (f.start < at || f.end > text.length) return;
    box.append(text.slice(at, f.start));
    const mark = document.createElement("mark");
    mark.className = "unsupported";
    mark.title = "not found in the evidence";
    mark.textContent = text.slice(f.start, f.end);
    box.append(mark);
    at = f.end;
  });
  box.append(text.slice(at));
  const note = $("unsupported");
  const listed = [...new Set(figures.map((f) => f.text))];
  const unbound = run.report_unbound_figures || [];
  note.textContent = [listed.length ? "not found in the evidence: " + listed.join("; ") : "",
    unbound.length ? "report figures not bound to evidence: " + unbound.join("; ") : ""].filter(Boolean).join(" · ");
  note.hidden = !listed.length && !unbound.length;
}

async function finish(runId) {
  const run = await (await api("/runs/" + runId)).json();
  $("status").textContent = run.status;
  $("status").className = run.status === "answered_unverified" ? "unverified" : "";
  showAnswer(run);
  $("answer-box").hidden = false;
  $("export-button").disabled = false;
  $("cancel-button").disabled = true;
  $("ask-button").disabled = false;
  try {
    const html = await (await api("/runs/" + runId + "/report?format=html")).text();
    $("report").srcdoc = html;
    $("report-box").hidden = false;
  } catch (e) {
    try {
      const md = await (await api("/runs/" + runId + "/report?format=md")).text();
      const pre = document.createElement("pre");
      pre.textContent = md;
      $("report").srcdoc = "<pre style='white-space:pre-wrap'>" + pre.innerHTML + "</pre>";
      $("report-box").hidden = false;
    } catch (e2) { /* this run has no report */ }
  }
}

async function ask() {
  showError("");
  sessionStorage.setItem("assay-token", token());
  const body = { question: $("question").value, datasource: $("datasource").value || null };
  $("steps").replaceChildren();
  $("answer-box").hidden = true;
  $("report-box").hidden = true;
  $("export-button").disabled = true;
  try {
    const run = await (await api("/runs", { method: "POST", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json" } })).json();
    current = { runId: run.run_id, controller: new AbortController() };
    $("run").hidden = false;
    $("run-id").textContent = run.run_id;
    $("status").textContent = "running";
    $("ask-button").disabled = true;
    $("cancel-button").disabled = false;
    await streamEvents(run.run_id, current.controller);
    await finish(run.run_id);
  } catch (e) {
    showError(e.message);
    $("ask-button").disabled = false;
  }
}

$("ask-button").addEventListener("click", ask);
$("cancel-button").addEventListener("click", async () => {
  if (!current) return;
  try { await api("/runs/" + current.runId, { method: "DELETE" }); } catch (e) { showError(e.message); }
});
$("export-button").addEventListener("click", () => {
  if (current) download("/runs/" + current.runId + "/export", current.runId + ".zip");
});
$("token").addEventListener("change", loadOptions);
$("token").value = sessionStorage.getItem("assay-token") || "";
loadOptions();
