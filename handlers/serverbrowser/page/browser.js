"use strict";
// The server browser: fetches servers.json and history.json beside this
// page (with If-None-Match, so an unchanged list costs a 304), filters and
// sorts in the page, and writes every server-provided string with
// textContent, never as markup. A row opens (its name is a disclosure
// button, or #server=<address> in the URL) to the server's players and
// bots, details, a few rules and its chart, all from what the list and the
// history already hold: opening a row queries nothing.
(function () {
	const SVG = "http://www.w3.org/2000/svg";
	const refresh = Math.max(1, Number(document.body.dataset.refresh) || 30) * 1000;
	const span = document.body.dataset.history || "24h";
	const params = new URLSearchParams(location.search);
	const $ = (id) => document.getElementById(id);
	const flags = ["not_empty", "not_full", "no_password"];
	const selects = ["game", "map", "region"];
	const state = { servers: [], history: {}, bucket: 0, end: 0, tags: {}, pages: {}, sort: "name", desc: false, open: new Set(), loaded: false };

	const sortParam = params.get("sort") || "";
	if (sortParam) {
		state.desc = sortParam.startsWith("-");
		state.sort = sortParam.replace(/^-/, "");
	}
	$("q").value = params.get("q") || "";
	for (const f of flags) {
		const v = params.get(f);
		$(f).checked = v !== null && v !== "0" && v !== "false";
	}
	const wanted = {};
	for (const f of selects) wanted[f] = params.get(f) || "";
	const hashServer = () => {
		const m = /^#server=(.+)$/.exec(location.hash);
		try {
			return m ? decodeURIComponent(m[1]) : "";
		} catch (e) { // no valid escape (a cut or hand-edited link): no row to open
			return "";
		}
	};
	if (hashServer()) state.open.add(hashServer());

	function el(tag, cls, text) {
		const e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = String(text);
		return e;
	}

	function svgEl(tag, attrs, parent) {
		const e = document.createElementNS(SVG, tag);
		for (const k in attrs) e.setAttribute(k, attrs[k]);
		if (parent) parent.appendChild(e);
		return e;
	}

	const num = (v) => typeof v === "number" && isFinite(v);
	const ping = (s) => num(s.ping) && s.ping >= 0 ? s.ping + " ms" : "—"; // -1: none measured yet
	const clock = (unix) => new Date(unix * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
	const ago = (sec) => sec >= 3600 ? +(sec / 3600).toFixed(1) + " h" : Math.round(sec / 60) + " min";

	// points draws samples (-1: none) as polylines broken at the gaps, x
	// from x0 by step, y from the bottom yb over height hh for peak.
	function points(svg, samples, x0, step, yb, hh, peak) {
		let pts = [];
		const flush = () => {
			if (pts.length === 1) pts.unshift([Math.max(x0, pts[0][0] - 4), pts[0][1]]); // a lone sample: a dash
			if (pts.length > 1) svgEl("polyline", { class: "line", points: pts.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") }, svg);
			pts = [];
		};
		samples.forEach((v, i) => {
			if (v < 0) return flush();
			pts.push([x0 + i * step, yb - (v / peak) * hh]);
		});
		flush();
	}

	function peakOf(samples) {
		const seen = (samples || []).filter((v) => v >= 0);
		return seen.length ? Math.max(...seen) : -1;
	}

	// sparkline is a row's small chart of the player counts.
	function sparkline(samples, maxPlayers) {
		const w = 120, h = 24;
		const svg = svgEl("svg", { class: "spark", width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img" });
		svgEl("line", { class: "axis", x1: 0, x2: w, y1: h - 1, y2: h - 1 }, svg);
		const p = peakOf(samples);
		const label = p < 0 ? "No player counts yet" : "Peak " + p + " players in the last " + span;
		svg.setAttribute("aria-label", label);
		svgEl("title", {}, svg).textContent = label;
		if (samples && samples.length >= 2) points(svg, samples, 0, w / (samples.length - 1), h - 1, h - 3, Math.max(1, maxPlayers || 0, p));
		return svg;
	}

	// chart is an opened row's chart: players per bucket with a labelled
	// axis, each bucket's count in its <title> (shown on hover), and the
	// figures in text beside it.
	function chart(samples, maxPlayers) {
		const box = el("div", "chart");
		box.appendChild(el("h2", "", "Players, last " + span));
		const n = samples ? samples.length : 0;
		if (n < 1 || peakOf(samples) < 0 || !state.bucket) {
			box.appendChild(el("p", "", "No player counts recorded yet."));
			return box;
		}
		const W = 320, H = 130, L = 28, B = 18, T = 6, R = 6;
		const peak = Math.max(1, maxPlayers || 0, peakOf(samples));
		const svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, width: "100%", role: "img" });
		const hh = H - B - T, yb = H - B, step = (W - L - R) / Math.max(1, n - 1);
		for (const v of [0, Math.round(peak / 2), peak]) {
			const y = yb - (v / peak) * hh;
			svgEl("line", { class: "axis", x1: L, x2: W - R, y1: y, y2: y }, svg);
			svgEl("text", { x: L - 4, y: y + 3, "text-anchor": "end" }, svg).textContent = v;
		}
		const start = state.end - n * state.bucket;
		for (const [f, anchor] of [[0, "start"], [0.5, "middle"], [1, "end"]]) {
			const t = f === 1 ? "now" : "−" + ago((1 - f) * n * state.bucket);
			svgEl("text", { x: L + f * (n - 1) * step, y: H - 4, "text-anchor": anchor }, svg).textContent = t;
		}
		points(svg, samples, L, step, yb, hh, peak);
		samples.forEach((v, i) => {
			const from = start + i * state.bucket;
			const slot = svgEl("rect", { class: "slot", x: L + (i - 0.5) * step, y: T, width: step, height: hh }, svg);
			svgEl("title", {}, slot).textContent = clock(from) + "–" + clock(from + state.bucket) + ": " + (v < 0 ? "no sample" : v + " players");
		});
		const p = peakOf(samples), last = samples[n - 1];
		const at = samples.lastIndexOf(p);
		const summary = el("p", "", "Peak " + p + " players at " + clock(start + at * state.bucket) +
			(last >= 0 ? "; " + last + " now" : "") + ". Point at the chart for each " + ago(state.bucket) + "'s peak.");
		summary.id = "sum-" + Math.random().toString(36).slice(2);
		svg.setAttribute("aria-describedby", summary.id);
		svg.setAttribute("aria-label", "Players over the last " + span);
		box.appendChild(svg);
		box.appendChild(summary);
		return box;
	}

	// who is the players' table, the bots marked.
	function who(s) {
		const box = el("div");
		const players = Array.isArray(s.players) ? s.players : [], bots = Array.isArray(s.bots) ? s.bots : [];
		box.appendChild(el("h2", "", "Players " + s.numplayers + "/" + s.maxplayers + (bots.length ? " (" + bots.length + " bots)" : "")));
		const all = players.map((p) => [p, false]).concat(bots.map((p) => [p, true]));
		if (!all.length) {
			box.appendChild(el("p", "", s.numplayers > 0 ? "The server does not list its players." : "Nobody is playing."));
			return box;
		}
		const raw = (p) => (p && typeof p.raw === "object" && p.raw) || {};
		const cols = [["Score", (r) => num(r.score) ? r.score : r.frags], ["Time", (r) => num(r.time) ? ago(Math.max(0, r.time)).replace(/^0 min$/, "<1 min") : undefined], ["Ping", (r) => num(r.ping) ? r.ping + " ms" : undefined]]
			.filter(([, f]) => all.some(([p]) => f(raw(p)) !== undefined));
		const t = el("table", "who"), head = el("tr");
		head.appendChild(el("th", "", "Name"));
		for (const [c] of cols) head.appendChild(el("th", "", c));
		for (const th of head.children) th.scope = "col";
		t.appendChild(el("thead")).appendChild(head);
		const body = t.appendChild(el("tbody"));
		for (const [p, bot] of all) {
			const tr = body.appendChild(el("tr", bot ? "bot" : "player"));
			const name = tr.appendChild(el("td", "", (p && p.name) || "(unnamed)"));
			if (bot) name.appendChild(el("span", "tag", "bot"));
			for (const [, f] of cols) {
				const v = f(raw(p));
				tr.appendChild(el("td", "", v === undefined ? "—" : v));
			}
		}
		box.appendChild(t);
		return box;
	}

	function dl(h, rows) {
		const box = el("div");
		box.appendChild(el("h2", "", h));
		const d = box.appendChild(el("dl"));
		for (const [k, v] of rows) {
			if (v === undefined || v === "") continue;
			d.appendChild(el("dt", "", k));
			d.appendChild(el("dd", "", v));
		}
		return box;
	}

	// rules are a few of the status's raw variables: short scalar values,
	// those the row shows left out, those players look for (game type,
	// limits, mode, teams) first.
	function rules(s) {
		const shown = /^(sv_)?hostname$|^mapname$|^version$|^name$|^map$/i, first = /type|limit|mode|team|friendly|pure|mod$|difficulty|skill/i;
		const raw = s.raw && typeof s.raw === "object" ? s.raw : {};
		const all = Object.keys(raw).filter((k) => !shown.test(k) && ["string", "number", "boolean"].includes(typeof raw[k]) && String(raw[k]).length <= 48)
			.sort((a, b) => first.test(b) - first.test(a) || (a < b ? -1 : 1));
		const some = all.slice(0, 12).map((k) => [k, String(raw[k])]);
		return some.length ? dl("Rules" + (all.length > some.length ? " (" + some.length + " of " + all.length + ")" : ""), some) : el("div");
	}

	function detail(s) {
		const g = el("div", "detail-grid");
		g.appendChild(who(s));
		g.appendChild(dl("Server", [["Address", s.connect || s.address], ["Game", s.game], ["Map", s.map], ["Version", s.version],
			["Region", s.region], ["Password", s.password ? "yes" : "no"], ["Query ping", ping(s)]]));
		g.appendChild(rules(s));
		g.appendChild(chart(state.history[s.address], s.maxplayers));
		return g;
	}

	// joinURL is the entry's join link if it is one a browser hands to a
	// game (steam://connect/…); never a script or data URL.
	function joinURL(j) {
		// Only the join URLs the list makes (the game catalogue's Steam
		// connect links); anything else gets the copy control.
		if (typeof j !== "string" || j.length > 1024) return "";
		return /^steam:\/\/connect\/[A-Za-z0-9.:\[\]-]+$/.test(j) ? j : "";
	}

	// copy puts text on the clipboard and says so in label (the text of its
	// button).
	async function copy(text, label, code) {
		let ok = false;
		try {
			await navigator.clipboard.writeText(text);
			ok = true;
		} catch (e) { // no clipboard API (a page over plain http on a LAN): the old way
			const ta = el("textarea", "sr");
			ta.value = text;
			ta.setAttribute("aria-hidden", "true");
			document.body.appendChild(ta);
			ta.select();
			try { ok = document.execCommand("copy"); } catch (e2) { ok = false; }
			ta.remove();
		}
		if (!ok) { // leave the address selected to copy by hand
			const r = document.createRange();
			r.selectNodeContents(code);
			getSelection().removeAllRanges();
			getSelection().addRange(r);
		}
		label.textContent = ok ? "Copied" : "Press Ctrl+C";
		$("note").textContent = ok ? "Copied " + text : "";
		setTimeout(() => { label.textContent = "Copy"; }, 2000);
	}

	function options(select, values, want) {
		const keep = select.value || want;
		while (select.options.length > 1) select.remove(1);
		for (const v of keep && !values.includes(keep) ? values.concat(keep) : values) {
			const o = el("option", "", v);
			o.value = v;
			select.appendChild(o);
		}
		select.value = keep;
	}

	function key(s) {
		switch (state.sort) {
			case "players": return s.numplayers;
			case "ping": return num(s.ping) && s.ping >= 0 ? s.ping : Infinity;
			case "game": return (s.game || "").toLowerCase();
			case "map": return (s.map || "").toLowerCase();
			case "address": return s.address || "";
		}
		return (s.name || "").toLowerCase();
	}

	function visible(s) {
		const q = $("q").value.trim().toLowerCase();
		for (const f of selects) {
			const v = $(f).value;
			if (v && (s[f] || "").toLowerCase() !== v.toLowerCase()) return false;
		}
		if ($("not_empty").checked && s.numplayers === 0) return false;
		if ($("not_full").checked && s.maxplayers > 0 && s.numplayers >= s.maxplayers) return false;
		if ($("no_password").checked && s.password) return false;
		if (q && ![s.name, s.map, s.game, s.region, s.address, s.connect].some((v) => (v || "").toLowerCase().includes(q))) return false;
		return true;
	}

	function toggle(s, btn, row) {
		const open = btn.getAttribute("aria-expanded") !== "true";
		btn.setAttribute("aria-expanded", open);
		row.hidden = !open;
		if (open) {
			state.open.add(s.address);
			row.firstChild.replaceChildren(detail(s));
		} else state.open.delete(s.address);
		const hash = open ? "#server=" + encodeURIComponent(s.address) : hashServer() === s.address ? "" : location.hash;
		history.replaceState(null, "", location.pathname + location.search + hash);
	}

	function row(s, i) {
		const tr = el("tr", "server");
		tr.dataset.address = s.address || "";
		if (s.numplayers === 0) tr.classList.add("empty");
		if (s.maxplayers > 0 && s.numplayers >= s.maxplayers) tr.classList.add("full");
		const name = s.name || s.address || "";
		const open = state.open.has(s.address);
		const detailRow = el("tr", "detail");
		detailRow.id = "server-" + i;
		detailRow.hidden = !open;
		const cell = detailRow.appendChild(el("td"));
		cell.colSpan = 7;
		if (open) cell.appendChild(detail(s));

		const td = tr.appendChild(el("td", "name"));
		const btn = td.appendChild(el("button", "open", name));
		btn.type = "button";
		btn.dataset.key = s.address + " open";
		btn.setAttribute("aria-expanded", open);
		btn.setAttribute("aria-controls", detailRow.id);
		btn.addEventListener("click", () => toggle(s, btn, detailRow));
		if (s.password) td.appendChild(el("span", "tag", "password"));
		tr.appendChild(el("td", "game", s.game || ""));
		tr.appendChild(el("td", "map", s.map || "")).dataset.label = "Map";
		const players = tr.appendChild(el("td", "players"));
		players.dataset.label = "Players";
		players.appendChild(el("span", "", s.numplayers + "/" + s.maxplayers));
		const bots = Array.isArray(s.bots) ? s.bots.length : 0;
		if (bots) players.appendChild(el("span", "sub", bots === s.numplayers ? "all bots" : bots + (bots === 1 ? " bot" : " bots")));
		tr.appendChild(el("td", "history")).appendChild(sparkline(state.history[s.address], s.maxplayers));
		tr.appendChild(el("td", "ping", ping(s))).dataset.label = "Ping";

		const join = tr.appendChild(el("td", "join"));
		const connect = s.connect || s.address || "";
		const code = el("code", "", connect);
		const url = joinURL(s.join);
		if (url) {
			const a = join.appendChild(el("a", "join", "Join"));
			a.href = url;
			a.appendChild(el("span", "sr", " " + name));
		} else {
			const c = join.appendChild(el("button", "copy", "Copy"));
			c.type = "button";
			c.dataset.key = s.address + " copy";
			c.appendChild(el("span", "sr", " the address of " + name));
			c.addEventListener("click", () => copy(connect, c.firstChild, code));
		}
		join.appendChild(code);
		const badge = join.appendChild(el("a", "badge", "Badge"));
		badge.href = "badge/" + encodeURIComponent(s.address || "") + ".svg";
		badge.appendChild(el("span", "sr", " of " + name));
		return [tr, detailRow];
	}

	function render() {
		const servers = state.servers.filter(visible);
		servers.sort((a, b) => {
			const ka = key(a), kb = key(b);
			let c = ka < kb ? -1 : ka > kb ? 1 : 0;
			if (state.desc && ka !== Infinity && kb !== Infinity) c = -c; // an unknown ping stays last
			return c || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
		});
		const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : "";
		document.querySelector("#servers tbody").replaceChildren(...servers.flatMap(row));
		if (focused) {
			for (const b of document.querySelectorAll("#servers [data-key]")) if (b.dataset.key === focused) b.focus();
		}
		for (const th of document.querySelectorAll("th[data-sort]")) {
			if (th.dataset.sort === state.sort) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
			else th.removeAttribute("aria-sort");
		}
		$("servers").hidden = servers.length === 0;
		$("empty").hidden = servers.length > 0;
		$("empty-clear").hidden = state.servers.length === 0;
		const q = $("q").value.trim(), others = selects.some((f) => $(f).value) || flags.some((f) => $(f).checked);
		$("empty-text").textContent = state.servers.length === 0
			? "No servers are listed yet: a server appears here once it registers with the master or is configured to be queried."
			: "No servers match " + (q ? "“" + q + "”" + (others ? " with these filters" : "") : "these filters") + ".";
		const players = servers.reduce((n, s) => n + s.numplayers, 0);
		$("status").textContent = servers.length + " of " + state.servers.length + " servers, " + players + " players" +
			" · updated " + new Date().toLocaleTimeString();
		if (!state.loaded) {
			state.loaded = true;
			const open = document.querySelector("#servers tr.detail:not([hidden])");
			if (open) open.previousSibling.scrollIntoView();
		}
	}

	function syncURL() {
		const p = new URLSearchParams();
		if ($("q").value) p.set("q", $("q").value);
		for (const f of selects) if ($(f).value) p.set(f, $(f).value);
		for (const f of flags) if ($(f).checked) p.set(f, "1");
		if (state.sort !== "name" || state.desc) p.set("sort", (state.desc ? "-" : "") + state.sort);
		const qs = p.toString();
		history.replaceState(null, "", (qs ? "?" + qs : location.pathname) + location.hash);
	}

	function clearFilters() {
		$("q").value = "";
		for (const f of selects) { $(f).value = ""; wanted[f] = ""; }
		for (const f of flags) $(f).checked = false;
		syncURL();
		render();
		$("q").focus();
	}

	async function fetchJSON(url) {
		const headers = {};
		if (state.tags[url]) headers["If-None-Match"] = state.tags[url];
		const r = await fetch(url, { headers, cache: "no-store", credentials: "same-origin" });
		if (r.status === 304) return null;
		if (!r.ok) throw new Error(url + ": HTTP " + r.status);
		const body = await r.json();
		state.tags[url] = r.headers.get("ETag") || "";
		return body;
	}

	// fetchList returns every server, following the list's pages while an
	// answer says it was cut (each is at most the list's max_page_size), or
	// null when no page changed.
	async function fetchList() {
		let servers = [], changed = false;
		const used = new Set();
		for (let offset = 0, pages = 0; pages < 100; pages++) {
			const url = "servers.json?limit=1000&offset=" + offset;
			used.add(url);
			const body = await fetchJSON(url);
			if (body) {
				state.pages[url] = body;
				changed = true;
			}
			const page = state.pages[url];
			if (!page) break;
			const got = page.servers || [];
			servers = servers.concat(got);
			offset += got.length;
			if (!page.truncated || got.length === 0 || offset >= page.total) break;
		}
		for (const url of Object.keys(state.pages)) {
			if (!used.has(url)) {
				delete state.pages[url];
				delete state.tags[url];
				changed = true;
			}
		}
		return changed ? { servers } : null;
	}

	async function load() {
		try {
			const [list, hist] = await Promise.all([fetchList(), fetchJSON("history.json")]);
			if (list) {
				state.servers = list.servers;
				const uniq = (f) => [...new Set(state.servers.map(f).filter(Boolean))].sort();
				for (const f of selects) options($(f), uniq((s) => s[f]), wanted[f]);
			}
			if (hist) Object.assign(state, { history: hist.servers || {}, bucket: hist.bucket || 0, end: hist.end || 0 });
			if (list || hist) render();
			else $("status").textContent = $("status").textContent.replace(/updated .*/, "updated " + new Date().toLocaleTimeString());
		} catch (e) {
			$("status").textContent = "Could not load the list: " + e.message;
		}
		setTimeout(load, refresh);
	}

	$("filters").addEventListener("input", () => { syncURL(); render(); });
	$("filters").addEventListener("submit", (e) => e.preventDefault());
	$("clear").addEventListener("click", clearFilters);
	$("empty-clear").addEventListener("click", clearFilters);
	for (const th of document.querySelectorAll("th[data-sort]")) {
		th.querySelector("button").addEventListener("click", () => {
			if (state.sort === th.dataset.sort) state.desc = !state.desc;
			else { state.sort = th.dataset.sort; state.desc = th.dataset.sort === "players"; }
			syncURL();
			render();
		});
	}
	load();
})();
