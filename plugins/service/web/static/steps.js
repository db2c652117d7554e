// A run's events as people read them: each tool call with its SQL or code, its result as a sortable
// table ("n of N rows", the whole artifact downloadable as CSV or Parquet) or a chart, its error in
// words with code and hint, its time; a "thinking" line while the model works.
"use strict";

import { codeBlock, el, jsonBlock, prettySql } from "./render.js";

const PREVIEW_ROWS = 50;

export class StepList {
  constructor(list, thinking, api, download) {
    this.list = list;
    this.thinking = thinking;
    this.api = api;
    this.download = download;
    this.calls = new Map();
  }

  clear() {
    this.list.replaceChildren();
    this.calls.clear();
    this.thinking.hidden = true;
  }

  add(event) {
    const d = event.data || {};
    switch (event.kind) {
      case "model_request": this.thinking.hidden = false; return;
      case "text": return;
      case "tool_started": this.thinking.hidden = true; this.started(d); return;
      case "tool_finished": this.finished(d); return;
      case "limit":
        this.list.append(el("li", { "data-kind": "limit", class: "failed" },
          el("span", { class: "kind", text: "limit reached: " + d.limit })));
        return;
      case "figure_check":
        if (!d.correction_asked) return;
        this.list.append(el("li", { "data-kind": "figure_check", class: "failed" }, el("span", { class: "kind",
          text: "figure check: not found in the evidence: " + [...new Set((d.unsupported || []).map((f) => f.text))].join("; ") }),
          " - the model is asked to correct or cite them"));
        return;
      case "run_finished": {
        this.thinking.hidden = true;
        const s = d.summary || {};
        this.list.append(el("li", { "data-kind": "run_finished" }, el("span", { class: "kind", text: "finished: " + s.status }),
          s.status_reason ? " - " + s.status_reason : ""));
        return;
      }
      default:
    }
  }

  started(d) {
    const head = el("div", { class: "step-head" }, el("span", { class: "kind", text: "calling " + d.tool }));
    const li = el("li", { "data-kind": "tool_started", "data-tool": d.tool }, head, argumentsView(d.tool, d.arguments));
    this.calls.set(d.call_id, { li, head });
    this.list.append(li);
  }

  finished(d) {
    let entry = this.calls.get(d.call_id);
    if (!entry) { this.started(d); entry = this.calls.get(d.call_id); }
    const { li, head } = entry;
    li.dataset.kind = "tool_finished";
    head.querySelector(".kind").textContent = d.tool + (d.success ? " done" : " failed: " + (d.error_code || "error"));
    if (d.elapsed_ms !== null && d.elapsed_ms !== undefined) {
      head.append(el("span", { class: "elapsed", text: formatElapsed(d.elapsed_ms) }));
    }
    if (!d.success) {
      li.classList.add("failed");
      li.append(el("div", { class: "problem" }, el("strong", { text: d.error_code || "error" }), ": ",
        d.message || "the call failed", d.hint ? el("div", { text: "Hint: " + d.hint }) : null));
    }
    const ids = d.artifact_ids || [];
    const links = el("div", { class: "artifacts" }, ids.map((id) => this.artifactLink(id)));
    for (const id of ids) li.append(this.artifactView(id, d));
    li.append(links);
  }

  artifactLink(id) {
    const a = el("a", { href: "#", class: "artifact", title: "download " + id, text: id });
    a.addEventListener("click", (event) => { event.preventDefault(); this.download("/artifacts/" + encodeURIComponent(id), id); });
    return a;
  }

  artifactView(id, call) {
    const box = el("div", { class: "artifact-view", "data-artifact": id });
    this.fill(box, id, call).catch(() => { /* a link to the raw artifact is there either way */ });
    return box;
  }

  async fill(box, id, call) {
    const path = "/artifacts/" + encodeURIComponent(id);
    const meta = await (await this.api(path + "/meta", { quiet: true })).json();
    if (meta.status !== "succeeded" || meta.kind === "report") return;
    if (meta.tabular && meta.columns.length) {
      const selected = await (await this.api(path + "?rows=0:" + PREVIEW_ROWS, { quiet: true })).json();
      box.append(dataTable(id, selected), el("div", { class: "actions" },
        this.button("Download CSV", path + "/download?format=csv", id + ".csv"),
        this.button("Download Parquet", path + "/download?format=parquet", id + ".parquet")));
    } else if (meta.media_type.startsWith("image/")) {
      const url = URL.createObjectURL(await (await this.api(path, { quiet: true })).blob());
      box.append(el("figure", { class: "chart" }, el("a", { href: url, target: "_blank", rel: "noopener" },
        el("img", { src: url, alt: "chart " + id })), el("figcaption", { class: "muted", text: "chart " + id })));
    }
  }

  button(label, path, name) {
    const b = el("button", { type: "button", class: "quiet", text: label });
    b.addEventListener("click", () => this.download(path, name));
    return b;
  }
}

function argumentsView(tool, args) {
  if (args && typeof args.sql === "string") return codeBlock(prettySql(args.sql), "sql");
  if (args && typeof args.code === "string") return codeBlock(args.code, "python");
  if (tool === "render_report" || tool === "generate_report") {
    const doc = (args && args.document) || {};
    return el("p", { class: "muted", text: "report" + (doc.title ? ": " + doc.title : "") });
  }
  return jsonBlock(args === undefined ? {} : args);
}

export function formatElapsed(ms) {
  return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
}

function dataTable(id, selected) {
  const columns = selected.columns;
  let rows = selected.rows.map((r) => Array.isArray(r) ? r : columns.map((c) => r[c]));
  const total = selected.total_rows ?? rows.length;
  const numeric = columns.map((_, i) => rows.length > 0 && rows.every((r) => r[i] === null || typeof r[i] === "number"));
  const body = el("tbody");
  const fill = () => body.replaceChildren(...rows.map((r) => el("tr", {}, r.map((v, i) =>
    el("td", { class: numeric[i] ? "n" : null, text: v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v) })))));
  const heads = columns.map((name, i) => {
    const button = el("button", { type: "button", text: name });
    const th = el("th", { scope: "col", "aria-sort": "none" }, button);
    button.addEventListener("click", () => {
      const descending = th.getAttribute("aria-sort") === "ascending";
      for (const other of th.parentNode.children) other.setAttribute("aria-sort", "none");
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      rows = rows.slice().sort((a, b) => compare(a[i], b[i]) * (descending ? -1 : 1));
      fill();
    });
    return th;
  });
  fill();
  const caption = `${rows.length.toLocaleString()} of ${Number(total).toLocaleString()} rows` +
    (rows.length < total ? " shown; the downloads hold every row" : "");
  return el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": "rows of " + id },
    el("table", { class: "data", "data-artifact": id }, el("caption", { text: caption }),
      el("thead", {}, el("tr", {}, heads)), body));
}

function compare(a, b) {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}
