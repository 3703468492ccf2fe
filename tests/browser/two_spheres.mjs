// The two-sphere fixture of the browser tests: a negative sphere at x = -9 Å and a positive one
// at x = +9 Å, their Debye-screened map and its `espgrid view` page, looked at along -z (so +x
// is to the right). Shared by test_view_page.mjs (Chromium) and test_view_firefox.mjs.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export const PHYSICS = ["--model", "debye", "--dielectric", "78.54", "--ionic-strength", "0.15"];

// Atoms on a 1.5 Å lattice within 3.5 Å of each centre, radius 1.7 Å, the sphere's charge
// (∓8 e) spread evenly: 1.4 Å outside its surface the Debye-screened potential is about ∓4 kT/e
// (well into the ±5 colour scale), and the other sphere, 18 Å away and screened, adds under
// 0.5 kT/e of the opposite sign, so each sphere keeps one colour all round.
export function twoSpheresPqr() {
  const pqr = [];
  let serial = 0;
  for (const [centre, charge, name] of [[-9, -8, "NEG"], [9, 8, "POS"]]) {
    const sites = [];
    for (let i = -3; i <= 3; i++)
      for (let j = -3; j <= 3; j++)
        for (let k = -3; k <= 3; k++)
          if (Math.hypot(i, j, k) * 1.5 <= 3.5) sites.push([centre + 1.5 * i, 1.5 * j, 1.5 * k]);
    for (const [x, y, z] of sites) {
      serial++;
      pqr.push(`ATOM  ${String(serial).padStart(5)}  C   ${name} A${String(serial).padStart(4)}    ` +
               `${x.toFixed(3).padStart(8)}${y.toFixed(3).padStart(8)}${z.toFixed(3).padStart(8)}` +
               ` ${(charge / sites.length).toFixed(4).padStart(7)} 1.7000`);
    }
  }
  return pqr.join("\n") + "\nEND\n";
}

/// Writes WORK/two_spheres.{pqr,dx,html}; returns the paths and `espgrid view`'s summary.
export function makeTwoSpheres(espgrid, work) {
  const run = (argv) => execFileSync(espgrid, argv, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const pqr = path.join(work, "two_spheres.pqr"), dx = path.join(work, "two_spheres.dx");
  const html = path.join(work, "two_spheres.html");
  fs.writeFileSync(pqr, twoSpheresPqr());
  run(["map", pqr, ...PHYSICS, "--spacing", "0.5", "--padding", "6", "--backend", "cpu", "-o", dx]);
  // Looking along -z with +y up puts +x to the right (the default view would look along the
  // spheres' thinnest axis, whose sign is arbitrary for this symmetric pair).
  const summary = run(["view", pqr, dx, "--view", "-z", "-o", html]);
  return { pqr, dx, html, summary };
}

/// Counts of an RGBA image's pixels (width × height): not background white, and per half
/// saturated red (R − B > 40 of 255) and blue (B − R > 40). Beyond ±1.5 kT/e on the ±5 scale
/// a colour is saturated this way; the spheres are about ∓4 kT/e.
export function classify(rgba, width, height) {
  const out = { width, height, drawn: 0, left: { red: 0, blue: 0 }, right: { red: 0, blue: 0 } };
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = 4 * (y * width + x), r = rgba[i], g = rgba[i + 1], b = rgba[i + 2];
      if (r < 250 || g < 250 || b < 250) out.drawn++;
      const side = x < width / 2 ? out.left : out.right;
      if (r - b > 40) side.red++;
      if (b - r > 40) side.blue++;
    }
  return out;
}
