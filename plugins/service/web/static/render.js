// Text made into page elements without ever parsing HTML: Markdown (the answer), SQL and Python
// (highlighted), JSON. Every piece of text goes in by textContent, so nothing a model or a datasource
// wrote can become markup or script: there is nothing to sanitise, hence no sanitiser library.
"use strict";

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// --- Markdown: paragraphs, headings, lists, code blocks, tables; bold, italics, code, http(s) links ---

function inline(text) {
  const out = [];
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\((https?:\/\/[^\s)]+)\))/g;
  let at = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > at) out.push(text.slice(at, m.index));
    if (m[1]) out.push(el("code", { text: m[1].slice(1, -1) }));
    else if (m[2]) out.push(el("strong", {}, ...inline(m[2].slice(2, -2))));
    else if (m[3]) out.push(el("em", {}, ...inline(m[3].slice(1, -1))));
    else out.push(el("a", { href: m[5], rel: "noopener noreferrer", target: "_blank",
      text: m[4].slice(1, m[4].indexOf("](")) }));
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

const cells = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());

export function markdown(text) {
  const root = document.createDocumentFragment();
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i++; continue; }
    const fence = line.match(/^```(\w*)/);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !lines[i].startsWith("```")) body.push(lines[i++]);
      i++;
      root.append(codeBlock(body.join("\n"), fence[1]));
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      root.append(el("h" + Math.min(6, heading[1].length + 3), {}, ...inline(heading[2])));
      i++;
      continue;
    }
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?[\s:|-]+\|?\s*$/.test(lines[i + 1])) {
      const head = cells(line);
      i += 2;
      const rows = [];
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(cells(lines[i++]));
      root.append(el("table", {}, el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, ...inline(h))))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, ...inline(c))))))));
      continue;
    }
    const bullet = /^\s*([-*+]|\d+[.)])\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = el(ordered ? "ol" : "ul");
      while (i < lines.length && bullet.test(lines[i])) list.append(el("li", {}, ...inline(lines[i++].replace(bullet, ""))));
      root.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^(```|#{1,6}\s)/.test(lines[i]) && !bullet.test(lines[i])) para.push(lines[i++]);
    root.append(el("p", {}, ...inline(para.join(" "))));
  }
  return root;
}

// --- code ---------------------------------------------------------------------------------------

const SQL_WORDS = new Set(("select from where group by order having limit offset join left right inner outer full " +
  "cross on as and or not in is null like between case when then else end distinct union all with asc desc count " +
  "sum avg min max cast over partition exists insert update delete values into create table").split(" "));
const PY_WORDS = new Set(("def return import from as for in if elif else while with try except finally class " +
  "lambda and or not is None True False pass break continue yield raise print").split(" "));
const CLAUSES = /\s+(from|where|group by|order by|having|limit|left join|right join|inner join|join|union all|union)\s+/gi;

export function prettySql(sql) {
  const text = String(sql || "").trim();
  if (text.includes("\n")) return text;  // already laid out by whoever wrote it
  return text.replace(CLAUSES, (m, clause) => "\n" + clause.toUpperCase() + " ");
}

export function codeBlock(source, language) {
  const lang = (language || "").toLowerCase();
  const words = lang === "sql" ? SQL_WORDS : (lang === "python" || lang === "py") ? PY_WORDS : null;
  const code = el("code", { class: lang ? "language-" + lang : null });
  const comment = lang === "sql" ? "--[^\\n]*" : "#[^\\n]*";
  const pattern = new RegExp(`(${comment})|('(?:[^'\\\\]|\\\\.)*'|"(?:[^"\\\\]|\\\\.)*")|(\\b\\d+(?:\\.\\d+)?\\b)|([A-Za-z_]\\w*)`, "g");
  let at = 0;
  let m;
  const text = String(source || "");
  while (words && (m = pattern.exec(text)) !== null) {
    if (m.index > at) code.append(text.slice(at, m.index));
    const word = m[4];
    const isWord = word && words.has(lang === "sql" ? word.toLowerCase() : word);
    const cls = m[1] ? "com" : m[2] ? "str" : m[3] ? "num" : isWord ? "kw" : null;
    code.append(cls ? el("span", { class: cls, text: m[0] }) : m[0]);
    at = m.index + m[0].length;
  }
  code.append(text.slice(at));
  return el("pre", { class: "code", tabindex: "0", "aria-label": (lang || "text") + " code" }, code);
}

export function jsonBlock(value) {
  return codeBlock(JSON.stringify(value, null, 2), "");
}
