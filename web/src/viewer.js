// The script of an `espgrid view` page (inlined by espgrid; see web/src/page.html). It reads
// the page's data (a JSON block and base64 blocks, gzip-compressed where espgrid had zlib),
// draws the molecular surface coloured by the potential, the isosurfaces and the atoms with
// 3Dmol.js, and wires the panel. It fetches nothing. window.espgrid reports its state and
// timings to the browser test (tests/browser/).
(function () {
  "use strict";
  const state = (window.espgrid = { state: "loading", timing: { script: performance.now() }, viewer: null });
  const $ = (id) => document.getElementById(id);

  function fail(message) {
    state.state = "error";
    state.error = String(message);
    document.body.dataset.state = "error";
    const box = $("espgrid-error");
    box.textContent = "This page could not be drawn: " + message;
    box.style.display = "block";
    console.error("espgrid view: " + message);
  }
  window.addEventListener("error", (e) => fail(e.message || e));
  window.addEventListener("unhandledrejection", (e) => fail((e.reason && e.reason.message) || e.reason));

  // The renderer's diverging scale (viz/render_potential.py, DIVERGING): red at -limit, white
  // at 0, blue at +limit, seven stops at equal steps, linear in RGB, clamped; grey where the
  // sample lies outside the map.
  const STOPS = [[0.70, 0.04, 0.09], [0.85, 0.25, 0.22], [0.95, 0.60, 0.55], [0.97, 0.97, 0.97],
                 [0.58, 0.71, 0.94], [0.25, 0.45, 0.85], [0.07, 0.22, 0.70]];
  const NAN_RGB = [0.6, 0.6, 0.6];
  function ramp(value, limit) {
    if (!Number.isFinite(value)) return NAN_RGB;
    let t = (value + limit) / (2 * limit);
    t = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(t));
    const f = t - i, a = STOPS[i], b = STOPS[i + 1];
    return [a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])];
  }
  function css(rgb) {
    return "rgb(" + rgb.map((c) => Math.round(255 * c)).join(",") + ")";
  }

  function bytesOfBase64(text) {
    const binary = atob(text);
    const out = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
    return out;
  }
  async function blob(name) {
    const spec = data.blobs[name];
    const element = $("espgrid-blob-" + name);
    if (!spec || !element) throw new Error("the page lacks its data block '" + name + "'");
    let bytes = bytesOfBase64(element.textContent.trim());
    if (spec.encoding === "gzip") {
      if (typeof DecompressionStream === "undefined")
        throw new Error("this browser cannot decompress the page's data (DecompressionStream: Chrome 80+, Firefox 113+, Safari 16.4+)");
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    if (bytes.length !== spec.bytes) throw new Error("data block '" + name + "' holds " + bytes.length + " bytes, expected " + spec.bytes);
    return bytes;
  }
  // Layout written by src/view/view_page.cpp (mesh_block): int32 triangle corners as
  // differences (3m), uint16 positions quantized in the mesh's box (3n), int16 values quantized
  // over their range, -32768 for NaN (n, when the mesh has values), int8 normals x127 (3n).
  function mesh(bytes, spec) {
    const n = spec.vertices, m = spec.triangles;
    let at = bytes.byteOffset;
    const deltas = new Int32Array(bytes.buffer, at, 3 * m); at += 12 * m;
    const triangles = new Uint32Array(3 * m);
    let corner = 0;
    for (let i = 0; i < 3 * m; i++) { corner += deltas[i]; triangles[i] = corner; }
    const q = new Uint16Array(bytes.buffer, at, 3 * n); at += 6 * n;
    const positions = new Float32Array(3 * n);
    for (let i = 0; i < 3 * n; i++) positions[i] = spec.origin[i % 3] + q[i] * spec.step[i % 3];
    let values = null;
    if (spec.values) {
      const qv = new Int16Array(bytes.buffer, at, n); at += 2 * n;
      values = new Float32Array(n);
      for (let i = 0; i < n; i++) values[i] = qv[i] === -32768 ? NaN : spec.value_min + (qv[i] + 32767) * spec.value_step;
    }
    const normals = new Int8Array(bytes.buffer, at, 3 * n);
    return { positions, values, triangles, normals, n, m };
  }
  // 3Dmol.js draws a custom mesh with 16-bit indices: pieces of fewer than 64,000 vertices.
  function pieces(mesh) {
    const LIMIT = 64000 - 3;
    const owner = new Int32Array(mesh.n).fill(-1), local = new Int32Array(mesh.n);
    const out = [];
    let piece = null;
    for (let t = 0; t < mesh.m; t++) {
      if (!piece || piece.vertexArr.length > LIMIT) {
        piece = { vertexArr: [], normalArr: [], faceArr: [], index: [] };
        out.push(piece);
      }
      const id = out.length - 1;
      for (let c = 0; c < 3; c++) {
        const v = mesh.triangles[3 * t + c];
        if (owner[v] !== id) {
          owner[v] = id;
          local[v] = piece.vertexArr.length;
          piece.vertexArr.push({ x: mesh.positions[3 * v], y: mesh.positions[3 * v + 1], z: mesh.positions[3 * v + 2] });
          piece.normalArr.push({ x: mesh.normals[3 * v] / 127, y: mesh.normals[3 * v + 1] / 127, z: mesh.normals[3 * v + 2] / 127 });
          piece.index.push(v);
        }
        piece.faceArr.push(local[v]);
      }
    }
    return out;
  }

  function box(positions) {
    const min = { x: Infinity, y: Infinity, z: Infinity }, max = { x: -Infinity, y: -Infinity, z: -Infinity };
    for (let i = 0; i < positions.length; i += 3) {
      min.x = Math.min(min.x, positions[i]); max.x = Math.max(max.x, positions[i]);
      min.y = Math.min(min.y, positions[i + 1]); max.y = Math.max(max.y, positions[i + 1]);
      min.z = Math.min(min.z, positions[i + 2]); max.z = Math.max(max.z, positions[i + 2]);
    }
    return { min, max };
  }

  const data = JSON.parse($("espgrid-data").textContent);
  state.data = data;
  let viewer = null, surfacePieces = null, surfaceValues = null, surfaceShapes = [], surfaceBox = null;
  const isoShapes = {};
  let limit = data.limit;

  function drawSurface() {
    for (const s of surfaceShapes) viewer.removeShape(s);
    surfaceShapes = [];
    const hidden = !$("espgrid-show-surface").checked;
    const opacity = Number($("espgrid-opacity").value);
    for (const p of surfacePieces) {
      const colours = p.index.map((v) => { const c = ramp(surfaceValues[v], limit); return new $3Dmol.Color(c[0], c[1], c[2]); });
      const shape = viewer.addCustom({ vertexArr: p.vertexArr, normalArr: p.normalArr, faceArr: p.faceArr,
                                       color: colours, opacity: opacity, hidden: hidden });
      // 3Dmol.js computes a custom shape's bounds only for clickable shapes (which also builds
      // a triangle list for picking); zoomTo() frames the surface by these bounds.
      shape.boundingSphere.box = surfaceBox;
      surfaceShapes.push(shape);
    }
  }
  function colourBar() {
    const stops = [];
    for (let i = 0; i <= 60; i++) stops.push(css(ramp(-limit + (2 * limit * i) / 60, limit)));
    $("espgrid-colorbar").style.background = "linear-gradient(to right, " + stops.join(", ") + ")";
    $("espgrid-tick-lo").textContent = "\u2212" + limit;
    $("espgrid-tick-hi").textContent = "+" + limit;
  }
  // The atoms are parsed only when asked for: under an opaque surface they cannot be seen, and
  // a large structure's parse would delay the first picture.
  let model = null;
  async function setAtoms(style) {
    if (style !== "none" && !model) {
      model = viewer.addModel(new TextDecoder().decode(await blob(data.atoms.blob)), "pdb", { keepH: true });
    }
    if (!model) return;
    const spec = {};
    if (style === "cartoon") spec.cartoon = { color: "#a8a8a8" };
    else if (style === "stick") spec.stick = { radius: 0.15 };
    else if (style === "line") spec.line = {};
    else if (style === "sphere") spec.sphere = { scale: 0.3 };
    viewer.setStyle({}, spec);
    // Atoms under an opaque surface are invisible: let them show through.
    if (style !== "none" && $("espgrid-show-surface").checked && Number($("espgrid-opacity").value) >= 1) {
      $("espgrid-opacity").value = 0.6;
      setOpacity();
    }
  }
  function setOpacity() {
    const opacity = Number($("espgrid-opacity").value);
    for (const s of surfaceShapes) s.updateStyle({ opacity: opacity });
  }
  async function toggleIso(index, on) {
    const iso = data.isosurfaces[index];
    if (!isoShapes[index] && on) {
      const m = mesh(await blob(iso.blob), iso);
      isoShapes[index] = pieces(m).map((p) => viewer.addCustom({ vertexArr: p.vertexArr, normalArr: p.normalArr,
                                                               faceArr: p.faceArr, color: iso.color, opacity: 0.45 }));
    }
    for (const s of isoShapes[index] || []) s.updateStyle({ hidden: !on });
    viewer.render();
  }

  // The first view, as the renderer's pictures: looking along data.camera.direction with
  // data.camera.up up. 3Dmol.js looks down -z with +y up, so the model is turned by the
  // rotation whose rows are (right, up, -direction), as a quaternion.
  function firstView() {
    viewer.zoomTo();
    const d = data.camera.direction, u = data.camera.up;
    const r = [d[1] * u[2] - d[2] * u[1], d[2] * u[0] - d[0] * u[2], d[0] * u[1] - d[1] * u[0]];
    const m = [r, u, [-d[0], -d[1], -d[2]]];
    const trace = m[0][0] + m[1][1] + m[2][2];
    let x, y, z, w;
    if (trace > 0) {
      const s = 0.5 / Math.sqrt(trace + 1);
      w = 0.25 / s; x = (m[2][1] - m[1][2]) * s; y = (m[0][2] - m[2][0]) * s; z = (m[1][0] - m[0][1]) * s;
    } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
      const s = 2 * Math.sqrt(1 + m[0][0] - m[1][1] - m[2][2]);
      w = (m[2][1] - m[1][2]) / s; x = 0.25 * s; y = (m[0][1] + m[1][0]) / s; z = (m[0][2] + m[2][0]) / s;
    } else if (m[1][1] > m[2][2]) {
      const s = 2 * Math.sqrt(1 + m[1][1] - m[0][0] - m[2][2]);
      w = (m[0][2] - m[2][0]) / s; x = (m[0][1] + m[1][0]) / s; y = 0.25 * s; z = (m[1][2] + m[2][1]) / s;
    } else {
      const s = 2 * Math.sqrt(1 + m[2][2] - m[0][0] - m[1][1]);
      w = (m[1][0] - m[0][1]) / s; x = (m[0][2] + m[2][0]) / s; y = (m[1][2] + m[2][1]) / s; z = 0.25 * s;
    }
    const view = viewer.getView();
    viewer.setView([view[0], view[1], view[2], view[3], x, y, z, w]);
    // zoomTo() leaves room for the bounding box's diagonal in every direction; the surface
    // itself fills about 60% of the width then: closer, as the renderer frames it.
    viewer.zoom(1.3);
  }

  function panel() {
    $("espgrid-title").textContent = data.title;
    $("espgrid-subtitle").textContent = data.subtitle;
    $("espgrid-unit").textContent = "potential (" + data.units + ") " + data.offset + " \u00c5 outside the surface";
    $("espgrid-limit").value = limit;
    $("espgrid-limit").title = data.limit_text;
    colourBar();
    const rows = $("espgrid-iso-rows");
    data.isosurfaces.forEach((iso, i) => {
      const row = document.createElement("div");
      row.className = "row";
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.id = "espgrid-iso-" + i;
      box.disabled = iso.triangles === 0;
      box.addEventListener("change", () => toggleIso(i, box.checked));
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = iso.color;
      label.append(box, " isosurface " + iso.label + " ", swatch);
      if (iso.triangles === 0) label.append(" (none in the map)");
      row.append(label);
      rows.append(row);
    });
    for (const note of data.notes) {
      const p = document.createElement("p");
      p.textContent = note;
      $("espgrid-notes").append(p);
    }
    for (const [label, text] of data.provenance) {
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = label;
      dd.textContent = text;
      $("espgrid-provenance").append(dt, dd);
    }
  }

  async function main() {
    if (typeof $3Dmol === "undefined") throw new Error("the viewer library (3Dmol.js) is missing from the page");
    panel();
    const surfaceBytes = await blob(data.surface.blob);
    state.timing.decoded = performance.now();
    const surface = mesh(surfaceBytes, data.surface);
    surfaceValues = surface.values;
    surfacePieces = pieces(surface);
    surfaceBox = box(surface.positions);
    state.timing.pieces = performance.now();
    viewer = $3Dmol.createViewer($("espgrid-viewer"), { backgroundColor: "white", antialias: true, upscale: false });
    state.viewer = viewer;
    if (data.atoms) {
      const option = $("espgrid-atoms").querySelector("option[value=cartoon]");
      option.textContent = data.atoms.cartoon ? "cartoon" : "cartoon (no residues)";
      option.disabled = !data.atoms.cartoon;
    } else {
      $("espgrid-atoms").disabled = true;
    }
    drawSurface();
    state.timing.built = performance.now();
    // zoomTo() draws the scene (GLViewer.show) before render() has built it: skip that draw,
    // one full draw fewer before the page is ready (about a third of the time in SwiftShader).
    const show = viewer.show;
    viewer.show = () => {};
    firstView();
    viewer.show = show;
    state.timing.zoomed = performance.now();
    viewer.render();
    state.timing.rendered = performance.now();
    $("espgrid-status").textContent = surface.n.toLocaleString() + " vertices, " + surface.m.toLocaleString() + " triangles";
    await new Promise((resolve) => requestAnimationFrame(resolve));
    state.timing.frame1 = performance.now();
    await new Promise((resolve) => requestAnimationFrame(resolve));
    state.timing.drawn = performance.now();
    state.state = "ready";
    document.body.dataset.state = "ready";

    $("espgrid-limit").addEventListener("change", () => {
      const v = Number($("espgrid-limit").value);
      if (!(v > 0) || !Number.isFinite(v)) { $("espgrid-limit").value = limit; return; }
      limit = v;
      colourBar();
      drawSurface();
      viewer.render();
    });
    $("espgrid-limit-reset").addEventListener("click", () => {
      limit = data.limit;
      $("espgrid-limit").value = limit;
      colourBar();
      drawSurface();
      viewer.render();
    });
    $("espgrid-show-surface").addEventListener("change", () => {
      for (const s of surfaceShapes) s.updateStyle({ hidden: !$("espgrid-show-surface").checked });
      viewer.render();
    });
    $("espgrid-opacity").addEventListener("change", () => { setOpacity(); viewer.render(); });
    $("espgrid-atoms").addEventListener("change", async () => { await setAtoms($("espgrid-atoms").value); viewer.render(); });
    $("espgrid-reset").addEventListener("click", () => { firstView(); viewer.render(); });
  }
  state.ready = main().catch((e) => fail(e && e.message ? e.message : e));
})();
