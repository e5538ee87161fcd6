// agent-memory's web page: browse and search, and the routing between the views (memory.js has the detail).
"use strict";

(() => {
  const am = window.agentMemory;
  const { PAGE, api, el, show, link, words, preview, memoryCard, failed, browseHref, scoreLine, query, recentlyDeleted, main } = am;
  const restore = (memory) => am.restore(memory);
  const detail = (id, params) => am.detail(id, params);

  // --- browse -------------------------------------------------------------------------------------------------
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
    const deleted = params.get("deleted") === "1";  // soft-deleted memories listed too, each with its restore
    const listing = await api(
      "GET",
      `/memories${query({ store, category, limit: PAGE, offset: offset || "", include_expired: expired ? "true" : "", include_deleted: deleted ? "true" : "" })}`,
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
      offset > 0 ? link(browseHref(store, category, Math.max(0, offset - PAGE), expired, deleted), "← Newer") : null,
      last < listing.total ? link(browseHref(store, category, offset + PAGE, expired, deleted), "Older →") : null,
      link(browseHref(store, category, 0, !expired, deleted), expired ? "Hide expired" : "Show expired", { id: "toggle-expired" }),
      link(browseHref(store, category, 0, expired, !deleted), deleted ? "Hide deleted" : "Show deleted", { id: "toggle-deleted" }),
    );
    const card = (memory) => {
      if (!memory.deleted) return memoryCard(memory);
      const shown = memoryCard(memory, [], el("li", { class: "expired" }, "deleted"));
      shown.append(el("button", { type: "button", class: "restore", onclick: () => restore(memory) }, `Restore ${memory.path || "memory"}`));
      return shown;
    };
    const storeList = el("ul", { class: "stores", "aria-label": "Stores" }, el("li", { class: "muted" }, store || "default"));
    show(
      el("h1", {}, category ? `Category ${category}` : "Memories"),
      el("h2", { class: "sr" }, "Stores"),
      storeList,
      crumbs(store, category),
      listing.description ? el("p", { class: "muted" }, listing.description) : null,
      cats.length ? el("ul", { class: "cats", "aria-label": "Categories" }, cats) : null,
      pager,
      el("ul", { class: "memories", id: "memory-list" }, listing.memories.map(card)),
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
      found.count
        ? el(
            "p",
            { class: "hint", id: "order" },
            found.broad
              ? "Your question names no subject: these are the memories that matter most here, by confidence, then the latest."
              : "Best first: the ranking weighs the question's words as well as meaning, so a hit can show less relevance than one below it.",
          )
        : null,
      el("ul", { class: "memories", id: "results" }, found.results.map((hit) => memoryCard(hit, queryWords, scoreLine(hit)))),
    );
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
  am.route = route;
  am.navigate = navigate;
  route();
})();
