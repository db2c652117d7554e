// Files for the next question: dropped on the question box or picked, uploaded to POST /files with a
// progress bar (XMLHttpRequest reports upload progress; fetch does not), shown as removable chips.
// The next POST /runs passes their ids in `files`; the uploads stay the owner's (GET /files).
"use strict";

import { el } from "/static/render.js";

export class Attachments {
  constructor(zone, picker, chips, progress, onError) {
    this.files = []; // [{file_id, name, size}]
    this.chips = chips;
    this.progress = progress;
    this.onError = onError;
    picker.addEventListener("change", () => { this.upload([...picker.files]); picker.value = ""; });
    zone.addEventListener("dragover", (event) => {
      if (![...event.dataTransfer.types].includes("Files")) return;
      event.preventDefault();
      zone.classList.add("dropping");
    });
    zone.addEventListener("dragleave", () => zone.classList.remove("dropping"));
    zone.addEventListener("drop", (event) => {
      zone.classList.remove("dropping");
      if (!event.dataTransfer.files.length) return;
      event.preventDefault();
      this.upload([...event.dataTransfer.files]);
    });
  }

  ids() { return this.files.map((f) => f.file_id); }

  clear() { this.files = []; this.draw(); }

  async upload(files) {
    for (const file of files) {
      try {
        this.files.push(await this.send(file));
        this.draw();
      } catch (e) { this.onError(file.name + ": " + e.message); }
    }
  }

  send(file) {
    const bar = this.progress;
    bar.hidden = false;
    bar.value = 0;
    bar.setAttribute("aria-valuetext", "uploading " + file.name);
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/files");
      xhr.withCredentials = true;
      xhr.upload.addEventListener("progress", (event) => {
        if (event.lengthComputable) bar.value = Math.round((100 * event.loaded) / event.total);
      });
      xhr.addEventListener("load", () => {
        bar.hidden = true;
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
        if (xhr.status === 201) resolve(body);
        else reject(new Error((body.code || xhr.status) + ": " + (body.message || "upload failed") + (body.hint ? " (" + body.hint + ")" : "")));
      });
      xhr.addEventListener("error", () => { bar.hidden = true; reject(new Error("the upload did not reach the server")); });
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    });
  }

  draw() {
    this.chips.replaceChildren(...this.files.map((f) => {
      const remove = el("button", { type: "button", class: "chip-remove", "aria-label": "Remove " + f.name, text: "×" });
      remove.addEventListener("click", () => { this.files = this.files.filter((x) => x !== f); this.draw(); });
      return el("li", { class: "chip", "data-file": f.file_id }, el("span", { text: f.name + " (" + f.table + ")" }), remove);
    }));
    this.chips.hidden = !this.files.length;
  }
}
