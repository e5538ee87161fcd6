// agent-memory's web page: one memory's detail (fields, citations, similar memories) and its corrections.
"use strict";

(() => {
  const am = window.agentMemory;
  const { api, el, say, show, link, percent, timeEl, isExpired, scopes, memoryHref, memoryCard, failed, browseHref, scoreLine, query, refPath, keepDeleted, forgetDeleted } = am;
  const route = () => am.route();
  const navigate = (hash) => am.navigate(hash);

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

  // undo the soft delete (POST /restore): the same memory comes back, with its id and every field
  async function restore(memory) {
    const where = query({ store: memory.store === "default" ? "" : memory.store });
    try {
      const back = await api("POST", `/restore${where}`, { ref: memory.id });
      forgetDeleted(memory.id);
      say(`Restored ${back.path || back.id}.`);
      navigate(memoryHref(back));
    } catch (error) {
      failed(error, route);
    }
  }

  function dangerZone(memory, where) {
    const cancel = () => {
      confirmBox.hidden = true;
      document.getElementById("remove").focus();
    };
    const confirmBox = el("div", {
      class: "confirm",
      id: "confirm-remove",
      hidden: true,
      onkeydown: (event) => event.key === "Escape" && cancel(),
    });
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
        el("button", { type: "button", onclick: cancel }, "Cancel"),
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

  // the create rule's near-duplicates (issue 41): the same namespace and scope, at the model's calibrated threshold
  async function similar(memory, store) {
    const box = el("section", { class: "panel", id: "similar" }, el("h2", {}, "Similar memories (likely duplicates)"));
    try {
      const found = await api("POST", "/commands/find-duplicates", { ref: memory.id, store: store || null });
      const others = found.result;
      box.append(
        others.length
          ? el(
              "ul",
              { class: "memories" },
              others.map((other) =>
                el(
                  "li",
                  {},
                  link(memoryHref({ id: other.id, store: store || "default" }), other.path || other.id),
                  el("span", { class: "muted" }, ` — says the same thing (similarity ${other.similarity.toFixed(2)})`),
                ),
              ),
            )
          : el("p", { class: "muted" }, "None: no memory of its namespace says the same thing."),
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


  am.detail = detail;
  am.restore = restore;
})();
