// Loads gamegate's server-browser page in Debian's Chromium through
// playwright-core (which downloads no browser) and prints, as JSON, what a
// player would meet on it: per view (a viewport and colour scheme), the
// page's width against the window's, each server row's controls, the
// empty state, the page's background, axe-core's violations, and, on
// request, an opened row, a copied address and a screenshot. The Go test
// (tests/server_browser_screens_test.go) asserts on it.
//
//   node server-browser.js '{"chromium": "/usr/bin/chromium", "views": [{"url": …, "width": 390, "height": 844}]}'
//
// A view may ask for: "colorScheme" ("light", "dark"), "open" (the address
// of the row to open, by its button and the keyboard), "copy" (the address
// whose copy control to press, reading the clipboard back), "axe" (run
// axe-core), "screenshot" (a PNG path), "fixture" (an object to answer
// servers.json with instead of the server's list).
"use strict";
const fs = require("fs");
const { chromium } = require("playwright-core");

const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

async function view(browser, v) {
	const ctx = await browser.newContext({
		viewport: { width: v.width, height: v.height },
		colorScheme: v.colorScheme || "light",
		permissions: v.copy ? ["clipboard-read", "clipboard-write"] : [],
	});
	if (v.fixture) await ctx.route(/\/servers\.json/, (r) => r.fulfill({ json: v.fixture }));
	// Collects what the page's Content-Security-Policy blocks: none of its
	// own script or style may be.
	await ctx.addInitScript(() => {
		window.__csp = [];
		document.addEventListener("securitypolicyviolation", (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));
	});
	const page = await ctx.newPage();
	const errors = [];
	page.on("pageerror", (e) => errors.push(String(e)));
	page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
	await page.goto(v.url);
	await page.waitForFunction(() => !/^Loading/.test(document.getElementById("status").textContent), null, { timeout: 30000 });
	const out = { name: v.name, width: v.width, errors };
	const measure = () => page.evaluate(() => ({ scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth }));
	out.overflow = await measure();
	out.status = await page.textContent("#status");
	out.background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
	out.regions = await page.$$eval("#region option", (os) => os.map((o) => o.value).filter(Boolean));
	out.empty = await page.evaluate(() => {
		const e = document.getElementById("empty");
		return { shown: !e.hidden && e.offsetHeight > 0, text: document.getElementById("empty-text").textContent, clear: !document.getElementById("empty-clear").hidden };
	});
	out.rows = await page.$$eval("#servers tr.server", (rows) => rows.map((tr) => {
		const q = (s) => tr.querySelector(s);
		const shown = (e) => !!e && e.getBoundingClientRect().width > 0 && getComputedStyle(e).visibility !== "hidden";
		return {
			address: tr.dataset.address,
			name: q("td.name button.open").textContent,
			expanded: q("td.name button.open").getAttribute("aria-expanded"),
			game: q("td.game").textContent,
			players: q("td.players").textContent,
			ping: q("td.ping").textContent,
			join: shown(q("a.join")) ? q("a.join").getAttribute("href") : null,
			copy: shown(q("button.copy")),
			copyName: q("button.copy") && q("button.copy").textContent,
			connect: q("td.join code").textContent,
			badge: q("a.badge") && q("a.badge").getAttribute("href"),
			nameIsLink: !!tr.querySelector("td.name a, td.join code a"),
		};
	}));
	if (v.open) {
		const button = page.locator(`#servers tr.server[data-address="${v.open}"] button.open`);
		await button.focus();
		await page.keyboard.press("Enter");
		const detail = page.locator("#" + (await button.getAttribute("aria-controls")));
		await detail.waitFor({ state: "visible" });
		out.opened = {
			expanded: await button.getAttribute("aria-expanded"),
			hash: await page.evaluate(() => location.hash),
			bots: await detail.locator("table.who tr.bot td:first-child").evaluateAll((tds) => tds.map((td) => td.firstChild.textContent)),
			botTags: await detail.locator("table.who tr.bot .tag").count(),
			players: await detail.locator("table.who tr.player td:first-child").evaluateAll((tds) => tds.map((td) => td.firstChild.textContent)),
			columns: await detail.locator("table.who th").allTextContents(),
			text: await detail.innerText(),
			chartLabels: await detail.locator("svg text").allTextContents(),
			chartTitles: await detail.locator("svg rect.slot title").count(),
		};
		out.openedOverflow = await measure();
		if (v.reopen) { // the URL of an opened row opens it again
			const again = await ctx.newPage();
			await again.goto(v.url + out.opened.hash);
			await again.waitForFunction(() => !/^Loading/.test(document.getElementById("status").textContent), null, { timeout: 30000 });
			out.opened.reopened = await again.locator("button.open[aria-expanded=true]").allTextContents();
			await again.close();
		}
	}
	if (v.screenshot) await page.screenshot({ path: v.screenshot, fullPage: false });
	if (v.copy) {
		const row = page.locator(`#servers tr.server[data-address="${v.copy}"]`);
		await row.locator("button.copy").click();
		// The live region says so; it outlives a refresh that redraws the rows.
		await page.waitForFunction(() => /^Copied /.test(document.getElementById("note").textContent));
		out.copied = await page.evaluate(() => navigator.clipboard.readText());
	}
	if (v.axe) {
		await page.evaluate(axeSource);
		out.axe = await page.evaluate(async () => {
			const r = await window.axe.run(document, { resultTypes: ["violations"] });
			return r.violations.map((x) => ({ id: x.id, impact: x.impact, nodes: x.nodes.length, help: x.help, targets: x.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
		});
	}
	out.csp = await page.evaluate(() => window.__csp);
	await ctx.close();
	return out;
}

(async () => {
	const opts = JSON.parse(process.argv[2]);
	const browser = await chromium.launch({ executablePath: opts.chromium, args: ["--no-sandbox", "--disable-gpu"] });
	try {
		const results = [];
		for (const v of opts.views) results.push(await view(browser, v));
		process.stdout.write(JSON.stringify(results));
	} finally {
		await browser.close();
	}
})().catch((e) => {
	console.error(e && e.stack || e);
	process.exit(1);
});
