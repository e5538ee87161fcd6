// agent-memory's web page, its base: the REST API client, building the page as text, the token, shared views.
// Plain JavaScript, no library and no build step; every value from the API enters the page as text, never as HTML.
"use strict";

(() => {
  const TOKEN_KEY = "agent-memory-token";
  const DELETED_KEY = "agent-memory-deleted";
  const PAGE = 20;
  const PREVIEW = 220;
  const main = document.getElementById("main");
  const statusBox = document.getElementById("status");

  // --- the API ------------------------------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      const words = body && body.error ? body.error : `The server answered ${status}.`;
      super(body && body.code ? `${words} (${body.code})` : words);
      this.status = status;
      this.code = body && body.code;
    }
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const init = { method, headers, credentials: "same-origin", cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(path, init);
    } catch (_) {
      throw new ApiError(0, { error: "The server did not answer: is `memory serve` still running?" });
    }
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  function query(params) {
    const kept = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "" && v !== false);
    return kept.length ? `?${new URLSearchParams(kept).toString()}` : "";
  }

  const refPath = (ref) => `/memories/${ref.split("/").map(encodeURIComponent).join("/")}`;

  // --- building the page (text only) --------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else if (name === "text") node.textContent = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function say(message, kind) {
    statusBox.replaceChildren(el("p", { class: kind || "ok" }, message));
  }

  function show(...nodes) {
    main.replaceChildren(...nodes.flat(Infinity).filter((node) => node !== null && node !== undefined && node !== false));
  }

  function link(href, text, attrs) {
    return el("a", { href, ...(attrs || {}) }, text);
  }

  function when(iso) {
    if (!iso) return "never";
    const date = new Date(iso);
    return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
  }

  function timeEl(iso) {
    return iso ? el("time", { datetime: iso, title: iso }, when(iso)) : "—";
  }

  function percent(value) {
    return typeof value === "number" ? `${Math.round(value * 100)}%` : "—";
  }

  function words(text) {
    const seen = new Set();
    for (const word of (text || "").toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) || []) seen.add(word);
    return [...seen].sort((a, b) => b.length - a.length);
  }

  // the content with the query's words marked: text nodes and <mark> elements, never parsed HTML
  function highlighted(content, queryWords) {
    if (!queryWords.length) return [content];
    const escaped = queryWords.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    const pattern = new RegExp(`(${escaped.join("|")})`, "giu");
    return content.split(pattern).map((part, i) => (i % 2 === 1 ? el("mark", {}, part) : part));
  }

  function isExpired(memory) {
    return Boolean(memory.expires_at) && new Date(memory.expires_at).getTime() <= Date.now();
  }

  function preview(content) {
    return content.length > PREVIEW ? `${content.slice(0, PREVIEW)}…` : content;
  }

  function scopes(memory) {
    const parts = [];
    if (memory.global) parts.push("global");
    for (const name of ["agent", "personality", "project"]) if (memory[name]) parts.push(`${name}: ${memory[name]}`);
    if (memory.namespace && memory.namespace.length) parts.push(`namespace: ${memory.namespace.join("/")}`);
    return parts.join(" · ") || "no scope";
  }

  function memoryHref(memory) {
    return `#/memory/${encodeURIComponent(memory.id)}${query({ store: memory.store === "default" ? "" : memory.store })}`;
  }

  function memoryCard(memory, queryWords, extra) {
    const tags = (memory.tags || []).map((t) => el("span", { class: "tag" }, t));
    return el(
      "li",
      { class: "memory", "data-id": memory.id },
      el("div", {}, link(memoryHref(memory), memory.path || memory.id, { class: "path" })),
      el("p", { class: "preview" }, highlighted(preview(memory.content), queryWords || [])),
      el(
        "ul",
        { class: "meta" },
        extra || null,
        el("li", {}, `type: ${memory.type || "—"}`),
        tags.length ? el("li", {}, "tags: ", tags) : null,
        el("li", {}, scopes(memory)),
        el("li", {}, `confidence ${percent(memory.confidence)} (${memory.decay_policy})`),
        memory.expires_at
          ? el("li", { class: isExpired(memory) ? "expired" : null }, isExpired(memory) ? "expired " : "expires ", timeEl(memory.expires_at))
          : null,
        el("li", {}, "updated ", timeEl(memory.updated_at)),
      ),
    );
  }

  // --- the token ----------------------------------------------------------------------------------------------
  function askToken(retry, refused) {
    const input = el("input", { id: "token", type: "password", autocomplete: "off", required: true });
    const form = el(
      "form",
      {
        class: "stack",
        id: "token-form",
        onsubmit: (event) => {
          event.preventDefault();
          sessionStorage.setItem(TOKEN_KEY, input.value.trim());
          statusBox.replaceChildren();
          retry();
        },
      },
      el("label", { for: "token" }, "API token", input),
      el("div", { class: "row" }, el("button", { class: "primary", type: "submit" }, "Use this token")),
    );
    show(
      el("h1", {}, "This server needs its API token"),
      el(
        "p",
        {},
        refused
          ? "The token given was refused: check it and try again."
          : "Give the token the server was started with (MEMORY_API_TOKEN or one of MEMORY_API_TOKENS). " +
              "It is kept in this tab only (sessionStorage) and sent as 'Authorization: Bearer'.",
      ),
      form,
    );
    input.focus();
  }

  // a failed load: the token form on 401, the error in words otherwise
  function failed(error, retry) {
    if (error instanceof ApiError && error.status === 401) {
      const had = Boolean(sessionStorage.getItem(TOKEN_KEY));
      sessionStorage.removeItem(TOKEN_KEY);
      askToken(retry, had);
      return;
    }
    say(error.message, "error");
    if (!main.querySelector("h1")) show(el("h1", {}, "Could not load this view"), el("p", {}, error.message));
  }


  // --- shared by the views ---------------------------------------------------------------------------------
  function browseHref(store, category, offset, expired, deleted) {
    return `#/${query({ store, category, offset: offset || "", expired: expired ? "1" : "", deleted: deleted ? "1" : "" })}`;
  }

  function scoreLine(hit) {
    return el(
      "li",
      {
        class: "score",
        title: "relevance: how close in meaning to the question, on the model's calibrated scale (0 % as close as unrelated text gets, 100 % as close as what answers a question)",
      },
      `relevance ${percent(hit.relevance)}`,
    );
  }

  function recentlyDeleted() {
    try {
      return JSON.parse(sessionStorage.getItem(DELETED_KEY) || "[]");
    } catch (_) {
      return [];
    }
  }

  function keepDeleted(memory) {
    const kept = recentlyDeleted().filter((m) => m.id !== memory.id);
    sessionStorage.setItem(DELETED_KEY, JSON.stringify([memory, ...kept].slice(0, 20)));
  }

  function forgetDeleted(id) {
    sessionStorage.setItem(DELETED_KEY, JSON.stringify(recentlyDeleted().filter((m) => m.id !== id)));
  }

  // what the other files use (memory.js, app.js)
  window.agentMemory = {
    PAGE,
    ApiError,
    api,
    query,
    refPath,
    el,
    say,
    show,
    link,
    when,
    timeEl,
    percent,
    words,
    highlighted,
    isExpired,
    preview,
    scopes,
    memoryHref,
    memoryCard,
    askToken,
    failed,
    browseHref,
    scoreLine,
    recentlyDeleted,
    keepDeleted,
    forgetDeleted,
    main,
    statusBox,
  };
})();
