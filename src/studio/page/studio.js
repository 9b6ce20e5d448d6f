// tingshu studio: the page's script. No framework, no build step; it talks
// to the JSON API of the server that sent it.
"use strict";

const SAMPLE = "你好，这是一段试音。今天的天气很不错。";

const token = (() => {
  const params = new URLSearchParams(location.search);
  const t = params.get("token");
  if (t) {
    sessionStorage.setItem("tingshu-token", t);
    // Keep the token out of the address bar (and of screenshots).
    history.replaceState(null, "", location.pathname);
    return t;
  }
  return sessionStorage.getItem("tingshu-token") || "";
})();

const $ = (id) => document.getElementById(id);
const state = { book: null, cast: [], chapter: 0, selection: null, audio: null, paragraphs: new Map(), line: null };

function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v;
    else if (k === "style") for (const [name, value] of Object.entries(v)) e.style.setProperty(name, value);
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c);
  return e;
}

function status(text) { $("status").textContent = text; }

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (method !== "GET") init.headers["X-Tingshu-Token"] = token;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try { message = (await response.json()).error || message; } catch (_) { /* not JSON */ }
    showError(message);
    throw new Error(message);
  }
  showError("");
  return response;
}

// A colour per character, the same every time. Set through the CSSOM: the
// page's Content-Security-Policy refuses inline style attributes.
function colours(name) {
  let h = 0;
  for (const c of name) h = (h * 31 + c.codePointAt(0)) % 360;
  return { "--fg": `hsl(${h}, 60%, 36%)`, "--bg": `hsl(${h}, 75%, 93%)` };
}

async function loadBook() {
  state.book = await (await api("GET", "/api/book")).json();
  state.cast = (await (await api("GET", "/api/cast")).json()).characters;
  const b = state.book;
  $("title").textContent = b.title;
  document.title = `${b.title} — 听书 studio`;
  $("cast-file").textContent = `cast file: ${b.cast_file}`;
  $("lexicon-file").textContent = `lexicon: ${b.lexicon_file}`;
  $("overrides-file").textContent = `overrides: ${b.overrides_file}`;
  $("voices-file").textContent = `voices file: ${b.voices_file}`;
  showChapters();
  showCast();
  showVoices();
}

function showChapters() {
  const list = $("chapters");
  list.replaceChildren();
  for (const c of state.book.chapters) {
    const box = el("input", { type: "checkbox", value: c.index, title: "render this chapter" });
    const button = el("button", { type: "button", "data-chapter": c.index }, c.title || `(${c.index})`);
    if (c.index === state.chapter) button.classList.add("current");
    button.addEventListener("click", () => openChapter(c.index));
    list.append(el("li", {}, box, button));
  }
}

function showCast() {
  const body = $("cast").querySelector("tbody");
  body.replaceChildren();
  for (const s of state.book.speakers) {
    const gender = el("select", { "data-name": s.name, "aria-label": `gender of ${s.name}` });
    for (const g of ["unknown", "male", "female"]) {
      gender.append(el("option", { value: g, selected: g === s.gender }, g));
    }
    const voice = el("select", { "data-name": s.name, "aria-label": `voice of ${s.name}`, class: "voice" });
    voice.append(el("option", { value: "" }, `(${s.reads_with})`));
    for (const v of state.book.voices) {
      voice.append(el("option", { value: v.name, selected: v.name === s.voice }, v.name));
    }
    gender.addEventListener("change", () => saveCharacter(s.name, { gender: gender.value }));
    voice.addEventListener("change", () => saveCharacter(s.name, { voice: voice.value || null }));
    // A character found in the book (no cast file yet): the guessed
    // gender, how sure, and the evidence on hover.
    const guessed = s.evidence
      ? el("span", { class: "guess", title: s.evidence }, ` found · ${Math.round(s.confidence * 100)}%`)
      : "";
    body.append(el("tr", { style: colours(s.name) },
      el("td", { class: "name" }, s.name), el("td", {}, gender, guessed), el("td", {}, voice),
      el("td", {}, String(s.lines))));
  }
}

function showVoices() {
  const list = $("voices");
  list.replaceChildren();
  for (const v of state.book.voices) {
    const play = el("button", { type: "button", "data-voice": v.name }, "▶ sample");
    play.addEventListener("click", () => preview({ text: SAMPLE, voice: v.name }, null));
    const what = `${v.type || v.backend} · ${v.voice}` + (v.speed !== 1 ? ` · speed ${v.speed}` : "");
    list.append(el("li", {}, el("span", {}, el("b", {}, v.name), " ", el("span", { class: "what" }, what)), play));
  }
}

async function saveCharacter(name, change) {
  const characters = state.cast.map((c) => ({ ...c }));
  let c = characters.find((x) => x.name === name);
  if (!c) {
    const speaker = state.book.speakers.find((s) => s.name === name);
    c = { name, aliases: [], gender: speaker ? speaker.gender : "unknown" };
    characters.push(c);
  }
  Object.assign(c, change);
  for (const x of characters) if (!x.voice) delete x.voice;
  try {
    await api("PUT", "/api/cast", { characters });
    status(`saved ${name} to the cast file`);
  } catch (_) { /* shown */ }
  await loadBook();
  if (state.chapter) await openChapter(state.chapter);
}

async function openChapter(n) {
  const chapter = await (await api("GET", `/api/chapters/${n}`)).json();
  state.chapter = n;
  $("chapter-title").textContent = chapter.title;
  for (const b of $("chapters").querySelectorAll("button")) {
    b.classList.toggle("current", Number(b.dataset.chapter) === n);
  }
  const script = $("script");
  script.replaceChildren();
  state.paragraphs = new Map(chapter.paragraphs.map((p) => [p.paragraph, p]));
  for (const p of chapter.paragraphs) {
    const para = el("p", { class: p.override ? "para edited" : "para", "data-paragraph": p.paragraph });
    if (p.override) para.title = `changed; the book has: ${p.override.was}`;
    para.append(el("span", { class: "no" }, String(p.paragraph)));
    for (const s of p.segments) {
      const seg = el("span", { class: `seg ${s.kind}`, title: `${s.kind} → ${s.voice}` });
      if (s.kind === "dialogue") {
        for (const [k, v] of Object.entries(colours(s.speaker || "?"))) seg.style.setProperty(k, v);
        seg.dataset.speaker = s.speaker || "";
        const who = el("b", { class: "who", style: colours(s.speaker || "?") }, speakerLabel(s));
        if (s.gender_unsure) who.title = "a guess between a man and a woman: read by a voice of neither";
        para.append(who);
      }
      seg.append(s.text);
      para.append(seg);
    }
    para.addEventListener("mouseup", () => onParagraph(para));
    script.append(para);
  }
  for (const k of chapter.skipped) {
    script.append(el("p", { class: "skipped", title: "not read" }, k.text));
  }
}

function onParagraph(para) {
  const sel = window.getSelection();
  const text = sel ? sel.toString().replace(/\s+/g, "") : "";
  const paragraph = Number(para.dataset.paragraph);
  if (text) {
    selectWord(text, paragraph);
  } else {
    selectLine(paragraph);
    if (para.querySelector(".seg")) {
      previewStream({ chapter: state.chapter, paragraphs: [paragraph, paragraph] }, para);
    }
  }
}

// Who a quote's label names: the speaker (with "?" when the attribution
// could not tell a man from a woman), or someone the book does not name
// but whose gender it says (她父亲说：).
function speakerLabel(s) {
  if (s.speaker) return s.gender_unsure ? `${s.speaker}?` : s.speaker;
  if (s.unnamed === "female") return "? (a woman)";
  if (s.unnamed === "male") return "? (a man)";
  return "?";
}

// The line editor: the paragraph's text as it is read now, and its speaker.
function selectLine(paragraph) {
  const p = state.paragraphs.get(paragraph);
  if (!p) return;
  state.line = { chapter: state.chapter, paragraph };
  $("line-at").value = `${state.chapter} · ${paragraph}`;
  const o = p.override || {};
  $("line-text").value = o.text !== undefined ? o.text : p.segments.map((s) => s.text).join("");
  const speaker = $("line-speaker");
  const names = state.cast.map((c) => c.name);
  speaker.replaceChildren(el("option", { value: "" }, "as attributed"),
    el("option", { value: "narrator" }, "narrator"),
    ...names.map((n) => el("option", { value: n }, n)));
  speaker.value = o.speaker || "";
  $("line-result").textContent = p.override ? `the book has: ${p.override.was}` : "";
}

async function saveLine(revert) {
  const line = state.line;
  if (!line) return;
  const body = revert
    ? { text: null, speaker: null, render: true }
    : { text: $("line-text").value, speaker: $("line-speaker").value || null, render: true };
  try {
    const r = await (await api("PUT", `/api/chapters/${line.chapter}/paragraphs/${line.paragraph}`, body)).json();
    const said = (segs) => segs.map((s) => (s.kind === "dialogue" ? `[${s.speaker || "?"}] ` : "") + s.text).join(" ");
    status(`chapter ${r.chapter}: rendering the changed line…`);
    await openChapter(line.chapter);
    selectLine(line.paragraph);
    $("line-result").textContent =
      `${said(r.before) || "(nothing)"} → ${said(r.after) || "(left out)"}; ${r.to_synthesize} chunk(s) to synthesize`;
    $("line-result").dataset.synthesize = String(r.to_synthesize);
  } catch (_) { /* shown */ }
}

async function selectWord(text, paragraph) {
  state.selection = { text, paragraph, chapter: state.chapter };
  $("word").value = text;
  await showReading(text);
  $("pinyin").value = $("current").value;
  $("pinyin").focus();
}

async function showReading(text) {
  const r = await (await api("GET", `/api/pinyin?text=${encodeURIComponent(text)}`)).json();
  $("current").value = r.pinyin.filter((s) => s).join(" ");
}

async function preview(request, para) {
  for (const p of document.querySelectorAll(".para.playing")) p.classList.remove("playing");
  if (para) para.classList.add("playing");
  status("synthesizing…");
  const started = performance.now();
  let bytes;
  try {
    bytes = await (await api("POST", "/api/preview", request)).arrayBuffer();
  } catch (_) {
    status("");
    return;
  }
  const ms = Math.round(performance.now() - started);
  let seconds = null;
  try {
    const context = new (window.AudioContext || window.webkitAudioContext)();
    const decoded = await context.decodeAudioData(bytes.slice(0));
    seconds = decoded.duration;
    context.close();
  } catch (e) {
    showError(`the preview does not decode: ${e}`);
  }
  document.body.dataset.lastPreview = JSON.stringify({
    request, bytes: bytes.byteLength, seconds, ms,
  });
  const player = $("player");
  if (state.audio) URL.revokeObjectURL(state.audio);
  state.audio = URL.createObjectURL(new Blob([bytes], { type: "audio/wav" }));
  player.src = state.audio;
  player.play().catch(() => { /* no audio device, or autoplay refused */ });
  status(seconds === null ? `preview in ${ms} ms` : `${seconds.toFixed(1)} s of audio in ${ms} ms`);
}

// A 16-bit mono WAV of `pcm` (Uint8Array chunks) at `rate`, for the player.
function wavOf(chunks, rate) {
  const length = chunks.reduce((n, c) => n + c.length, 0);
  const out = new Uint8Array(44 + length);
  const v = new DataView(out.buffer);
  const text = (at, s) => { for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i); };
  text(0, "RIFF"); v.setUint32(4, 36 + length, true); text(8, "WAVEfmt ");
  v.setUint32(16, 16, true); v.setUint16(20, 1, true); v.setUint16(22, 1, true);
  v.setUint32(24, rate, true); v.setUint32(28, rate * 2, true); v.setUint16(32, 2, true);
  v.setUint16(34, 16, true); text(36, "data"); v.setUint32(40, length, true);
  let at = 44;
  for (const c of chunks) { out.set(c, at); at += c.length; }
  return out;
}

// Plays a passage while it is synthesized: the server streams a WAV chunk by
// chunk (POST /api/preview with "stream": true) and each piece of PCM is
// scheduled on the Web Audio clock as it arrives. The whole passage then
// goes to the player, to hear again or scrub.
async function previewStream(request, para) {
  for (const p of document.querySelectorAll(".para.playing")) p.classList.remove("playing");
  if (para) para.classList.add("playing");
  for (const s of state.sources || []) { try { s.stop(); } catch (_) { /* ended */ } }
  state.sources = [];
  status("synthesizing…");
  const started = performance.now();
  let response;
  try {
    response = await api("POST", "/api/preview", { ...request, stream: true });
  } catch (_) {
    status("");
    return;
  }
  const context = state.context || (state.context = new (window.AudioContext || window.webkitAudioContext)());
  context.resume().catch(() => {});
  const reader = response.body.getReader();
  let rate = 0, header = false, pending = new Uint8Array(0), at = 0, firstMs = null;
  const chunks = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const joined = new Uint8Array(pending.length + value.length);
      joined.set(pending); joined.set(value, pending.length);
      pending = joined;
      if (!header) {
        if (pending.length < 44) continue;
        rate = new DataView(pending.buffer).getUint32(24, true);
        pending = pending.slice(44);
        header = true;
      }
      const usable = pending.length & ~1;
      if (!usable) continue;
      const bytes = pending.slice(0, usable);
      pending = pending.slice(usable);
      chunks.push(bytes);
      const samples = new Int16Array(bytes.buffer);
      const buffer = context.createBuffer(1, samples.length, rate);
      const channel = buffer.getChannelData(0);
      for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 32768;
      const source = context.createBufferSource();
      source.buffer = buffer;
      source.connect(context.destination);
      if (at < context.currentTime) at = context.currentTime + 0.05;
      source.start(at);
      at += buffer.duration;
      state.sources.push(source);
      if (firstMs === null) {
        firstMs = Math.round(performance.now() - started);
        status(`playing (first audio after ${firstMs} ms)…`);
      }
    }
  } catch (e) {
    showError(`the preview stream broke off: ${e}`);
  }
  const ms = Math.round(performance.now() - started);
  const wav = wavOf(chunks, rate || 22050);
  let seconds = null;
  try {
    const check = new (window.OfflineAudioContext)(1, 1, rate || 22050);
    seconds = (await check.decodeAudioData(wav.buffer.slice(0))).duration;
  } catch (e) {
    showError(`the preview does not decode: ${e}`);
  }
  document.body.dataset.lastPreview = JSON.stringify({
    request, bytes: wav.length, seconds, ms, first_ms: firstMs, streamed: true,
  });
  if (state.audio) URL.revokeObjectURL(state.audio);
  state.audio = URL.createObjectURL(new Blob([wav], { type: "audio/wav" }));
  $("player").src = state.audio;
  if (seconds !== null) status(`${seconds.toFixed(1)} s of audio; first sound after ${firstMs} ms, all in ${ms} ms`);
}

async function saveReading() {
  const word = $("word").value.trim();
  const pinyin = $("pinyin").value.trim();
  if (!word) return;
  try {
    await api("PUT", "/api/lexicon", pinyin ? { word, pinyin } : { word, remove: true });
  } catch (_) {
    return;
  }
  await showReading(word);
  status(`saved ${word} = ${pinyin} to the lexicon`);
  document.body.dataset.lastReading = JSON.stringify({ word, pinyin });
}

function hearAgain() {
  const s = state.selection;
  const word = $("word").value.trim();
  if (s && s.text === word && s.chapter) {
    const para = document.querySelector(`.para[data-paragraph="${s.paragraph}"]`);
    previewStream({ chapter: s.chapter, paragraphs: [s.paragraph, s.paragraph] }, para);
  } else if (word) {
    preview({ text: word }, null);
  }
}

async function startRender() {
  const chapters = [...$("chapters").querySelectorAll("input:checked")].map((b) => Number(b.value));
  if (!chapters.length && state.chapter) chapters.push(state.chapter);
  if (!chapters.length) return;
  try {
    await api("POST", "/api/render", { chapters });
  } catch (_) { /* shown */ }
}

function listenForRenders() {
  const events = new EventSource("/api/events");
  events.addEventListener("render", (e) => {
    const ev = JSON.parse(e.data);
    const bar = $("progress");
    bar.max = Math.max(ev.total, 1);
    bar.value = ev.done;
    if (ev.state === "started") status(`rendering ${ev.total} chapter(s)…`);
    if (ev.state === "chapter") {
      if (ev.ok) {
        const play = el("button", { type: "button" }, "▶");
        play.addEventListener("click", () => { $("player").src = ev.url; $("player").play().catch(() => {}); });
        $("renders").append(el("li", { "data-chapter": ev.chapter },
          el("span", {}, `${ev.title} (${ev.duration_s.toFixed(1)} s)`), play));
      } else {
        showError(`${ev.title}: ${ev.error}`);
      }
    }
    if (ev.state === "finished") {
      status(ev.error ? ev.error : `rendered ${ev.done - (ev.failed || 0)} of ${ev.total}`);
      document.body.dataset.rendered = String(ev.done);
    }
  });
}

document.addEventListener("DOMContentLoaded", async () => {
  $("save-reading").addEventListener("click", saveReading);
  $("hear-word").addEventListener("click", hearAgain);
  $("render").addEventListener("click", startRender);
  $("save-line").addEventListener("click", () => saveLine(false));
  $("revert-line").addEventListener("click", () => saveLine(true));
  $("word").addEventListener("change", () => showReading($("word").value.trim()));
  listenForRenders();
  try {
    await loadBook();
    const first = state.book.chapters.find((c) => c.number > 0) || state.book.chapters[0];
    if (first) await openChapter(first.index);
    document.body.dataset.ready = "1";
  } catch (e) {
    showError(String(e.message || e));
  }
});
