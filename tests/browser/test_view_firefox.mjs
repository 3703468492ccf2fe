// The `espgrid view` page in Firefox (ctest label `browser`): the two-sphere page must draw
// from file:// with its colours where the map puts them, and the fasciculin-2 page must draw.
// Firefox is driven through Marionette, its own remote protocol (a few JSON commands over a
// socket, written out below: no driver to install). Headless Firefox has no WebGL without a
// GPU, so it runs as a normal window under Xvfb (Mesa's software OpenGL draws).
//
//   node tests/browser/test_view_firefox.mjs --espgrid build/espgrid --source . --work DIR
//
// Exits 77 (skipped) with the reason when Firefox or xvfb-run is missing; $ESPGRID_FIREFOX
// names another Firefox.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { classify, makeTwoSpheres } from "./two_spheres.mjs";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const key of ["espgrid", "source", "work"])
  if (!args[key]) { console.error(`usage: --espgrid PATH --source DIR --work DIR (missing --${key})`); process.exit(2); }
function skip(why) { console.log(`SKIP: ${why}`); process.exit(77); }
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
}

const firefox = [process.env.ESPGRID_FIREFOX, "/usr/lib/firefox-esr/firefox-esr", "/usr/lib/firefox/firefox",
                 "/usr/bin/firefox-esr", "/usr/bin/firefox"].find((c) => c && fs.existsSync(c));
if (!firefox) skip("no Firefox (apt-get install firefox-esr, or set ESPGRID_FIREFOX)");
async function main() {
  const version = execFileSync(firefox, ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  console.log(`browser: ${version} (${firefox})`);
  fs.mkdirSync(args.work, { recursive: true });
  const work = path.resolve(args.work);
  const espgrid = path.resolve(args.espgrid);
  const spheres = makeTwoSpheres(espgrid, work);
  const fasMap = path.join(work, "fasciculin2_1A.dx"), fasPage = path.join(work, "fasciculin2_firefox.html");
  const fas = path.join(path.resolve(args.source), "data", "fasciculin2.pqr");
  execFileSync(espgrid, ["map", fas, "--spacing", "1", "--backend", "cpu", "--model", "debye", "--dielectric", "78.54",
                         "--ionic-strength", "0.15", "-o", fasMap], { stdio: "ignore" });
  execFileSync(espgrid, ["view", fas, fasMap, "-o", fasPage], { stdio: "ignore" });

  const ff = await Marionette.start(firefox);
  try {
    for (const [page, name, colours] of [[spheres.html, "two-sphere", true], [fasPage, "fasciculin-2", false]]) {
      await ff.command("WebDriver:Navigate", { url: "file://" + page });
      let state = null;
      for (let i = 0; i < 240; i++) {  // up to a minute
        state = await ff.script("return window.espgrid ? {state: window.espgrid.state, error: window.espgrid.error || null, " +
                                "drawn: window.espgrid.timing.drawn || null} : null");
        if (state && state.state !== "loading") break;
        await new Promise((r) => setTimeout(r, 250));
      }
      check(state && state.state === "ready", `the ${name} page is drawn in Firefox (${JSON.stringify(state)})`);
      if (!state || state.state !== "ready") continue;
      // The WebGL canvas (3Dmol.js keeps its drawing buffer), read back in the page.
      const counts = await ff.script(`const c = window.espgrid.viewer.getCanvas();
        const o = document.createElement("canvas"); o.width = c.width; o.height = c.height;
        const g = o.getContext("2d"); g.fillStyle = "white"; g.fillRect(0, 0, o.width, o.height); g.drawImage(c, 0, 0);
        const classify = ${classify.toString()};
        return classify(g.getImageData(0, 0, o.width, o.height).data, o.width, o.height);`);
      const area = counts.width * counts.height;
      console.log(`  ${name}: ${JSON.stringify(counts)}; drawn ${state.drawn} ms after navigation`);
      // As in the Chromium test (test_view_page.mjs): a surface covers over 5% of the view, and
      // each sphere's saturated colour outnumbers the other's (anti-aliased edges) tenfold.
      check(counts.drawn > 0.05 * area, `${name}: the surface is drawn (${(100 * counts.drawn / area).toFixed(1)}%)`);
      if (colours) {
        check(counts.left.red > 0.01 * area && counts.left.red > 10 * counts.left.blue,
              `the negative sphere (left) is red: ${counts.left.red} red, ${counts.left.blue} blue pixels`);
        check(counts.right.blue > 0.01 * area && counts.right.blue > 10 * counts.right.red,
              `the positive sphere (right) is blue: ${counts.right.blue} blue, ${counts.right.red} red pixels`);
      }
      const png = await ff.command("WebDriver:TakeScreenshot", { full: false });
      fs.writeFileSync(path.join(work, `${name}-firefox.png`), Buffer.from(png.value, "base64"));
    }
  } finally {
    await ff.stop();
  }
  console.log(failures ? `${failures} check(s) failed` : "all checks passed");
  process.exit(failures ? 1 : 0);
}

// Marionette: messages are "LENGTH:JSON"; a command is [0, id, name, parameters], its answer
// [1, id, error, result].
class Marionette {
  static async start(binary) {
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), "espgrid-firefox-"));
    const port = 20000 + (process.pid % 20000);
    fs.writeFileSync(path.join(profile, "user.js"), [
      `user_pref("marionette.port", ${port});`,
      'user_pref("browser.shell.checkDefaultBrowser", false);',
      'user_pref("datareporting.policy.dataSubmissionEnabled", false);',
      'user_pref("app.update.disabledForTesting", true);',
      'user_pref("network.proxy.type", 0);',
    ].join("\n") + "\n");
    const m = new Marionette();
    m.profile = profile;
    m.process = spawn(binary, ["--marionette", "--no-remote", "--profile", profile, "--window-size=1200,800"],
                      { stdio: "ignore" });
    for (let i = 0; i < 200 && !m.socket; i++) {
      await new Promise((r) => setTimeout(r, 250));
      m.socket = await new Promise((resolve) => {
        const s = net.connect(port, "127.0.0.1", () => resolve(s));
        s.on("error", () => resolve(null));
      });
    }
    if (!m.socket) { m.process.kill(); throw new Error("Firefox's Marionette did not answer on port " + port); }
    m.buffer = Buffer.alloc(0);
    m.waiting = [];
    m.socket.on("data", (d) => {
      m.buffer = Buffer.concat([m.buffer, d]);
      for (;;) {
        const colon = m.buffer.indexOf(":");
        if (colon < 0) break;
        const length = Number(m.buffer.subarray(0, colon).toString());
        if (m.buffer.length < colon + 1 + length) break;
        const message = JSON.parse(m.buffer.subarray(colon + 1, colon + 1 + length).toString("utf8"));
        m.buffer = m.buffer.subarray(colon + 1 + length);
        m.waiting.shift()(message);
      }
    });
    m.id = 0;
    await new Promise((r) => m.waiting.push(r));  // the greeting
    await m.command("WebDriver:NewSession", { capabilities: {} });
    return m;
  }
  async command(name, parameters) {
    const text = JSON.stringify([0, ++this.id, name, parameters]);
    const answer = new Promise((r) => this.waiting.push(r));
    this.socket.write(Buffer.byteLength(text) + ":" + text);
    const [, , error, result] = await answer;
    if (error) throw new Error(`${name}: ${JSON.stringify(error)}`);
    return result;
  }
  async script(body) {
    return (await this.command("WebDriver:ExecuteScript", { script: body, args: [] })).value;
  }
  async stop() {
    try { await this.command("WebDriver:DeleteSession", {}); } catch { /* closing anyway */ }
    this.socket.destroy();
    this.process.kill();
    fs.rmSync(this.profile, { recursive: true, force: true });
  }
}

// After the class above is defined (a class is not hoisted).
if (!process.env.DISPLAY) {
  // Run again under a virtual X server (xvfb-run), where Firefox gets WebGL from Mesa.
  if (process.env.ESPGRID_UNDER_XVFB) skip("no X display even under xvfb-run");
  let xvfb = null;
  try { xvfb = execFileSync("sh", ["-c", "command -v xvfb-run"], { encoding: "utf8" }).trim(); } catch { xvfb = null; }
  if (!xvfb) skip("no X display and no xvfb-run (apt-get install xvfb)");
  const child = spawn(xvfb, ["-a", "-s", "-screen 0 1280x1024x24", process.execPath, ...process.argv.slice(1)],
                      { stdio: "inherit", env: { ...process.env, ESPGRID_UNDER_XVFB: "1" } });
  child.on("exit", (code) => process.exit(code ?? 1));
} else {
  await main();
}

