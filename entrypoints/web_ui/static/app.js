// agent-memory's web page: browse, search, read and correct memories through the REST API (same origin, JSON only).
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

  // --- browse -------------------------------------------------------------------------------------------------
  function browseHref(store, category, offset, expired) {
    return `#/${query({ store, category, offset: offset || "", expired: expired ? "1" : "" })}`;
  }

  function crumbs(store, category) {
    const parts = [link(browseHref(store, ""), store || "default")];
    let path = "";
    for (const segment of (category || "").split("/").filter(Boolean)) {
      path = path ? `${path}/${segment}` : segment;
      parts.push(" / ", link(browseHref(store, path), segment));
    }
    return el("nav", { class: "crumbs", "aria-label": "Category" }, parts);
  }

  function deletedPanel() {
    const deleted = recentlyDeleted();
    if (!deleted.length) return null;
    return el(
      "section",
      { class: "panel", id: "deleted" },
      el("h2", {}, "Deleted in this tab"),
      el("p", { class: "muted" }, "Soft-deleted memories stay stored but hidden; restore puts one back at its path."),
      el(
        "ul",
        { class: "memories" },
        deleted.map((memory) =>
          el(
            "li",
            { class: "memory" },
            el("div", { class: "path" }, memory.path || memory.id),
            el("p", { class: "preview" }, preview(memory.content)),
            el("button", { type: "button", onclick: () => restore(memory) }, `Restore ${memory.path || "memory"}`),
          ),
        ),
      ),
    );
  }

  function storeLinks(stores, current) {
    return stores.stores.map((s) =>
      el(
        "li",
        {},
        link(browseHref(s.name === "default" ? "" : s.name, ""), [s.name, " ", el("span", { class: "count" }, `(${s.memory_count})`)], {
          "aria-current": s.name === current ? "true" : null,
        }),
      ),
    );
  }

  // the list first (what the reader came for), then the stores with their counts: the server answers one
  // request at a time, so the list is asked for first and drawn as soon as it comes
  async function browse(params) {
    const store = params.get("store") || "";
    const category = params.get("category") || "";
    const offset = Number(params.get("offset") || 0);
    const expired = params.get("expired") === "1";
    const listing = await api(
      "GET",
      `/memories${query({ store, category, limit: PAGE, offset: offset || "", include_expired: expired ? "true" : "" })}`,
    );
    const stores = api("GET", "/stores");
    const cats = listing.subcategories.map((sub) =>
      el(
        "li",
        {},
        link(browseHref(store, sub.path, 0, expired), [sub.path.split("/").pop(), " ", el("span", { class: "count" }, `(${sub.memory_count})`)], {
          title: sub.description || sub.path,
        }),
      ),
    );
    const last = Math.min(offset + listing.count, listing.total);
    const pager = el(
      "div",
      { class: "pager" },
      el("span", {}, listing.total ? `${offset + 1}–${last} of ${listing.total}` : "No memories here."),
      offset > 0 ? link(browseHref(store, category, Math.max(0, offset - PAGE), expired), "← Newer") : null,
      last < listing.total ? link(browseHref(store, category, offset + PAGE, expired), "Older →") : null,
      link(browseHref(store, category, 0, !expired), expired ? "Hide expired" : "Show expired", { id: "toggle-expired" }),
    );
    const storeList = el("ul", { class: "stores", "aria-label": "Stores" }, el("li", { class: "muted" }, store || "default"));
    show(
      el("h1", {}, category ? `Category ${category}` : "Memories"),
      el("h2", { class: "sr" }, "Stores"),
      storeList,
      crumbs(store, category),
      listing.description ? el("p", { class: "muted" }, listing.description) : null,
      cats.length ? el("ul", { class: "cats", "aria-label": "Categories" }, cats) : null,
      pager,
      el("ul", { class: "memories", id: "memory-list" }, listing.memories.map((m) => memoryCard(m))),
      listing.total > PAGE ? pager.cloneNode(true) : null,
      deletedPanel(),
    );
    performance.mark("memory-list-rendered");
    storeList.replaceChildren(...storeLinks(await stores, store || "default"));
  }

  // --- search -------------------------------------------------------------------------------------------------
  const FILTERS = ["tags", "type", "category", "agent", "personality", "project", "store", "mode"];

  function searchBody(params) {
    const body = { query: params.get("q"), limit: PAGE, offset: Number(params.get("offset") || 0) };
    const tags = (params.get("tags") || "").split(",").map((t) => t.trim()).filter(Boolean);
    if (tags.length) body.tags = tags;
    for (const name of ["type", "category", "agent", "personality", "project"]) {
      if (params.get(name)) body[name] = params.get(name);
    }
    if (params.get("mode")) body.mode = params.get("mode");
    if (params.get("expired") === "1") body.include_expired = true;
    return body;
  }

  function searchForm(params) {
    const field = (name, label, hint) =>
      el("label", {}, label, el("input", { name, value: params.get(name) || "", placeholder: hint || "" }));
    const mode = el(
      "select",
      { name: "mode" },
      ["hybrid", "semantic", "keyword"].map((m) =>
        el("option", { value: m, selected: (params.get("mode") || "hybrid") === m }, m === "hybrid" ? "hybrid (default)" : m),
      ),
    );
    return el(
      "form",
      {
        class: "grid",
        id: "search-form",
        role: "search",
        onsubmit: (event) => {
          event.preventDefault();
          const data = new FormData(event.target);
          const next = { q: data.get("q") };
          for (const name of FILTERS) next[name] = data.get(name) === "hybrid" ? "" : data.get(name);
          next.expired = data.get("expired") ? "1" : "";
          location.hash = `#/search${query(next)}`;
        },
      },
      el(
        "label",
        { class: "wide" },
        "Look for",
        el("input", { name: "q", id: "search-q", type: "search", value: params.get("q") || "", required: true }),
      ),
      field("tags", "Tags (all of them)", "comma-separated"),
      field("type", "Type", "e.g. preference"),
      field("category", "Category", "e.g. projects/alpha"),
      field("agent", "Agent"),
      field("personality", "Personality"),
      field("project", "Project"),
      field("store", "Store", "default"),
      el("label", {}, "Mode", mode),
      el(
        "label",
        { class: "check" },
        el("input", { type: "checkbox", name: "expired", value: "1", checked: params.get("expired") === "1" }),
        "Include expired",
      ),
      el("div", { class: "wide row" }, el("button", { class: "primary", type: "submit" }, "Search")),
    );
  }

  function scoreLine(hit) {
    return el(
      "li",
      { class: "score", title: "score: the rank; similarity: closeness in meaning; confidence: freshness" },
      `score ${hit.score.toFixed(2)} · similarity ${percent(hit.similarity)}`,
    );
  }

  async function search(params) {
    const q = params.get("q") || "";
    const form = searchForm(params);
    if (!q) {
      show(el("h1", {}, "Search"), form);
      form.querySelector("#search-q").focus();
      return;
    }
    const found = await api("POST", `/search${query({ store: params.get("store") })}`, searchBody(params));
    const offset = found.offset;
    const queryWords = words(q);
    const pageHref = (to) => {
      const next = new URLSearchParams(params);
      next.set("offset", String(to));
      return `#/search?${next.toString()}`;
    };
    show(
      el("h1", {}, "Search"),
      form,
      el(
        "div",
        { class: "pager" },
        el("span", {}, found.count ? `Results ${offset + 1}–${offset + found.count} for “${q}”` : `Nothing found for “${q}”.`),
        offset > 0 ? link(pageHref(Math.max(0, offset - PAGE)), "← Better") : null,
        found.has_more ? link(pageHref(offset + PAGE), "More →") : null,
      ),
      el("ul", { class: "memories", id: "results" }, found.results.map((hit) => memoryCard(hit, queryWords, scoreLine(hit)))),
    );
  }

  // --- one memory: detail and corrections ---------------------------------------------------------------------
  function fieldRows(memory) {
    const rows = [
      ["Path", memory.path || "—"],
      ["Id", memory.id],
      ["Store", memory.store],
      ["Type", memory.type || "—"],
      ["Tags", (memory.tags || []).join(", ") || "—"],
      ["Scopes", scopes(memory)],
      ["Confidence", `${percent(memory.confidence)} (decay policy: ${memory.decay_policy})`],
      ["Source", memory.source || "—"],
      ["Thread", memory.thread || "—"],
      ["Created", timeEl(memory.created_at)],
      ["Updated", timeEl(memory.updated_at)],
      ["Last reinforced", timeEl(memory.last_reinforced_at)],
      [isExpired(memory) ? "Expired" : "Expires", memory.expires_at ? timeEl(memory.expires_at) : "never"],
    ];
    return el("dl", { class: "fields" }, rows.map(([name, value]) => [el("dt", {}, name), el("dd", {}, value)]));
  }

  function citations(memory) {
    const list = memory.citations || [];
    return el(
      "section",
      { class: "panel", id: "citations" },
      el("h2", {}, "Citations"),
      list.length
        ? el(
            "ul",
            {},
            list.map((c) => el("li", {}, /^https?:\/\//i.test(c) ? el("a", { href: c, rel: "noreferrer noopener" }, c) : c)),
          )
        : el("p", { class: "muted" }, "None."),
    );
  }

  function editForm(memory, where, reload) {
    const input = (name, label, value) => el("label", {}, label, el("input", { name, value: value || "" }));
    const decay = el(
      "select",
      { name: "decay_policy" },
      ["stable", "contextual", "reinforceable"].map((p) => el("option", { value: p, selected: memory.decay_policy === p }, p)),
    );
    return el(
      "form",
      {
        class: "grid",
        id: "edit-form",
        onsubmit: async (event) => {
          event.preventDefault();
          const data = new FormData(event.target);
          const list = (text, sep) => text.split(sep).map((t) => t.trim()).filter(Boolean);
          const wanted = {
            content: data.get("content"),
            type: data.get("type").trim(),
            tags: list(data.get("tags"), ","),
            source: data.get("source").trim(),
            citations: list(data.get("citations"), "\n"),
            agent: data.get("agent").trim(),
            personality: data.get("personality").trim(),
            project: data.get("project").trim(),
            decay_policy: data.get("decay_policy"),
          };
          const changes = {};
          for (const [name, value] of Object.entries(wanted)) {
            const before = memory[name] === undefined ? "" : memory[name];
            if (JSON.stringify(value) !== JSON.stringify(before)) changes[name] = value;
          }
          const expires = data.get("expires_at").trim();
          if (data.get("clear_expiry")) changes.clear_expiry = true;
          else if (expires && expires !== (memory.expires_at || "")) changes.expires_at = expires;
          if (!Object.keys(changes).length) {
            say("Nothing changed: edit a field first.", "error");
            return;
          }
          try {
            await api("PATCH", `${refPath(memory.id)}${where}`, changes);
            say(`Saved: ${Object.keys(changes).join(", ")} changed.`);
            reload();
          } catch (error) {
            failed(error, reload);
          }
        },
      },
      el("label", { class: "wide" }, "Content", el("textarea", { name: "content", id: "edit-content" }, memory.content)),
      input("type", "Type", memory.type),
      input("tags", "Tags (comma-separated)", (memory.tags || []).join(", ")),
      input("source", "Source", memory.source),
      input("agent", "Agent", memory.agent),
      input("personality", "Personality", memory.personality),
      input("project", "Project", memory.project),
      el("label", {}, "Decay policy", decay),
      input("expires_at", "Expires (ISO 8601, e.g. 2026-12-31T23:59:00Z)", memory.expires_at),
      el("label", { class: "check" }, el("input", { type: "checkbox", name: "clear_expiry", value: "1" }), "Never expires"),
      el(
        "label",
        { class: "wide" },
        "Citations (one per line)",
        el("textarea", { name: "citations", rows: 3 }, (memory.citations || []).join("\n")),
      ),
      el("div", { class: "wide row" }, el("button", { class: "primary", type: "submit" }, "Save changes")),
    );
  }

  function moveForm(memory, where, store) {
    const destination = el("input", { id: "move-to", name: "destination", value: memory.path || "", required: true });
    return el(
      "form",
      {
        class: "row",
        id: "move-form",
        onsubmit: async (event) => {
          event.preventDefault();
          try {
            const moved = await api("POST", `/move${where}`, { ref: memory.id, destination: destination.value.trim() });
            say(`Moved to ${moved.path}.`);
            navigate(memoryHref(moved));
          } catch (error) {
            failed(error, route);
          }
        },
      },
      el("label", { for: "move-to" }, "New path"),
      destination,
      el("button", { type: "submit" }, "Move"),
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

  // the REST API has no un-delete: restore stores the memory again at its path with its fields and creation time
  async function restore(memory) {
    const body = { content: memory.content };
    for (const name of ["type", "source", "agent", "personality", "project", "thread", "decay_policy"]) {
      if (memory[name]) body[name] = memory[name];
    }
    for (const name of ["tags", "citations"]) if ((memory[name] || []).length) body[name] = memory[name];
    if (memory.global) body.global = true;
    if (memory.path) body.path = memory.path;
    if (memory.expires_at) body.expires_at = memory.expires_at;
    body.created_at = memory.created_at;
    const where = query({ store: memory.store === "default" ? "" : memory.store });
    try {
      if (memory.namespace.length) body.namespace = memory.namespace;  // within the token's own, as it was read
      const made = await api("POST", `/memories${where}`, body);
      forgetDeleted(memory.id);
      say(`Restored ${made.path || made.id}.`);
      navigate(memoryHref(made));
    } catch (error) {
      failed(error, route);
    }
  }

  function dangerZone(memory, where) {
    const confirmBox = el("div", { class: "confirm", id: "confirm-remove", hidden: true });
    const remove = async () => {
      try {
        await api("DELETE", `${refPath(memory.id)}${query({ store: where.store, hard: "true" })}`);
        say(`Removed ${memory.path || memory.id} for good.`);
        location.hash = browseHref(where.store, "");
      } catch (error) {
        failed(error, route);
      }
    };
    confirmBox.append(
      el("p", {}, `Remove ${memory.path || memory.id} for good? It cannot be restored.`),
      el(
        "div",
        { class: "row" },
        el("button", { type: "button", class: "danger primary", id: "confirm-remove-yes", onclick: remove }, "Yes, remove it for good"),
        el("button", { type: "button", onclick: () => (confirmBox.hidden = true) }, "Cancel"),
      ),
    );
    const softDelete = async () => {
      try {
        await api("DELETE", `${refPath(memory.id)}${query({ store: where.store, include_expired: "true" })}`);
        keepDeleted(memory);
        say(`Deleted ${memory.path || memory.id}: hidden from every search and listing. Restore it from the list below.`);
        location.hash = browseHref(where.store, "");
      } catch (error) {
        failed(error, route);
      }
    };
    const buttons = [
      memory.decay_policy === "reinforceable"
        ? el(
            "button",
            {
              type: "button",
              id: "reinforce",
              onclick: async () => {
                try {
                  await api("POST", `/reinforce${query({ store: where.store })}`, { ref: memory.id });
                  say("Reinforced: its confidence is back to full.");
                  route();
                } catch (error) {
                  failed(error, route);
                }
              },
            },
            "Reinforce",
          )
        : null,
      el("button", { type: "button", id: "delete", onclick: softDelete }, "Delete (can be restored)"),
      el(
        "button",
        {
          type: "button",
          class: "danger",
          id: "remove",
          onclick: () => {
            confirmBox.hidden = false;
            confirmBox.querySelector("button").focus();
          },
        },
        "Remove for good…",
      ),
    ];
    return el("section", { class: "panel" }, el("h2", {}, "Reinforce or delete"), el("div", { class: "row" }, buttons), confirmBox);
  }

  async function similar(memory, store) {
    const box = el("section", { class: "panel", id: "similar" }, el("h2", {}, "Similar memories (likely duplicates)"));
    try {
      const found = await api("POST", `/search${query({ store })}`, { query: memory.content.slice(0, 2000), limit: 6 });
      const others = found.results.filter((hit) => hit.id !== memory.id).slice(0, 5);
      box.append(
        others.length
          ? el("ul", { class: "memories" }, others.map((hit) => memoryCard(hit, [], scoreLine(hit))))
          : el("p", { class: "muted" }, "None found."),
      );
    } catch (error) {
      box.append(el("p", { class: "muted" }, `Could not search: ${error.message}`));
    }
    return box;
  }

  async function detail(id, params) {
    const store = params.get("store") || "";
    const where = query({ store, include_expired: "true" });
    const memory = await api("GET", `${refPath(id)}${where}`);
    const similarBox = el("div", {}, el("p", { class: "muted" }, "Looking for similar memories…"));
    show(
      el("nav", { class: "crumbs" }, link(browseHref(store, ""), "← All memories")),
      el("h1", { class: "path" }, memory.path || memory.id),
      el("div", { class: "content", id: "content" }, memory.content),
      fieldRows(memory),
      citations(memory),
      el("section", { class: "panel" }, el("h2", {}, "Edit"), editForm(memory, query({ store, include_expired: "true" }), route)),
      el("section", { class: "panel" }, el("h2", {}, "Move"), moveForm(memory, query({ store }), store)),
      dangerZone(memory, { store }),
      similarBox,
    );
    similarBox.replaceWith(await similar(memory, store));
  }

  // --- routing ------------------------------------------------------------------------------------------------
  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, search] = raw.split("?", 2);
    return { path: path || "", params: new URLSearchParams(search || "") };
  }

  // to another view, or the same one again (a hash that does not change fires no hashchange)
  function navigate(hash) {
    if (location.hash === hash) route();
    else location.hash = hash;
  }

  let routing = 0;
  async function route() {
    const turn = ++routing;
    delete document.body.dataset.ready;
    const { path, params } = parseHash();
    const view = path.startsWith("memory/") ? "detail" : path === "search" ? "search" : "browse";
    for (const a of document.querySelectorAll("nav a[data-view]")) {
      a.toggleAttribute("aria-current", a.dataset.view === view);
      if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    }
    document.body.dataset.view = view;
    try {
      if (view === "detail") await detail(decodeURIComponent(path.slice("memory/".length)), params);
      else if (view === "search") await search(params);
      else await browse(params);
      if (turn === routing) {
        document.body.dataset.ready = view;
        performance.mark(`ready-${view}`);
      }
    } catch (error) {
      if (turn === routing) {
        failed(error, route);
        document.body.dataset.ready = "failed";
      }
    }
  }

  window.addEventListener("hashchange", () => {
    route().then(() => main.focus({ preventScroll: true }));
  });
  document.getElementById("quick-search").addEventListener("submit", (event) => {
    event.preventDefault();
    const q = document.getElementById("quick-q").value.trim();
    if (q) location.hash = `#/search${query({ q })}`;
  });
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
    if (event.key === "/" && !typing) {
      event.preventDefault();
      document.getElementById("quick-q").focus();
    }
  });
  route();
})();
