"use strict";
// The server browser: fetches servers.json and history.json beside this
// page (with If-None-Match, so an unchanged list costs a 304), filters and
// sorts in the page, and writes every server-provided string with
// textContent, never as markup.
(function () {
	const SVG = "http://www.w3.org/2000/svg";
	const refresh = Math.max(1, Number(document.body.dataset.refresh) || 30) * 1000;
	const params = new URLSearchParams(location.search);
	const $ = (id) => document.getElementById(id);
	const flags = ["not_empty", "not_full", "no_password"];
	const state = { servers: [], history: {}, tags: {}, pages: {}, sort: "name", desc: false };

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
	const wanted = { game: params.get("game") || "", map: params.get("map") || "", region: params.get("region") || "" };

	function el(tag, cls, text) {
		const e = document.createElement(tag);
		if (cls) e.className = cls;
		if (text !== undefined) e.textContent = String(text);
		return e;
	}

	function sparkline(samples, maxPlayers) {
		const w = 120, h = 24;
		const svg = document.createElementNS(SVG, "svg");
		svg.setAttribute("class", "spark");
		svg.setAttribute("width", w);
		svg.setAttribute("height", h);
		svg.setAttribute("viewBox", "0 0 " + w + " " + h);
		const base = document.createElementNS(SVG, "line");
		base.setAttribute("x1", 0); base.setAttribute("x2", w);
		base.setAttribute("y1", h - 1); base.setAttribute("y2", h - 1);
		svg.appendChild(base);
		if (!samples || samples.length < 2) return svg;
		const peak = Math.max(1, maxPlayers || 0, ...samples);
		const step = w / (samples.length - 1);
		let points = [];
		const flush = () => {
			if (points.length === 1) { // a lone sample: a short dash ending at it
				const [x, y] = points[0].split(",");
				points.unshift(Math.max(0, Number(x) - 3).toFixed(1) + "," + y);
			}
			if (points.length > 1) {
				const p = document.createElementNS(SVG, "polyline");
				p.setAttribute("points", points.join(" "));
				svg.appendChild(p);
			}
			points = [];
		};
		samples.forEach((v, i) => {
			if (v < 0) { flush(); return; }
			points.push((i * step).toFixed(1) + "," + (h - 1 - (v / peak) * (h - 3)).toFixed(1));
		});
		flush();
		const seen = samples.filter((v) => v >= 0);
		const title = document.createElementNS(SVG, "title");
		title.textContent = seen.length ? "Peak " + Math.max(...seen) + " players" : "No samples yet";
		svg.appendChild(title);
		return svg;
	}

	function options(select, values, want) {
		const keep = select.value || want;
		while (select.options.length > 1) select.remove(1);
		for (const v of values) {
			const o = el("option", "", v);
			o.value = v;
			select.appendChild(o);
		}
		if (keep && !values.includes(keep)) {
			const o = el("option", "", keep);
			o.value = keep;
			select.appendChild(o);
		}
		select.value = keep;
	}

	function key(s) {
		switch (state.sort) {
			case "players": return s.numplayers;
			case "ping": return s.ping;
			case "game": return (s.game || "").toLowerCase();
			case "map": return (s.map || "").toLowerCase();
			case "address": return s.address || "";
		}
		return (s.name || "").toLowerCase();
	}

	function visible(s) {
		const q = $("q").value.trim().toLowerCase();
		const game = $("game").value, map = $("map").value, region = $("region").value;
		if (game && (s.game || "").toLowerCase() !== game.toLowerCase()) return false;
		if (map && (s.map || "").toLowerCase() !== map.toLowerCase()) return false;
		if (region && (s.region || "").toLowerCase() !== region.toLowerCase()) return false;
		if ($("not_empty").checked && s.numplayers === 0) return false;
		if ($("not_full").checked && s.maxplayers > 0 && s.numplayers >= s.maxplayers) return false;
		if ($("no_password").checked && s.password) return false;
		if (q && ![s.name, s.map, s.game, s.region, s.address, s.connect].some((v) => (v || "").toLowerCase().includes(q))) return false;
		return true;
	}

	function render() {
		const servers = state.servers.filter(visible);
		servers.sort((a, b) => {
			const ka = key(a), kb = key(b);
			let c = ka < kb ? -1 : ka > kb ? 1 : 0;
			if (state.desc) c = -c;
			return c || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
		});
		const rows = servers.map((s) => {
			const tr = el("tr", "server");
			tr.dataset.address = s.address || "";
			if (s.numplayers === 0) tr.classList.add("empty");
			if (s.maxplayers > 0 && s.numplayers >= s.maxplayers) tr.classList.add("full");
			const name = el("td", "name", s.name || s.address || "");
			if (s.password) name.appendChild(el("span", "lock", "password"));
			tr.appendChild(name);
			tr.appendChild(el("td", "game", s.game || ""));
			tr.appendChild(el("td", "map", s.map || ""));
			tr.appendChild(el("td", "players", s.numplayers + "/" + s.maxplayers));
			const chart = el("td", "history");
			chart.appendChild(sparkline(state.history[s.address], s.maxplayers));
			tr.appendChild(chart);
			tr.appendChild(el("td", "ping", s.ping ? s.ping + " ms" : ""));
			const addr = el("td", "address");
			const a = el("a", "", s.connect || s.address || "");
			a.href = "badge/" + encodeURIComponent(s.address || "") + ".svg";
			a.title = "Status badge";
			addr.appendChild(a);
			tr.appendChild(addr);
			return tr;
		});
		document.querySelector("#servers tbody").replaceChildren(...rows);
		for (const th of document.querySelectorAll("th[data-sort]")) {
			if (th.dataset.sort === state.sort) th.setAttribute("aria-sort", state.desc ? "descending" : "ascending");
			else th.removeAttribute("aria-sort");
		}
		const players = servers.reduce((n, s) => n + s.numplayers, 0);
		$("status").textContent = servers.length + " of " + state.servers.length + " servers, " + players + " players" +
			" · updated " + new Date().toLocaleTimeString();
	}

	function syncURL() {
		const p = new URLSearchParams();
		if ($("q").value) p.set("q", $("q").value);
		if ($("game").value) p.set("game", $("game").value);
		if ($("map").value) p.set("map", $("map").value);
		if ($("region").value) p.set("region", $("region").value);
		for (const f of flags) if ($(f).checked) p.set(f, "1");
		if (state.sort !== "name" || state.desc) p.set("sort", (state.desc ? "-" : "") + state.sort);
		const qs = p.toString();
		history.replaceState(null, "", qs ? "?" + qs : location.pathname);
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
				options($("game"), uniq((s) => s.game), wanted.game);
				options($("map"), uniq((s) => s.map), wanted.map);
				options($("region"), uniq((s) => s.region), wanted.region);
			}
			if (hist) state.history = hist.servers || {};
			if (list || hist) render();
			else $("status").textContent = $("status").textContent.replace(/updated .*/, "updated " + new Date().toLocaleTimeString());
		} catch (e) {
			$("status").textContent = "Could not load the list: " + e.message;
		}
		setTimeout(load, refresh);
	}

	$("filters").addEventListener("input", () => { syncURL(); render(); });
	$("filters").addEventListener("submit", (e) => e.preventDefault());
	for (const th of document.querySelectorAll("th[data-sort]")) {
		th.addEventListener("click", () => {
			if (state.sort === th.dataset.sort) state.desc = !state.desc;
			else { state.sort = th.dataset.sort; state.desc = th.dataset.sort === "players"; }
			syncURL();
			render();
		});
	}
	load();
})();
