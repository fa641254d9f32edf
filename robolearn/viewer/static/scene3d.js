/* robolearn's 3D view, drawn with three.js (vendored in vendor/three, loaded through the
   page's import map: no build step, nothing fetched from outside).

   The scene comes once (GET /scene3d.json: geoms, meshes, height fields, which bodies are
   fixed to the world), then only body poses (GET /poses.bin: per env, per body, position
   and w x y z orientation, float32), streamed (GET /poses.stream: each new frame pushed as
   the simulation takes it). A robot's geoms are merged into one geometry whose vertices
   name their body, the poses are a texture its vertex shader reads, and one instanced draw
   covers every env shown at a detail level: 64 robots cost about as many draw calls as one.
   Markers (GET /markers.json) are instanced unit shapes, their text HTML labels. three.js
   does the rest: camera controls (OrbitControls), picking rays (Raycaster), frustum
   culling, lights, fog, shadows (with a GPU) and the ground's texture.

   Usage: const view = new Scene3D(canvas, labels, {onPick: (env) => ...});
          await view.load(); view.setView({selected, shown, spread, follow}); view.start(); */
import * as THREE from 'three';
import {OrbitControls} from 'three/addons/controls/OrbitControls.js';
import {mergeGeometries} from 'three/addons/utils/BufferGeometryUtils.js';

const POSE = 7; // floats per body: x y z, w x y z
const HEADER = 32; // bytes before the env ids in /poses.bin
const MAGIC = 0x31504c52; // "RLP1", little-endian
const CHUNK = 64; // height field cells per chunk side
const MAX_MARKER_ENVS = 64;
const SKY = [0.32, 0.4, 0.5];
const TINT = [1.0, 0.55, 0.1]; // the watched env among several
// colours are MuJoCo's rgba, drawn as they are (as the renderer before three.js did)
THREE.ColorManagement.enabled = false;

// ---- vectors ------------------------------------------------------------------------
const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const scl = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const len = (a) => Math.sqrt(dot(a, a));
const unit = (a) => { const l = len(a) || 1; return [a[0] / l, a[1] / l, a[2] / l]; };
const rad = (deg) => deg * Math.PI / 180;
const deg = (r) => r * 180 / Math.PI;
const quaternion = (q) => new THREE.Quaternion(q[1], q[2], q[3], q[0]); // from MuJoCo's w x y z
function qrot(q, v) { // q = [w, x, y, z]: v + w t + u x t, t = 2 u x v
  const w = q[0], x = q[1], y = q[2], z = q[3];
  const tx = 2 * (y * v[2] - z * v[1]), ty = 2 * (z * v[0] - x * v[2]), tz = 2 * (x * v[1] - y * v[0]);
  return [v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz), v[2] + w * tz + (x * ty - y * tx)];
}
function qnorm(q) {
  const l = Math.hypot(q[0], q[1], q[2], q[3]);
  return Number.isFinite(l) && l > 1e-9 ? q.map((v) => v / l) : [1, 0, 0, 0];
}
function decode64(text, Type) {
  const bin = atob(text), bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  return new Type(bytes.buffer);
}
function basis(dir) { // two unit vectors perpendicular to dir and to each other
  const a = Math.abs(dir[2]) < 0.9 ? [0, 0, 1] : [1, 0, 0];
  const x = unit(cross(a, dir));
  return [x, cross(dir, x)];
}
function concat(a, b) { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; }
function finite(v, n) { return Array.isArray(v) && v.length === n && v.every((x) => typeof x === 'number' && Number.isFinite(x)); }

// ---- geoms as three.js geometries, in their body's frame (MuJoCo's z up) ---------------
const FINE = {seg: 20, rings: 10}, COARSE = {seg: 8, rings: 4}, MEDIUM = {seg: 12, rings: 6}, TINY = {seg: 6, rings: 3};
// the coarsest tessellation whose outline stays within half a pixel of the true one, for a
// curved geom of this radius in pixels (a chord over an angle a misses the circle of radius
// r by r (1 - cos(a / 2)))
function detailFor(radiusPixels) {
  for (const d of [TINY, COARSE, MEDIUM]) if (radiusPixels * (1 - Math.cos(Math.PI / d.seg)) <= 0.5) return d;
  return FINE;
}
function modelMesh(mesh) { // every face corner its own vertex, with MuJoCo's normal for it
  const vert = decode64(mesh.vertices, Float32Array), face = decode64(mesh.faces, Uint32Array);
  const nrm = decode64(mesh.normals, Float32Array), fn = decode64(mesh.face_normals, Uint32Array);
  const pos = new Float32Array(face.length * 3), normal = new Float32Array(face.length * 3);
  for (let k = 0; k < face.length; k++) {
    pos.set(vert.subarray(3 * face[k], 3 * face[k] + 3), 3 * k);
    normal.set(nrm.subarray(3 * fn[k], 3 * fn[k] + 3), 3 * k);
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(pos, 3));
  g.setAttribute('normal', new THREE.BufferAttribute(normal, 3));
  g.setIndex([...Array(face.length).keys()]);
  return g;
}
const zUp = (g) => g.rotateX(Math.PI / 2); // three's round shapes have their axis along y
// a capsule as a lathe of its outline, half of `detail.rings` segments a cap (three's
// CapsuleGeometry splits each cap in twice as many as asked: a third more triangles)
function capsule(r, h, detail) {
  const half = Math.max(2, detail.rings >> 1), outline = [];
  for (const [z, from] of [[-h, -Math.PI / 2], [h, 0]]) {
    for (let i = 0; i <= half; i++) {
      const a = from + Math.PI / 2 * i / half;
      outline.push(new THREE.Vector2(Math.max(r * Math.cos(a), 0), z + r * Math.sin(a)));
    }
  }
  return zUp(new THREE.LatheGeometry(outline, detail.seg));
}
function geomGeometry(g, meshes, detail) {
  const z = g.size;
  switch (g.type) {
    case 'sphere': return zUp(new THREE.SphereGeometry(z[0], detail.seg, detail.rings));
    case 'ellipsoid': return zUp(new THREE.SphereGeometry(1, detail.seg, detail.rings)).scale(z[0], z[1], z[2]);
    case 'capsule': return capsule(z[0], z[1], detail);
    case 'cylinder': return zUp(new THREE.CylinderGeometry(z[0], z[0], 2 * z[1], detail.seg));
    case 'box': return new THREE.BoxGeometry(2 * z[0], 2 * z[1], 2 * z[2]);
    case 'mesh': return meshes.has(g.mesh) ? modelMesh(meshes.get(g.mesh)) : null;
    case 'plane': return new THREE.PlaneGeometry(2 * (z[0] > 0 ? z[0] : 500), 2 * (z[1] > 0 ? z[1] : 500));
    default: return null;
  }
}
function placed(geometry, pos, quat) { // moved from the geom's frame into its body's
  return geometry.applyQuaternion(quaternion(quat)).translate(pos[0], pos[1], pos[2]);
}
// a geom as a part of a robot's merged geometry: position, normal, rgba and body per vertex
function robotPiece(geometry, rgba, body) {
  const n = geometry.attributes.position.count, colors = new Float32Array(4 * n);
  for (let i = 0; i < n; i++) colors.set(rgba, 4 * i);
  const piece = new THREE.BufferGeometry();
  piece.setIndex(geometry.index);
  piece.setAttribute('position', geometry.attributes.position);
  piece.setAttribute('normal', geometry.attributes.normal);
  piece.setAttribute('color', new THREE.BufferAttribute(colors, 4));
  piece.setAttribute('body', new THREE.BufferAttribute(new Float32Array(n).fill(body), 1));
  return piece;
}

// ---- materials ------------------------------------------------------------------------
// three.js's own shaders, with the body's pose read from the pose texture (a row per env
// shown, per body its position with the env's tint in w, then its orientation)
const POSED_VS = `
uniform highp sampler2D uPoses;
uniform int uFirst;
attribute float body;
varying float vMark;
vec3 rlRotate(vec4 q, vec3 v) { vec3 t = 2.0 * cross(q.yzw, v); return v + q.x * t + cross(q.yzw, t); }
vec4 rlTexel(int column) { return texelFetch(uPoses, ivec2(column, uFirst + gl_InstanceID), 0); }
`;
function posed(material, uniforms) {
  material.onBeforeCompile = (shader) => {
    Object.assign(shader.uniforms, uniforms);
    shader.vertexShader = POSED_VS + shader.vertexShader
      .replace('#include <beginnormal_vertex>', 'int rlBody = int(body + 0.5);\nvec3 objectNormal = rlRotate(rlTexel(2 * rlBody + 1), normal);')
      .replace('#include <begin_vertex>', 'vec4 rlAt = rlTexel(2 * int(body + 0.5));\n' +
        'vec3 transformed = rlAt.xyz + rlRotate(rlTexel(2 * int(body + 0.5) + 1), position);\nvMark = rlAt.w;');
    shader.fragmentShader = 'uniform vec3 uTint;\nuniform float uMarkScale;\nvarying float vMark;\n' +
      shader.fragmentShader.replace('#include <color_fragment>',
        '#include <color_fragment>\ndiffuseColor.rgb = mix(diffuseColor.rgb, uTint, 0.4 * vMark * uMarkScale);');
  };
  material.customProgramCacheKey = () => 'robolearn-posed';
  return material;
}
// markers: three's instancing (instanceMatrix), with an rgba per instance
function markerMaterial() {
  // one pass over both sides (three draws a transparent double-sided material twice)
  const m = new THREE.MeshLambertMaterial({transparent: true, side: THREE.DoubleSide, fog: false, forceSinglePass: true});
  m.onBeforeCompile = (shader) => {
    shader.vertexShader = 'attribute vec4 rgba;\nvarying vec4 vRgba;\n' +
      shader.vertexShader.replace('#include <begin_vertex>', '#include <begin_vertex>\nvRgba = rgba;');
    shader.fragmentShader = 'varying vec4 vRgba;\n' +
      shader.fragmentShader.replace('#include <color_fragment>', '#include <color_fragment>\ndiffuseColor *= vRgba;');
  };
  m.customProgramCacheKey = () => 'robolearn-marker';
  return m;
}
// the ground's checker with a line at every metre (a tile is 2 x 2 metres), mipmapped
function groundTexture() {
  const size = 128, half = size / 2, c = document.createElement('canvas');
  c.width = c.height = size;
  const ctx = c.getContext('2d');
  const grey = (v) => 'rgb(' + [v, v, v].map((x) => Math.round(255 * x)).join(',') + ')';
  ctx.fillStyle = grey(0.86); ctx.fillRect(0, 0, size, size);
  ctx.fillStyle = grey(0.64); ctx.fillRect(0, 0, half, half); ctx.fillRect(half, half, half, half);
  ctx.fillStyle = grey(1.0);
  for (const at of [0, half]) { ctx.fillRect(at, 0, 2, size); ctx.fillRect(0, at, size, 2); }
  const t = new THREE.CanvasTexture(c);
  t.wrapS = t.wrapT = THREE.RepeatWrapping;
  return t;
}

// ---- a height field: one vertex per sample, in chunks three.js culls; each chunk drawn at
// a stride chosen by its distance (a cell at least a few pixels wide)
class HeightField {
  constructor(hf, geom, pose, material) {
    const nrow = hf.nrow, ncol = hf.ncol, [sx, sy, sz] = hf.size;
    const h = decode64(hf.data, Float32Array);
    const pos = add(pose.pos, qrot(pose.quat, geom.pos)), quat = quaternion(pose.quat).multiply(quaternion(geom.quat));
    const q = [quat.w, quat.x, quat.y, quat.z];
    this.ncol = ncol;
    const dx = 2 * sx / (ncol - 1), dy = 2 * sy / (nrow - 1);
    const at = new Float32Array(nrow * ncol * 3), normals = new Float32Array(nrow * ncol * 3);
    const slope = (lo, hi, step, a, b) => (h[hi] - h[lo]) * sz / ((b - a) * step);
    for (let r = 0; r < nrow; r++) for (let c = 0; c < ncol; c++) {
      const k = r * ncol + c, cl = Math.max(c - 1, 0), ch = Math.min(c + 1, ncol - 1);
      const rl = Math.max(r - 1, 0), rh = Math.min(r + 1, nrow - 1);
      const zx = slope(r * ncol + cl, r * ncol + ch, dx, cl, ch), zy = slope(rl * ncol + c, rh * ncol + c, dy, rl, rh);
      at.set(add(pos, qrot(q, [-sx + c * dx, -sy + r * dy, h[k] * sz])), 3 * k);
      normals.set(qrot(q, unit([-zx, -zy, 1])), 3 * k);
    }
    this.position = new THREE.BufferAttribute(at, 3);
    this.normal = new THREE.BufferAttribute(normals, 3);
    this.chunks = [];
    this.group = new THREE.Group();
    for (let r0 = 0; r0 < nrow - 1; r0 += CHUNK) for (let c0 = 0; c0 < ncol - 1; c0 += CHUNK) {
      const r1 = Math.min(r0 + CHUNK, nrow - 1), c1 = Math.min(c0 + CHUNK, ncol - 1);
      const box = new THREE.Box3();
      for (const r of [r0, r1]) for (const c of [c0, c1]) for (const zz of [0, sz]) box.expandByPoint(new THREE.Vector3(...add(pos, qrot(q, [-sx + c * dx, -sy + r * dy, zz]))));
      const chunk = {r0, r1, c0, c1, sphere: box.getBoundingSphere(new THREE.Sphere()), lods: {}};
      chunk.mesh = new THREE.Mesh(this.lod(chunk, CHUNK), material);
      chunk.mesh.receiveShadow = true;
      this.chunks.push(chunk);
      this.group.add(chunk.mesh);
    }
    this.cell = Math.min(dx, dy);
  }
  lod(chunk, stride) { // the chunk's geometry at this stride: made at first use, then kept
    if (chunk.lods[stride]) return chunk.lods[stride];
    const samples = (a, b) => { const out = []; for (let i = a; i < b; i += stride) out.push(i); out.push(b); return out; };
    const rows = samples(chunk.r0, chunk.r1), cols = samples(chunk.c0, chunk.c1), idx = [];
    for (let i = 0; i + 1 < rows.length; i++) for (let j = 0; j + 1 < cols.length; j++) {
      const a = rows[i] * this.ncol + cols[j], b = rows[i] * this.ncol + cols[j + 1];
      const d = rows[i + 1] * this.ncol + cols[j], e = rows[i + 1] * this.ncol + cols[j + 1];
      idx.push(a, b, e, a, e, d); // split along (r, c)-(r+1, c+1), as MuJoCo does
    }
    const g = new THREE.BufferGeometry();
    g.setAttribute('position', this.position);
    g.setAttribute('normal', this.normal);
    g.setIndex(new THREE.BufferAttribute(new Uint32Array(idx), 1));
    g.boundingSphere = chunk.sphere;
    chunk.lods[stride] = g;
    return g;
  }
  update(eye, pixelsPerRadian, fogFar, minPixels) {
    for (const chunk of this.chunks) {
      const d = Math.max(chunk.sphere.center.distanceTo(eye) - chunk.sphere.radius, 0.01);
      chunk.mesh.visible = d <= fogFar; // past the fog: sky colour anyway
      let stride = 1;
      while (stride < CHUNK && this.cell * stride * pixelsPerRadian / d < minPixels) stride *= 2;
      chunk.mesh.geometry = this.lod(chunk, stride);
    }
  }
}

export class Scene3D {
  constructor(canvas, labels, options) {
    this.canvas = canvas;
    this.labels = labels;
    this.options = options || {};
    const software = Scene3D.softwareRenderer();
    this.software = software;
    try {
      this.renderer = new THREE.WebGLRenderer({canvas, antialias: !software, powerPreference: 'high-performance'});
    } catch (e) {
      throw new Error('WebGL2 is not available');
    }
    this.renderer.outputColorSpace = THREE.LinearSRGBColorSpace;
    // shadows with a GPU; a software rasterizer would pay a second pass for them
    this.renderer.shadowMap.enabled = !software;
    // a software rasterizer (SwiftShader, llvmpipe) pays per pixel: draw 3/4 size, scaled up
    this.maxPixelRatio = software ? 0.75 : 2;
    this.world = new THREE.Scene();
    this.world.background = new THREE.Color(...SKY);
    this.world.fog = new THREE.Fog(new THREE.Color(...SKY), 25, 75);
    this.cam = new THREE.PerspectiveCamera(45, 1, 0.01, 200);
    this.cam.up.set(0, 0, 1);
    this.raycaster = new THREE.Raycaster();
    // markers: of the 'watched' (selected) env, of every env 'shown', or 'none'
    this.view = {selected: 0, shown: 1, spread: false, follow: true, markers: 'watched'};
    this.envIds = [0];
    // the camera as scripts read and set it (azimuth and elevation in degrees, MuJoCo's
    // convention); OrbitControls moves it, draw() puts it on three's camera
    this.camera = {azimuth: 140, elevation: -20, distance: 3, target: [0, 0, 0.7], pan: [0, 0, 0], fovy: 45};
    this.poses = null; // the latest /poses.bin
    this.markers = {}; // env id -> marker list
    this.stats = {draws: 0, newFrames: 0, poseBytes: 0, poseAnswers: 0, markerBytes: 0, markerAnswers: 0,
      lastPoseBytes: 0, lastMarkerBytes: 0, frame: -1, steps: 0, simTime: 0, drawMs: 0, triangles: 0, drawCalls: 0};
    this.frameTimes = [];
    this.running = false;
    this.dirty = true;
    this.posesInFlight = false;
    this.markersInFlight = false;
    this.markersAt = 0;
    this.markersOffUntil = 0;
    this.retryAt = 0;
    this.stream = null; // the open /poses.stream: {key, abort, frames}
    this.streamOffUntil = 0; // fetch poses one at a time until then (the stream failed)
    this.shownFrame = -1;
    this.posesTexture = {value: null}; // shared by every robot material
    this.parts = new Map(); // detail level -> the merged meshes drawn at it (bodyParts)
    this.labelPool = [];
    this.controls = this.orbitControls();
    // a hidden tab draws nothing (no animation frames): no poses streamed to it meanwhile
    document.addEventListener('visibilitychange', () => { if (document.hidden) this.closeStream(); });
    canvas.addEventListener('webglcontextlost', (e) => { e.preventDefault(); this.fail('the WebGL context was lost; reload the page'); });
  }

  static softwareRenderer() {
    try {
      const gl = document.createElement('canvas').getContext('webgl2');
      const info = gl && gl.getExtension('WEBGL_debug_renderer_info');
      const name = info ? String(gl.getParameter(info.UNMASKED_RENDERER_WEBGL)) : '';
      const lose = gl && gl.getExtension('WEBGL_lose_context');
      if (lose) lose.loseContext();
      return /swiftshader|llvmpipe|softpipe|software/i.test(name);
    } catch (e) { return false; }
  }

  fail(text) { if (this.options.onError) this.options.onError(text); }

  async load() {
    const r = await fetch('/scene3d.json', {cache: 'no-store'});
    if (!r.ok) throw new Error('the viewer answered ' + r.status + ' for the scene');
    const text = await r.text();
    const built = performance.now();
    const scene = JSON.parse(text);
    this.build(scene);
    this.stats.sceneBytes = text.length;
    this.stats.buildMs = performance.now() - built;
    return scene;
  }

  build(scene) {
    this.scene = scene;
    this.nbody = scene.nbody;
    this.numEnvs = scene.num_envs;
    this.anchor = scene.anchor_body;
    const cam = scene.camera;
    Object.assign(this.camera, {azimuth: cam.azimuth, elevation: cam.elevation, distance: cam.distance, fovy: cam.fovy});
    this.camera.target = scene.center.slice();
    this.addLights(scene.light);
    this.meshes = new Map(scene.meshes.map((m) => [m.id, m]));
    this.geoms = []; // drawn per env, merged into one geometry per detail level (bodyParts)
    this.hfields = [];
    for (const g of scene.geoms) {
      const color = g.texture_rgb ? [g.rgba[0] * g.texture_rgb[0], g.rgba[1] * g.texture_rgb[1], g.rgba[2] * g.texture_rgb[2], g.rgba[3]] : g.rgba;
      const body = scene.bodies[g.body], pose = {pos: body.pos || [0, 0, 0], quat: body.quat || [1, 0, 0, 0]};
      if (g.type === 'hfield') this.addHeightField(g, color, pose);
      else if (g.type === 'plane') this.addPlane(g, color, pose);
      else if (geomGeometry(g, this.meshes, TINY)) this.geoms.push({geom: g, color, body: g.body, static: g.static, transparent: g.rgba[3] < 0.999});
    }
    this.parts = new Map();
    this.markShapes = this.markerShapes();
    this.setView(this.view);
  }

  // the model's lights as the renderer before three.js shaded them: ambient, a key light
  // (the model's first, with shadows on a GPU) and a headlight from the camera; three's
  // Lambert divides by pi, so each intensity is pi
  addLights(light) {
    const color = (rgb, s) => new THREE.Color(rgb[0] * s, rgb[1] * s, rgb[2] * s);
    const key = light.key;
    this.keyDir = key ? unit(key.dir) : unit([0.3, 0.4, -1]);
    this.world.add(new THREE.AmbientLight(color(light.ambient, 1), Math.PI));
    this.keyLight = new THREE.DirectionalLight(key ? color(key.diffuse, 0.6) : color([0.5, 0.5, 0.5], 1), Math.PI);
    this.keyLight.castShadow = !this.software;
    this.keyLight.shadow.mapSize.set(2048, 2048);
    this.headLight = new THREE.DirectionalLight(color(light.headlight, 0.6), Math.PI);
    for (const l of [this.keyLight, this.headLight]) this.world.add(l, l.target);
  }

  addPlane(g, color, pose) {
    const geometry = placed(geomGeometry(g, this.meshes, FINE), g.pos, g.quat);
    const texture = groundTexture(), z = g.size;
    texture.repeat.set(z[0] > 0 ? z[0] : 500, z[1] > 0 ? z[1] : 500); // 2 m a tile
    texture.anisotropy = this.software ? 1 : this.renderer.capabilities.getMaxAnisotropy();
    // on a software rasterizer, one mipmap level a pixel: half the texel reads of trilinear
    if (this.software) texture.minFilter = THREE.LinearMipmapNearestFilter;
    const bright = 1.3; // the texture darkens: its lightest line is the colour x 1.3
    const material = new THREE.MeshLambertMaterial({color: new THREE.Color(color[0] * bright, color[1] * bright, color[2] * bright),
      map: texture, side: THREE.DoubleSide, transparent: color[3] < 0.999, opacity: color[3]});
    const mesh = new THREE.Mesh(geometry, material);
    mesh.position.set(...pose.pos);
    mesh.quaternion.copy(quaternion(pose.quat));
    mesh.receiveShadow = true;
    this.world.add(mesh);
  }

  addHeightField(g, color, pose) {
    const hf = this.scene.hfields.find((h) => h.id === g.hfield);
    if (!hf) return;
    const material = new THREE.MeshLambertMaterial({color: new THREE.Color(color[0], color[1], color[2]), side: THREE.DoubleSide});
    const field = new HeightField(hf, g, pose, material);
    this.hfields.push(field);
    this.world.add(field.group);
  }

  // marker shapes, instanced: a unit cylinder (z from 0 to 1), cone, sphere and cube
  markerShapes() {
    const z01 = (g) => zUp(g).translate(0, 0, 0.5);
    const shapes = {
      cylinder: z01(new THREE.CylinderGeometry(1, 1, 1, 16)),
      cone: z01(new THREE.ConeGeometry(1, 1, 16)),
      sphere: new THREE.SphereGeometry(1, 12, 6),
      box: new THREE.BoxGeometry(2, 2, 2),
    };
    const material = markerMaterial();
    for (const [name, geometry] of Object.entries(shapes)) shapes[name] = {geometry, material, mesh: null, data: []};
    return shapes;
  }

  // ---- what is shown -----------------------------------------------------------------

  setView(view) {
    const before = this.view;
    this.view = Object.assign({}, this.view, view);
    if (!this.scene) return;
    if (this.offsets && ['selected', 'shown', 'spread', 'follow', 'markers'].every((k) => before[k] === this.view[k])) return;
    const n = this.numEnvs, shown = Math.max(1, Math.min(this.view.shown | 0, n, MAX_MARKER_ENVS));
    const selected = Math.max(0, Math.min(this.view.selected | 0, n - 1));
    const start = Math.max(0, Math.min(Math.floor(selected / shown) * shown, n - shown));
    const ids = [];
    for (let i = start; i < start + shown; i++) ids.push(i);
    if (ids.join(',') !== this.envIds.join(',') || before.markers !== this.view.markers) this.markers = {};
    this.envIds = ids;
    this.view.selected = selected;
    this.view.shown = shown;
    if (before.selected !== selected) this.camera.pan = [0, 0, 0];
    this.offsets = this.spreadOffsets(shown);
    this.dirty = true;
  }

  spreadOffsets(n) { // per shown env: where the grid puts it (zero when not spread)
    const out = [];
    const cols = Math.ceil(Math.sqrt(n)), rows = Math.ceil(n / cols), step = this.scene.spread.spacing;
    for (let k = 0; k < n; k++) {
      out.push(this.view.spread ? [((k % cols) - (cols - 1) / 2) * step, (Math.floor(k / cols) - (rows - 1) / 2) * step, 0] : [0, 0, 0]);
    }
    return out;
  }

  // the pose (position, quaternion) of body b of shown env k, spread offset added
  bodyPose(k, b) {
    const p = this.poses, o = (k * p.nbody + b) * POSE, f = p.floats, off = this.offsets[k] || [0, 0, 0];
    return [[f[o] + off[0], f[o + 1] + off[1], f[o + 2] + off[2]], [f[o + 3], f[o + 4], f[o + 5], f[o + 6]]];
  }
  slotOf(env) { return this.poses ? this.poses.ids.indexOf(env) : -1; }

  // ---- the network: poses streamed (one open response, every new frame pushed as the
  // server takes it: no request per frame), or fetched one at a time where a stream fails;
  // markers one request in flight at most -----------------------------------------------

  query() { return 'envs=' + this.envIds.join(','); }

  // GET /poses.stream: frames, each a uint32 byte count then a /poses.bin body; only the
  // latest complete one is kept (a frame that arrives while the page is busy is skipped)
  openStream() {
    const key = this.query(), abort = new AbortController();
    const stream = {key, abort, frames: 0};
    this.stream = stream;
    // a healthy stream starts with the frame already taken: none in 5 s is a proxy that
    // holds the answer back, or a viewer that cannot stream
    const stalled = setTimeout(() => {
      if (stream.frames) return;
      this.streamOffUntil = performance.now() + 10000;
      abort.abort();
      if (this.stream === stream) this.stream = null;
    }, 5000);
    (async () => {
      try {
        const r = await fetch('/poses.stream?' + key, {cache: 'no-store', signal: abort.signal});
        if (!r.ok || !r.body) throw new Error('status ' + r.status);
        await this.readStream(r.body.getReader(), stream);
      } catch (e) {
        if (abort.signal.aborted) return;
      } finally {
        clearTimeout(stalled);
        if (this.stream === stream) this.stream = null;
      }
      if (abort.signal.aborted) return;
      // ended or failed: a stream that never delivered (a proxy that buffers the whole
      // answer, say) is given up for a while, and poses are fetched one at a time
      if (!stream.frames) this.streamOffUntil = performance.now() + 10000;
      else this.retryAt = performance.now() + 200;
    })();
  }
  async readStream(reader, stream) {
    let pending = new Uint8Array(0);
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      pending = pending.length ? concat(pending, value) : value;
      let at = 0, latest = null;
      while (pending.length - at >= 4) {
        const size = new DataView(pending.buffer, pending.byteOffset + at, 4).getUint32(0, true);
        if (pending.length - at - 4 < size) break;
        latest = pending.slice(at + 4, at + 4 + size).buffer; // its own, aligned copy
        at += 4 + size;
        this.stats.poseBytes += size;
        this.stats.poseAnswers += 1;
        stream.frames += 1;
      }
      pending = pending.subarray(at);
      if (latest && this.stream === stream) {
        this.stats.lastPoseBytes = latest.byteLength;
        this.receivePoses(latest);
      }
    }
  }
  closeStream() {
    if (this.stream) { this.stream.abort.abort(); this.stream = null; }
  }
  // what the loop does for poses at each animation frame
  pollPoses(now) {
    if (this.stream && this.stream.key !== this.query()) this.closeStream(); // other envs
    if (this.stream || now < this.retryAt) return;
    if (now >= this.streamOffUntil) this.openStream();
    else if (!this.posesInFlight) this.fetchPoses();
  }

  async fetchPoses() {
    this.posesInFlight = true;
    const ids = this.envIds.slice();
    try {
      const after = this.poses && this.poses.ids.join(',') === ids.join(',') ? '&after=' + this.poses.frame : '';
      const asked = performance.now();
      const r = await fetch('/poses.bin?' + this.query() + after, {cache: 'no-store'});
      this.stats.fetchMs = performance.now() - asked;
      if (r.ok) {
        const buffer = await r.arrayBuffer();
        this.stats.poseBytes += buffer.byteLength;
        this.stats.lastPoseBytes = buffer.byteLength;
        this.stats.poseAnswers += 1;
        this.receivePoses(buffer);
      } else {
        this.retryAt = performance.now() + (r.status === 503 ? 50 : 1000);
        if (r.status !== 503) this.fail('poses: the viewer answered ' + r.status);
      }
    } catch (e) {
      this.retryAt = performance.now() + 1000;
      this.fail('the viewer is not reachable');
    } finally {
      this.posesInFlight = false;
    }
  }

  receivePoses(buffer) {
    const head = new DataView(buffer, 0, HEADER);
    if (head.getUint32(0, true) !== MAGIC) { this.fail('poses: not a poses.bin answer'); return; }
    const frame = head.getUint32(4, true), n = head.getUint32(8, true), nbody = head.getUint32(12, true);
    const ids = Array.from(new Uint32Array(buffer, HEADER, n));
    if (ids.join(',') !== this.envIds.join(',')) return; // the window moved meanwhile
    const floats = new Float32Array(buffer, HEADER + 4 * n, n * nbody * POSE);
    const fresh = !this.poses || frame !== this.poses.frame;
    this.poses = {frame, n, nbody, ids, floats, steps: head.getFloat64(16, true), simTime: head.getFloat64(24, true)};
    Object.assign(this.stats, {frame, steps: this.poses.steps, simTime: this.poses.simTime});
    if (fresh) this.dirty = true;
  }

  markerEnvs() { return this.view.markers === 'shown' ? this.envIds.slice() : [this.view.selected]; }

  async fetchMarkers() {
    this.markersInFlight = true;
    this.markersAt = performance.now();
    const ids = this.markerEnvs(), asked = ids.join(',');
    try {
      const r = await fetch('/markers.json?envs=' + asked, {cache: 'no-store'});
      if (r.ok) {
        const text = await r.text();
        this.stats.markerBytes += text.length;
        this.stats.lastMarkerBytes = text.length;
        this.stats.markerAnswers += 1;
        // an answer for envs no longer watched, or after markers were turned off, is dropped
        if (this.view.markers !== 'none' && asked === this.markerEnvs().join(',')) { this.markers = Scene3D.markersByEnv(JSON.parse(text), ids, this.view.selected); this.dirty = true; }
      } else if (r.status === 404) {
        this.markersOffUntil = performance.now() + 10000; // not served by this viewer (yet)
      } else {
        this.markersOffUntil = performance.now() + 1000;
      }
    } catch (e) {
      this.markersOffUntil = performance.now() + 2000;
    } finally {
      this.markersInFlight = false;
    }
  }

  // {"<env>": [marker, ...]}, or a list per env asked, or one flat list for the selected env
  static markersByEnv(data, ids, selected) {
    const out = {};
    if (data && !Array.isArray(data) && typeof data === 'object') {
      const source = data.envs && typeof data.envs === 'object' ? data.envs : data;
      for (const [key, list] of Object.entries(source)) if (Array.isArray(list) && /^[0-9]+$/.test(key)) out[key] = list;
    } else if (Array.isArray(data)) {
      if (data.every((x) => Array.isArray(x))) data.forEach((list, k) => { if (k < ids.length) out[ids[k]] = list; });
      else out[selected] = data;
    }
    return out;
  }

  // ---- the loop ------------------------------------------------------------------------

  start() {
    if (this.running) return;
    this.running = true;
    this.dirty = true;
    const tick = (now) => {
      if (!this.running) return;
      this.stats.ticks = (this.stats.ticks || 0) + 1;
      requestAnimationFrame(tick);
      this.pollPoses(now);
      if (this.view.markers !== 'none' && !this.markersInFlight && now >= this.markersOffUntil && now - this.markersAt >= 50) this.fetchMarkers();
      if (this.resize() || this.dirty) this.draw();
    };
    requestAnimationFrame(tick);
  }
  stop() { this.running = false; this.closeStream(); this.hideLabels(0); }

  resize() {
    const c = this.canvas, ratio = Math.min(window.devicePixelRatio || 1, this.maxPixelRatio);
    const w = Math.max(1, Math.floor(c.clientWidth * ratio)), h = Math.max(1, Math.floor(c.clientHeight * ratio)); // as three sizes it
    if (c.width === w && c.height === h) return false;
    this.renderer.setPixelRatio(ratio);
    this.renderer.setSize(Math.max(1, c.clientWidth), Math.max(1, c.clientHeight), false);
    return true;
  }

  // ---- the camera: this.camera put on three's camera; OrbitControls' moves read back ---

  orbitControls() {
    const controls = new OrbitControls(this.cam, this.canvas);
    // the wheel as before three.js: x1.16 per notch of 100 (0.95^(3 x 1) = 1 / 1.17)
    controls.zoomSpeed = 3;
    controls.minDistance = 0.2;
    controls.maxDistance = 500;
    controls.minPolarAngle = rad(1);
    controls.maxPolarAngle = rad(179);
    controls.addEventListener('change', () => this.cameraMoved());
    // a click (a press that barely moved) on a robot watches it
    let down = null;
    this.canvas.addEventListener('pointerdown', (e) => { down = {x: e.clientX, y: e.clientY, pick: e.button === 0 && !e.shiftKey && !e.ctrlKey && !e.metaKey}; });
    this.canvas.addEventListener('pointerup', (e) => {
      const click = down && down.pick && Math.abs(e.clientX - down.x) + Math.abs(e.clientY - down.y) < 5;
      down = null;
      if (click) this.pick(e.clientX, e.clientY);
    });
    this.canvas.addEventListener('pointercancel', () => { down = null; });
    return controls;
  }

  // OrbitControls turned, zoomed or panned three's camera: into this.camera (a pan moves
  // the target, which the follow camera then keeps as an offset from the robot)
  cameraMoved() {
    const cam = this.camera, t = this.controls.target, p = this.cam.position;
    const offset = [p.x - t.x, p.y - t.y, p.z - t.z], d = len(offset) || 1e-9;
    cam.distance = d;
    cam.elevation = deg(Math.asin(Math.max(-1, Math.min(1, -offset[2] / d))));
    cam.azimuth = deg(Math.atan2(-offset[1], -offset[0]));
    const moved = sub([t.x, t.y, t.z], cam.target);
    if (len(moved) > 0) { cam.pan = add(cam.pan, moved); cam.target = [t.x, t.y, t.z]; }
    this.dirty = true;
  }

  cameraMatrices() {
    const cam = this.camera, c = this.canvas;
    if (this.view.follow && this.poses) {
      const k = this.slotOf(this.view.selected);
      if (k >= 0) cam.target = add(this.bodyPose(k, this.anchor)[0], cam.pan);
    }
    const az = rad(cam.azimuth), el = rad(cam.elevation);
    const forward = [Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el)];
    const eye = sub(cam.target, scl(forward, cam.distance));
    const three = this.cam;
    three.fov = cam.fovy;
    three.aspect = c.width / c.height;
    three.near = Math.max(0.01, cam.distance * 0.01);
    three.far = Math.max(200, cam.distance * 50);
    three.updateProjectionMatrix();
    three.position.set(...eye);
    this.controls.target.set(...cam.target);
    three.lookAt(this.controls.target);
    three.updateMatrixWorld();
    return {eye, forward, pixelsPerRadian: c.height / 2 / Math.tan(rad(cam.fovy) / 2), far: three.far};
  }

  // the key light over the target (its shadow covers the robots shown), the headlight
  // from the eye, the fog's range
  placeLights(m) {
    const t = this.camera.target, key = this.keyLight, reach = this.shadowReach();
    key.target.position.set(...t);
    key.position.set(...sub(t, scl(this.keyDir, 2 * reach)));
    const s = key.shadow.camera;
    if (s.right !== reach) {
      Object.assign(s, {left: -reach, right: reach, top: reach, bottom: -reach, near: 0.1, far: 4 * reach});
      s.updateProjectionMatrix();
    }
    this.headLight.position.set(...m.eye);
    this.headLight.target.position.set(...t);
    const fogNear = Math.max(25, 6 * this.camera.distance);
    this.world.fog.near = fogNear;
    this.world.fog.far = Math.min(m.far * 0.9, fogNear * 3);
  }
  shadowReach() { // half the side of the square the key light's shadow covers
    const spread = this.view.spread ? Math.ceil(Math.sqrt(this.envIds.length)) * this.scene.spread.spacing / 2 : 0;
    return Math.max(4, spread + 2 * this.scene.robot_radius);
  }

  draw() {
    const t0 = performance.now();
    this.dirty = false;
    if (!this.scene) return;
    const m = this.cameraMatrices();
    this.matrices = m;
    this.placeLights(m);
    for (const h of this.hfields) h.update(this.cam.position, m.pixelsPerRadian, this.world.fog.far, this.software ? 8 : 4);
    this.placeBodies(m);
    const texts = this.placeMarkers();
    this.renderer.render(this.world, this.cam);
    this.placeLabels(texts);
    const now = performance.now();
    this.stats.draws += 1;
    this.stats.drawMs = now - t0;
    this.stats.drawCalls = this.renderer.info.render.calls;
    this.stats.triangles = this.renderer.info.render.triangles;
    if (this.poses && this.poses.frame !== this.shownFrame) {
      this.shownFrame = this.poses.frame;
      this.stats.newFrames += 1;
      this.frameTimes.push(now);
      while (this.frameTimes.length && now - this.frameTimes[0] > 2000) this.frameTimes.shift();
    }
    this.stats.fps = this.frameTimes.length > 1 ? (this.frameTimes.length - 1) * 1000 / (now - this.frameTimes[0]) : 0;
  }

  // ---- the robots: the poses of the envs shown into the pose texture, nearest first, and
  // per detail level one instanced draw of each merged geometry over the envs at that level

  placeBodies(m) {
    for (const parts of this.parts.values()) for (const part of parts) part.mesh.visible = false;
    if (!this.poses) return;
    const {order, levels} = this.envsByLevel(m);
    this.fillPoseTexture(order);
    for (const [level, [first, count]] of levels) {
      for (const part of this.bodyParts(level)) {
        // a part fixed to the world is the same in every env: once, unless spread apart
        const once = part.static && !this.view.spread;
        if (once && first > 0) continue;
        part.uniforms.uFirst.value = first;
        part.uniforms.uMarkScale.value = once ? 0 : 1;
        part.mesh.geometry.instanceCount = once ? 1 : count;
        part.mesh.visible = true;
      }
    }
  }

  // the envs shown as [detail level, slot] nearest first, and per level its [first row, rows]
  envsByLevel(m) {
    const order = [], levels = new Map();
    for (let k = 0; k < this.poses.n; k++) {
      const anchor = this.bodyPose(k, this.anchor)[0];
      const pixels = this.scene.robot_radius * m.pixelsPerRadian / Math.max(len(sub(anchor, m.eye)), 1e-3);
      order.push([this.detailLevel(pixels), k]);
    }
    order.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    order.forEach(([level], row) => {
      const run = levels.get(level);
      if (run) run[1] += 1; else levels.set(level, [row, 1]);
    });
    return {order, levels};
  }

  // a row per env (in `order`): per body its position and spread offset, with the env's
  // tint in w, then its orientation
  fillPoseTexture(order) {
    const p = this.poses, n = p.n, nb = p.nbody, f = p.floats, width = 2 * nb;
    let texture = this.posesTexture.value;
    if (!texture || texture.image.width !== width || texture.image.height !== n) {
      if (texture) texture.dispose();
      texture = new THREE.DataTexture(new Float32Array(width * n * 4), width, n, THREE.RGBAFormat, THREE.FloatType);
      this.posesTexture.value = texture;
    }
    const data = texture.image.data;
    order.forEach(([, k], row) => {
      const off = this.offsets[k] || [0, 0, 0], mark = n > 1 && p.ids[k] === this.view.selected ? 1 : 0;
      for (let b = 0; b < nb; b++) {
        const src = (k * nb + b) * POSE, dst = (row * width + 2 * b) * 4;
        data[dst] = f[src] + off[0]; data[dst + 1] = f[src + 1] + off[1]; data[dst + 2] = f[src + 2] + off[2]; data[dst + 3] = mark;
        data[dst + 4] = f[src + 3]; data[dst + 5] = f[src + 4]; data[dst + 6] = f[src + 5]; data[dst + 7] = f[src + 6];
      }
    });
    texture.needsUpdate = true;
  }

  // the detail level of a robot this many pixels across (its radius): on a GPU, fine above
  // 100 pixels and coarse below; on a software rasterizer, which pays for every triangle,
  // level L holds robots up to 1024 / 2^(L/2) pixels, each geom then as fine as its own
  // size at that bound needs (detailFor)
  detailLevel(pixels) {
    if (!this.software) return pixels > 100 ? 0 : 1;
    return Math.max(0, Math.min(15, Math.floor(2 * (10 - Math.log2(Math.max(pixels, 1))))));
  }

  // the moving geoms (and those fixed to the world) of one robot, merged into a geometry per
  // (fixed, transparent) at a detail level: made at first use, then kept
  bodyParts(level) {
    if (this.parts.has(level)) return this.parts.get(level);
    const groups = new Map();
    // at a software level: pixels per metre at the largest robot the level holds
    const perMeter = level === 0 ? Infinity : 2 ** (10 - level / 2) / this.scene.robot_radius;
    for (const item of this.geoms) {
      const g = item.geom, curved = ['sphere', 'ellipsoid', 'capsule', 'cylinder'].includes(g.type);
      let detail = FINE;
      if (curved && !this.software) detail = level === 0 ? FINE : COARSE;
      else if (curved) detail = detailFor(Math.max(...g.size.slice(0, g.type === 'ellipsoid' ? 3 : 1)) * perMeter);
      const piece = robotPiece(placed(geomGeometry(g, this.meshes, detail), g.pos, g.quat), item.color, item.body);
      const key = (item.static ? 's' : 'm') + (item.transparent ? 't' : 'o');
      if (!groups.has(key)) groups.set(key, {static: item.static, transparent: item.transparent, pieces: []});
      groups.get(key).pieces.push(piece);
    }
    const parts = [...groups.values()].map((g) => this.robotMesh(g));
    this.parts.set(level, parts);
    return parts;
  }

  robotMesh(group) {
    const geometry = new THREE.InstancedBufferGeometry().copy(mergeGeometries(group.pieces));
    const uniforms = {uPoses: this.posesTexture, uFirst: {value: 0}, uMarkScale: {value: 1}, uTint: {value: new THREE.Color(...TINT)}};
    const material = posed(new THREE.MeshLambertMaterial({vertexColors: true, transparent: group.transparent,
      depthWrite: !group.transparent}), uniforms);
    const mesh = new THREE.Mesh(geometry, material);
    mesh.frustumCulled = false; // its vertices are placed in the shader
    mesh.castShadow = mesh.receiveShadow = !this.software;
    mesh.customDepthMaterial = posed(new THREE.MeshDepthMaterial({depthPacking: THREE.RGBADepthPacking}), uniforms);
    this.world.add(mesh);
    return {mesh, uniforms, static: group.static, transparent: group.transparent};
  }

  // ---- markers: each shape one InstancedMesh (a matrix and an rgba per instance) -------

  placeMarkers() {
    const shapes = this.markShapes;
    for (const s of Object.values(shapes)) s.data.length = 0;
    const texts = [];
    this.envIds.forEach((env, k) => {
      const list = this.markers[env];
      if (Array.isArray(list)) for (const mk of list) this.addMarker(mk, this.offsets[k] || [0, 0, 0], texts);
    });
    for (const s of Object.values(shapes)) this.uploadMarkers(s);
    return texts;
  }

  addMarker(mk, off, texts) {
    const put = (shape, axes, origin, rgba) => this.markShapes[shape].data.push([axes, origin, rgba]); // axes: x, y, z scaled
    const connector = (shape, a, b, radius, rgba) => {
      const v = sub(b, a), l = len(v);
      if (!(l > 1e-5) || !(radius > 0)) return;
      const dir = scl(v, 1 / l), [x, y] = basis(dir);
      put(shape, [scl(x, radius), scl(y, radius), scl(dir, l)], a, rgba);
    };
    const arrow = (a, b, radius, rgba) => {
      const v = sub(b, a), l = len(v);
      if (!(l > 1e-5)) return;
      const head = Math.min(0.35 * l, 5 * radius), neck = add(a, scl(v, (l - head) / l));
      connector('cylinder', a, neck, radius, rgba);
      connector('cone', neck, b, 2.2 * radius, rgba);
    };
    if (!mk || !finite(mk.start, 3)) return;
    const start = add(mk.start, off), end = finite(mk.end, 3) ? add(mk.end, off) : null;
    const rgba = finite(mk.rgba, 4) ? mk.rgba : [1, 0.2, 0.2, 0.9];
    const size = typeof mk.size === 'number' && Number.isFinite(mk.size) ? mk.size : 0.025;
    const q = finite(mk.quat, 4) ? qnorm(mk.quat) : [1, 0, 0, 0];
    if (mk.kind === 'arrow' && end) arrow(start, end, size, rgba);
    else if (mk.kind === 'line' && end) connector('cylinder', start, end, Math.max(size, 0.002), rgba);
    else if (mk.kind === 'sphere') put('sphere', [[size, 0, 0], [0, size, 0], [0, 0, size]], start, rgba);
    else if (mk.kind === 'box') {
      const h = finite(mk.half_extents, 3) ? mk.half_extents : [size, size, size];
      put('box', [scl(qrot(q, [1, 0, 0]), h[0]), scl(qrot(q, [0, 1, 0]), h[1]), scl(qrot(q, [0, 0, 1]), h[2])], start, rgba);
    } else if (mk.kind === 'frame') {
      const width = Math.max(size / 25, 1e-3), axes = [[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.3, 1.0]];
      [[1, 0, 0], [0, 1, 0], [0, 0, 1]].forEach((axis, i) => arrow(start, add(start, scl(qrot(q, axis), size)), width, [...axes[i], rgba[3]]));
    } else if (mk.kind === 'text' && typeof mk.text === 'string' && mk.text) texts.push([start, mk.text, rgba]);
  }

  uploadMarkers(s) {
    const count = s.data.length;
    if (!s.mesh || s.mesh.instanceMatrix.count < count) { // room for twice as many
      if (s.mesh) { this.world.remove(s.mesh); s.mesh.dispose(); }
      const room = Math.max(64, 2 * count);
      s.mesh = new THREE.InstancedMesh(s.geometry, s.material, room);
      s.mesh.geometry = s.geometry.clone();
      s.mesh.geometry.setAttribute('rgba', new THREE.InstancedBufferAttribute(new Float32Array(4 * room), 4));
      s.mesh.frustumCulled = false;
      this.world.add(s.mesh);
    }
    const matrix = new THREE.Matrix4(), rgba = s.mesh.geometry.attributes.rgba;
    s.data.forEach(([axes, origin, color], i) => {
      matrix.makeBasis(new THREE.Vector3(...axes[0]), new THREE.Vector3(...axes[1]), new THREE.Vector3(...axes[2])).setPosition(...origin);
      s.mesh.setMatrixAt(i, matrix);
      rgba.array.set(color, 4 * i);
    });
    s.mesh.count = count;
    s.mesh.visible = count > 0;
    s.mesh.instanceMatrix.needsUpdate = true;
    rgba.needsUpdate = true;
  }

  placeLabels(texts) {
    if (!this.labels) return;
    const c = this.canvas, w = c.clientWidth, h = c.clientHeight, at = new THREE.Vector3();
    let used = 0;
    for (const [pos, text, rgba] of texts) {
      at.set(...pos).project(this.cam);
      if (at.z < -1 || at.z > 1) continue; // behind the camera, or past its far plane
      const x = (at.x * 0.5 + 0.5) * w, y = (0.5 - at.y * 0.5) * h;
      if (x < 0 || y < 0 || x > w || y > h) continue;
      let div = this.labelPool[used];
      if (!div) { div = document.createElement('div'); div.className = 'label3d'; this.labels.appendChild(div); this.labelPool.push(div); }
      if (div.textContent !== text) div.textContent = text;
      div.style.transform = 'translate(' + Math.round(x) + 'px,' + Math.round(y) + 'px)';
      div.style.color = 'rgb(' + rgba.slice(0, 3).map((v) => Math.round(255 * Math.min(1, Math.max(0, v)))).join(',') + ')';
      div.hidden = false;
      used += 1;
    }
    this.hideLabels(used);
  }
  hideLabels(from) { for (let i = from; i < this.labelPool.length; i++) this.labelPool[i].hidden = true; }

  // ---- picking: the shown env whose body the ray under (x, y) meets first (each body a
  // sphere that holds its geoms), or null

  pickAt(clientX, clientY) {
    if (!this.poses || !this.matrices) return null;
    const rect = this.canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2(2 * (clientX - rect.left) / rect.width - 1, 1 - 2 * (clientY - rect.top) / rect.height);
    this.raycaster.setFromCamera(ndc, this.cam);
    const ray = this.raycaster.ray, sphere = new THREE.Sphere(), hit = new THREE.Vector3();
    const bodies = this.scene.bodies.filter((b) => b.radius > 0);
    let best = null;
    for (let k = 0; k < this.poses.n; k++) {
      for (const body of bodies) {
        sphere.set(sphere.center.set(...this.bodyPose(k, body.id)[0]), body.radius);
        if (!ray.intersectSphere(sphere, hit)) continue;
        const t = hit.distanceTo(ray.origin); // where the ray enters the sphere
        if (best === null || t < best.t) best = {t, env: this.poses.ids[k]};
      }
    }
    return best ? best.env : null;
  }
  pick(clientX, clientY) {
    const env = this.pickAt(clientX, clientY);
    if (env !== null && this.options.onPick) this.options.onPick(env);
  }

  // where a shown env's root body is on the page (for scripts and tests), or null when
  // it is not in the picture
  screenPosition(env) {
    const k = this.slotOf(env);
    if (k < 0 || !this.matrices) return null;
    const at = new THREE.Vector3(...this.bodyPose(k, this.anchor)[0]).project(this.cam);
    if (Math.abs(at.x) > 1 || Math.abs(at.y) > 1 || Math.abs(at.z) > 1) return null; // not in view
    const rect = this.canvas.getBoundingClientRect();
    return [rect.left + (at.x * 0.5 + 0.5) * rect.width, rect.top + (0.5 - at.y * 0.5) * rect.height];
  }
}
