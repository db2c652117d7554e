"""The HTML report's stylesheet, inlined into every report (no network, no external file)."""

CSS = """
:root { --fg: #1d232b; --muted: #5b6570; --line: #d8dde3; --accent: #1f5fa8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       color: var(--fg); background: #fff; }
main { max-width: 980px; margin: 0 auto; padding: 24px 28px 64px; position: relative; }
h1 { font-size: 26px; margin: 8px 0 16px; }
h2 { font-size: 20px; margin: 28px 0 10px; }
h3, h4, h5, h6 { margin: 20px 0 8px; }
p { margin: 10px 0; }
.banner { padding: 10px 28px; font-weight: 600; border-bottom: 1px solid var(--line); }
.banner .detail { font-weight: 400; margin-left: 8px; }
.status-completed { background: #e7f5ea; color: #14532d; }
.status-partial { background: #fff4d6; color: #7a4d00; }
.status-failed { background: #fde7e7; color: #8a1414; }
.banner.unverified { background: #fff4d6; color: #7a4d00; }
mark.unbound { background: #ffd7d7; color: #8a1414; font-weight: 700; padding: 0 2px;
               border-bottom: 2px solid #8a1414; }
li.unbound { color: #8a1414; }
.draft-mark { position: fixed; top: 40%; left: 0; right: 0; text-align: center; font-size: 120px;
              font-weight: 800; color: rgba(180, 30, 30, 0.12); transform: rotate(-24deg);
              pointer-events: none; z-index: 10; letter-spacing: 12px; }
.cited { border-bottom: 1px dotted var(--accent); cursor: help; }
sup.ref { font-size: 11px; margin-left: 1px; }
sup.ref a { color: var(--accent); text-decoration: none; }
.missing { color: #8a1414; font-weight: 600; }
.number { margin: 14px 0; font-size: 17px; }
.number .label { color: var(--muted); margin-right: 6px; }
.number .cited { font-size: 22px; font-weight: 700; }
figure { margin: 18px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); background: #fff; }
figcaption, caption { color: var(--muted); font-size: 13px; text-align: left; padding: 6px 0; caption-side: bottom; }
table { border-collapse: collapse; margin: 12px 0; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: #f4f6f8; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { font-size: 13px; padding: 6px 10px; border-left: 3px solid #c98a00; background: #fff8e6; }
.warnings { border: 1px solid #e3b341; background: #fffaf0; padding: 10px 16px; margin: 24px 0; }
.warnings h2 { margin-top: 4px; font-size: 17px; }
.provenance td, .provenance th { font-size: 12px; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.origin { max-width: 360px; overflow-wrap: anywhere; }
details.origin { max-width: none; margin: 2px 0 6px; }
details.origin summary { cursor: pointer; }
details.origin pre { background: #f4f6f8; padding: 8px 10px; overflow-x: auto; white-space: pre-wrap; margin: 4px 0; }
@media print { .draft-mark { position: fixed; } main { max-width: none; } }
"""
