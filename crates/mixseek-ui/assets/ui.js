// mixseek ui: the few dynamic parts of the pages. Every text from a run is set with
// textContent, never as HTML.
"use strict";

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

async function post(url, data) {
  const body = new URLSearchParams(data || {});
  const r = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
    body,
    credentials: "same-origin",
  });
  let json = null;
  try { json = await r.json(); } catch (_) { json = { error: "the server answered " + r.status }; }
  if (!r.ok && !json.error) json.error = "the server answered " + r.status;
  return json;
}

function fmtScore(s) { return s === null || s === undefined ? "—" : Number(s).toFixed(2); }
function fmtCost(c) { return c ? "$" + Number(c).toFixed(4) : "—"; }

// ---- Run page -------------------------------------------------------------------------
function setupRunForm() {
  const form = document.getElementById("run-form");
  if (!form) return;
  const out = document.getElementById("preflight-output");
  const err = document.getElementById("run-error");
  const file = document.getElementById("prompt-file");
  if (file) {
    file.addEventListener("change", () => {
      const f = file.files && file.files[0];
      if (!f) return;
      const reader = new FileReader();
      reader.onload = () => { document.getElementById("prompt").value = String(reader.result); };
      reader.readAsText(f);
    });
  }
  const fields = () => ({
    config: document.getElementById("config").value,
    prompt: document.getElementById("prompt").value,
  });
  document.getElementById("preflight").addEventListener("click", async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    out.textContent = "Checking…";
    out.className = "preflight";
    delete out.dataset.ok;
    out.hidden = false;
    const r = await post("/api/preflight", fields());
    out.textContent = r.error ? r.error : r.output;
    out.className = r.ok ? "preflight ok" : "preflight failed";
    out.dataset.ok = r.ok ? "true" : "false";
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const button = document.getElementById("start");
    button.disabled = true;
    const r = await post("/api/runs", fields());
    button.disabled = false;
    if (r.error) { err.textContent = r.error; return; }
    window.location.href = r.live_url;
  });
}

function setupActive() {
  const box = document.getElementById("active-runs");
  if (!box) return;
  const render = (runs) => {
    const tbody = box.querySelector("tbody");
    tbody.replaceChildren();
    for (const r of runs) {
      const tr = el("tr");
      const a = el("a", r.execution_id.slice(0, 8));
      a.href = "/live/" + encodeURIComponent(r.execution_id);
      const td = el("td"); td.appendChild(a); tr.appendChild(td);
      tr.appendChild(el("td", r.user_prompt));
      const st = el("td"); st.appendChild(el("span", r.status, "status " + r.status)); tr.appendChild(st);
      tr.appendChild(el("td", r.total_teams));
      tr.appendChild(el("td", r.started_at || ""));
      tbody.appendChild(tr);
    }
    box.querySelector(".empty").hidden = runs.length > 0;
  };
  const tick = async () => {
    try {
      const r = await fetch("/api/active", { credentials: "same-origin" });
      if (r.ok) render(await r.json());
    } catch (_) { /* the next tick tries again */ }
  };
  setInterval(tick, 2000);
}

// ---- Live view ------------------------------------------------------------------------
function setupLive() {
  const root = document.querySelector("[data-live]");
  if (!root) return;
  const id = root.dataset.live;
  const cancel = document.getElementById("cancel");
  const note = document.getElementById("live-note");
  if (cancel) {
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      const r = await post("/api/runs/" + encodeURIComponent(id) + "/cancel", {});
      note.textContent = r.error ? r.error : "Interrupt sent: no new round starts; committed rounds are kept.";
    });
  }
  let finishedTicks = 0;
  let timer = null;
  const rows = new Map();
  const render = (s) => {
    const setText = (e, text) => { if (e.textContent !== text) e.textContent = text; };
    const st = document.getElementById("exec-status");
    setText(st, s.status);
    st.className = "status " + s.status;
    if (s.user_prompt) setText(document.getElementById("live-prompt"), s.user_prompt);
    setText(document.getElementById("exec-teams"), s.teams.length + " / " + (s.total_teams || s.teams.length));
    // Rows are kept and only the cells that changed are written: with 100 teams polled
    // twice a second, rebuilding the table would keep the browser busy.
    const tbody = document.querySelector("#live-teams tbody");
    const seen = new Set();
    for (const t of s.teams) {
      seen.add(t.team_id);
      let tr = rows.get(t.team_id);
      if (!tr) {
        tr = el("tr");
        tr.dataset.team = t.team_id;
        for (let i = 0; i < 8; i++) tr.appendChild(el("td", "", [1, 3, 4, 5].includes(i) ? "num" : ""));
        tr.children[6].appendChild(el("span"));
        rows.set(t.team_id, tr);
        tbody.appendChild(tr);
      }
      const cells = [
        t.team_name,
        t.current_round + " / " + t.total_rounds,
        t.phase,
        fmtScore(t.best_score),
        String(t.usage.input_tokens + t.usage.output_tokens),
        fmtCost(t.usage.cost_usd),
        null,
        t.error_message || "",
      ];
      cells.forEach((text, i) => {
        if (text !== null && tr.children[i].textContent !== text) tr.children[i].textContent = text;
      });
      const badge = tr.children[6].firstChild;
      if (badge.textContent !== t.status) {
        badge.textContent = t.status;
        badge.className = "status " + t.status;
      }
    }
    for (const [team, tr] of rows) {
      if (!seen.has(team)) { tr.remove(); rows.delete(team); }
    }
    const logText = s.log.join("\n");
    const logEl = document.getElementById("live-log");
    if (logEl.textContent !== logText) logEl.textContent = logText;
    const done = s.status !== "running" && s.status !== "starting";
    const link = document.getElementById("results-link");
    if (link) link.hidden = !done;
    if (cancel) cancel.hidden = !s.cancellable;
    if (done) {
      finishedTicks += 1;
      if (finishedTicks > 2 && timer) { clearInterval(timer); timer = null; }
    }
  };
  // Files seen once and gone since: the run ended and its files were removed (an experiment
  // removes each execution's files when it ends), so the view stops at its last state.
  let seen = false;
  const ended = () => {
    const st = document.getElementById("exec-status");
    st.textContent = "ended";
    st.className = "status ended";
    note.textContent = "This run's progress files are gone: it has ended (an experiment removes each execution's " +
      "files when it ends). Its results open once no run holds the database.";
    const link = document.getElementById("results-link");
    if (link) link.hidden = false;
    if (cancel) cancel.hidden = true;
    if (timer) { clearInterval(timer); timer = null; }
  };
  const tick = async () => {
    try {
      const r = await fetch("/api/live/" + encodeURIComponent(id), { credentials: "same-origin" });
      if (r.ok) {
        seen = true;
        render(await r.json());
      } else if (r.status === 404 && seen) {
        ended();
      }
    } catch (_) { /* the next tick tries again */ }
  };
  tick();
  // Twice a second: a change shows within a second, and an idle page costs one small read.
  timer = setInterval(tick, 500);
}

// ---- Resume ---------------------------------------------------------------------------
function setupResume() {
  const form = document.getElementById("resume-form");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const err = document.getElementById("resume-error");
    err.textContent = "";
    const r = await post(form.getAttribute("action"), { config: document.getElementById("resume-config").value });
    if (r.error) { err.textContent = r.error; return; }
    window.location.href = r.live_url;
  });
}

// ---- Compare selection ----------------------------------------------------------------
function setupCompareSelection() {
  const button = document.getElementById("compare-selected");
  if (!button) return;
  button.addEventListener("click", () => {
    const ids = Array.from(document.querySelectorAll("input.pick:checked")).map((c) => c.value);
    if (ids.length < 2) { document.getElementById("compare-note").textContent = "Pick two executions or more."; return; }
    window.location.href = "/compare?ids=" + ids.map(encodeURIComponent).join(",");
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupRunForm();
  setupActive();
  setupLive();
  setupResume();
  setupCompareSelection();
});
