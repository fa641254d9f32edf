/* robolearn's 3D view: a small WebGL2 renderer of our own, no outside resources.

   The scene comes once (GET /scene3d.json: geoms, meshes, height fields, which bodies are
   fixed to the world), then only body poses (GET /poses.bin: per env, per body, position
   and w x y z orientation, float32), streamed (GET /poses.stream: each new frame pushed as
   the simulation takes it). A robot's geoms are merged into one mesh whose vertices name
   their body, the poses are a texture, and one instanced draw covers every env shown at a
   detail level: 64 robots cost about as many draw calls as one. Markers (GET /markers.json) are drawn as instanced unit
   shapes, their text as HTML labels.

   Usage: const view = new Scene3D(canvas, labels, {onPick: (env) => ...});
          await view.load(); view.setView({selected, shown, spread, follow}); view.start(); */
'use strict';
(function () {
  const POSE = 7; // floats per body: x y z, w x y z
  const HEADER = 32; // bytes before the env ids in /poses.bin
  const MAGIC = 0x31504c52; // "RLP1", little-endian
  const CHUNK = 64; // height field cells per chunk side
  const MAX_MARKER_ENVS = 64;

  // ---- vectors and column-major 4x4 matrices ----------------------------------------
  const add = (a, b) => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
  const sub = (a, b) => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
  const scl = (a, s) => [a[0] * s, a[1] * s, a[2] * s];
  const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
  const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
  const len = (a) => Math.sqrt(dot(a, a));
  const unit = (a) => { const l = len(a) || 1; return [a[0] / l, a[1] / l, a[2] / l]; };
  const rad = (deg) => deg * Math.PI / 180;

  function perspective(fovy, aspect, near, far) {
    const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
    return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
  }
  function lookAt(eye, target, up) {
    const z = unit(sub(eye, target)), x = unit(cross(up, z)), y = cross(z, x);
    return new Float32Array([x[0], y[0], z[0], 0, x[1], y[1], z[1], 0, x[2], y[2], z[2], 0,
      -dot(x, eye), -dot(y, eye), -dot(z, eye), 1]);
  }
  function mul(a, b) {
    const o = new Float32Array(16);
    for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
      o[c * 4 + r] = s;
    }
    return o;
  }
  function invert(m) {
    const inv = new Float32Array(16);
    inv[0] = m[5] * m[10] * m[15] - m[5] * m[11] * m[14] - m[9] * m[6] * m[15] + m[9] * m[7] * m[14] + m[13] * m[6] * m[11] - m[13] * m[7] * m[10];
    inv[4] = -m[4] * m[10] * m[15] + m[4] * m[11] * m[14] + m[8] * m[6] * m[15] - m[8] * m[7] * m[14] - m[12] * m[6] * m[11] + m[12] * m[7] * m[10];
    inv[8] = m[4] * m[9] * m[15] - m[4] * m[11] * m[13] - m[8] * m[5] * m[15] + m[8] * m[7] * m[13] + m[12] * m[5] * m[11] - m[12] * m[7] * m[9];
    inv[12] = -m[4] * m[9] * m[14] + m[4] * m[10] * m[13] + m[8] * m[5] * m[14] - m[8] * m[6] * m[13] - m[12] * m[5] * m[10] + m[12] * m[6] * m[9];
    inv[1] = -m[1] * m[10] * m[15] + m[1] * m[11] * m[14] + m[9] * m[2] * m[15] - m[9] * m[3] * m[14] - m[13] * m[2] * m[11] + m[13] * m[3] * m[10];
    inv[5] = m[0] * m[10] * m[15] - m[0] * m[11] * m[14] - m[8] * m[2] * m[15] + m[8] * m[3] * m[14] + m[12] * m[2] * m[11] - m[12] * m[3] * m[10];
    inv[9] = -m[0] * m[9] * m[15] + m[0] * m[11] * m[13] + m[8] * m[1] * m[15] - m[8] * m[3] * m[13] - m[12] * m[1] * m[11] + m[12] * m[3] * m[9];
    inv[13] = m[0] * m[9] * m[14] - m[0] * m[10] * m[13] - m[8] * m[1] * m[14] + m[8] * m[2] * m[13] + m[12] * m[1] * m[10] - m[12] * m[2] * m[9];
    inv[2] = m[1] * m[6] * m[15] - m[1] * m[7] * m[14] - m[5] * m[2] * m[15] + m[5] * m[3] * m[14] + m[13] * m[2] * m[7] - m[13] * m[3] * m[6];
    inv[6] = -m[0] * m[6] * m[15] + m[0] * m[7] * m[14] + m[4] * m[2] * m[15] - m[4] * m[3] * m[14] - m[12] * m[2] * m[7] + m[12] * m[3] * m[6];
    inv[10] = m[0] * m[5] * m[15] - m[0] * m[7] * m[13] - m[4] * m[1] * m[15] + m[4] * m[3] * m[13] + m[12] * m[1] * m[7] - m[12] * m[3] * m[5];
    inv[14] = -m[0] * m[5] * m[14] + m[0] * m[6] * m[13] + m[4] * m[1] * m[14] - m[4] * m[2] * m[13] - m[12] * m[1] * m[6] + m[12] * m[2] * m[5];
    inv[3] = -m[1] * m[6] * m[11] + m[1] * m[7] * m[10] + m[5] * m[2] * m[11] - m[5] * m[3] * m[10] - m[9] * m[2] * m[7] + m[9] * m[3] * m[6];
    inv[7] = m[0] * m[6] * m[11] - m[0] * m[7] * m[10] - m[4] * m[2] * m[11] + m[4] * m[3] * m[10] + m[8] * m[2] * m[7] - m[8] * m[3] * m[6];
    inv[11] = -m[0] * m[5] * m[11] + m[0] * m[7] * m[9] + m[4] * m[1] * m[11] - m[4] * m[3] * m[9] - m[8] * m[1] * m[7] + m[8] * m[3] * m[5];
    inv[15] = m[0] * m[5] * m[10] - m[0] * m[6] * m[9] - m[4] * m[1] * m[10] + m[4] * m[2] * m[9] + m[8] * m[1] * m[6] - m[8] * m[2] * m[5];
    const det = m[0] * inv[0] + m[1] * inv[4] + m[2] * inv[8] + m[3] * inv[12];
    for (let i = 0; i < 16; i++) inv[i] /= det || 1;
    return inv;
  }
  function transform(m, p) { // (x, y, z, w) of m * (p, 1)
    return [m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12], m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13],
      m[2] * p[0] + m[6] * p[1] + m[10] * p[2] + m[14], m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15]];
  }
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

  // ---- shapes, in their own frame: positions, normals, triangle indices (CCW outside) --
  function Shape() { this.pos = []; this.nrm = []; this.idx = []; }
  Shape.prototype.vertex = function (p, n) { this.pos.push(p[0], p[1], p[2]); this.nrm.push(n[0], n[1], n[2]); return this.pos.length / 3 - 1; };

  // rings of a surface of revolution about z: each ring [theta, z offset]
  function revolve(rings, seg, radii) {
    const s = new Shape();
    for (const [theta, dz] of rings) {
      for (let j = 0; j <= seg; j++) {
        const phi = 2 * Math.PI * j / seg;
        const n = [Math.sin(theta) * Math.cos(phi), Math.sin(theta) * Math.sin(phi), Math.cos(theta)];
        s.vertex([radii[0] * n[0], radii[1] * n[1], radii[2] * n[2] + dz], unit([n[0] / radii[0], n[1] / radii[1], n[2] / radii[2]]));
      }
    }
    for (let i = 0; i + 1 < rings.length; i++) for (let j = 0; j < seg; j++) {
      const a = i * (seg + 1) + j, b = a + seg + 1;
      s.idx.push(a, b, a + 1, a + 1, b, b + 1);
    }
    return s;
  }
  function ellipsoid(r, detail) {
    const rings = [];
    for (let i = 0; i <= detail.rings; i++) rings.push([Math.PI * i / detail.rings, 0]);
    return revolve(rings, detail.seg, r);
  }
  function capsule(r, h, detail) {
    const half = Math.max(2, detail.rings >> 1), rings = [];
    for (let i = 0; i <= half; i++) rings.push([Math.PI / 2 * i / half, h]);
    for (let i = 0; i <= half; i++) rings.push([Math.PI / 2 + Math.PI / 2 * i / half, -h]);
    return revolve(rings, detail.seg, [r, r, r]);
  }
  function cylinder(r, h, seg, cone) { // cone: base at z = 0, tip at z = h (r at the base)
    const s = new Shape(), z0 = cone ? 0 : -h, z1 = h, r1 = cone ? 0 : r;
    const slope = cone ? r / h : 0;
    for (let j = 0; j <= seg; j++) {
      const phi = 2 * Math.PI * j / seg, c = Math.cos(phi), si = Math.sin(phi);
      const n = unit([c, si, slope]);
      s.vertex([r * c, r * si, z0], n);
      s.vertex([r1 * c, r1 * si, z1], n);
    }
    for (let j = 0; j < seg; j++) {
      const b = 2 * j, t = b + 1;
      s.idx.push(b, b + 2, t, t, b + 2, t + 2);
    }
    const caps = cone ? [[z0, -1]] : [[z0, -1], [z1, 1]];
    for (const [z, sign] of caps) {
      const center = s.vertex([0, 0, z], [0, 0, sign]), first = s.pos.length / 3;
      for (let j = 0; j <= seg; j++) {
        const phi = 2 * Math.PI * j / seg;
        s.vertex([r * Math.cos(phi), r * Math.sin(phi), z], [0, 0, sign]);
      }
      for (let j = 0; j < seg; j++) {
        if (sign > 0) s.idx.push(center, first + j, first + j + 1);
        else s.idx.push(center, first + j + 1, first + j);
      }
    }
    return s;
  }
  function box(h) {
    const s = new Shape();
    const faces = [ // normal, u, v with u x v = normal
      [[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[-1, 0, 0], [0, 0, 1], [0, 1, 0]],
      [[0, 1, 0], [0, 0, 1], [1, 0, 0]], [[0, -1, 0], [1, 0, 0], [0, 0, 1]],
      [[0, 0, 1], [1, 0, 0], [0, 1, 0]], [[0, 0, -1], [0, 1, 0], [1, 0, 0]]];
    for (const [n, u, v] of faces) {
      const first = s.pos.length / 3;
      for (const [a, b] of [[-1, -1], [1, -1], [1, 1], [-1, 1]]) {
        const p = [0, 1, 2].map((k) => (n[k] + a * u[k] + b * v[k]) * h[k]);
        s.vertex(p, n);
      }
      s.idx.push(first, first + 1, first + 2, first, first + 2, first + 3);
    }
    return s;
  }
  function plane(hx, hy) {
    const s = new Shape();
    for (const [a, b] of [[-1, -1], [1, -1], [1, 1], [-1, 1]]) s.vertex([a * hx, b * hy, 0], [0, 0, 1]);
    s.idx.push(0, 1, 2, 0, 2, 3);
    return s;
  }
  function modelMesh(mesh) { // every face corner its own vertex, with MuJoCo's normal for it
    const vert = decode64(mesh.vertices, Float32Array), face = decode64(mesh.faces, Uint32Array);
    const nrm = decode64(mesh.normals, Float32Array), fn = decode64(mesh.face_normals, Uint32Array);
    const s = new Shape();
    for (let k = 0; k < face.length; k++) {
      const v = face[k] * 3, n = fn[k] * 3;
      s.idx.push(s.vertex([vert[v], vert[v + 1], vert[v + 2]], [nrm[n], nrm[n + 1], nrm[n + 2]]));
    }
    return s;
  }
  function placed(s, pos, quat) { // the shape moved into its body's frame
    const out = new Shape();
    for (let i = 0; i < s.pos.length; i += 3) {
      out.vertex(add(pos, qrot(quat, s.pos.slice(i, i + 3))), qrot(quat, s.nrm.slice(i, i + 3)));
    }
    out.idx = s.idx;
    return out;
  }
  const FINE = {seg: 20, rings: 10}, MEDIUM = {seg: 12, rings: 6}, COARSE = {seg: 8, rings: 4}, TINY = {seg: 6, rings: 3};
  // the coarsest tessellation whose outline stays within half a pixel of the true one, for a
  // curved geom of this radius in pixels (a chord over an angle a misses the circle of radius
  // r by r (1 - cos(a / 2)))
  function detailFor(radiusPixels) {
    for (const d of [TINY, COARSE, MEDIUM]) if (radiusPixels * (1 - Math.cos(Math.PI / d.seg)) <= 0.5) return d;
    return FINE;
  }
  function geomShape(g, meshes, detail) {
    const z = g.size;
    switch (g.type) {
      case 'sphere': return ellipsoid([z[0], z[0], z[0]], detail);
      case 'ellipsoid': return ellipsoid([z[0], z[1], z[2]], detail);
      case 'capsule': return capsule(z[0], z[1], detail);
      case 'cylinder': return cylinder(z[0], z[1], detail.seg, false);
      case 'box': return box(z);
      case 'mesh': return meshes.has(g.mesh) ? modelMesh(meshes.get(g.mesh)) : null;
      case 'plane': return plane(z[0] > 0 ? z[0] : 500, z[1] > 0 ? z[1] : 500);
      default: return null;
    }
  }

  // ---- shaders ------------------------------------------------------------------------
  // a vector turned by a unit quaternion (w, x, y, z), as qrot above: both vertex shaders
  const QROT = 'vec3 qrot(vec4 q, vec3 v) { vec3 t = 2.0 * cross(q.yzw, v); return v + q.x * t + cross(q.yzw, t); }';
  const SHADE = `
uniform vec3 uEye, uKeyDir, uKey, uHead, uAmbient, uFog;
uniform vec2 uFogRange;
vec3 shade(vec3 base, vec3 n, vec3 world) {
  n = normalize(n);
  if (!gl_FrontFacing) n = -n;
  vec3 v = normalize(uEye - world), l = normalize(-uKeyDir);
  float kd = max(dot(n, l), 0.0), hd = max(dot(n, v), 0.0);
  float sp = pow(max(dot(n, normalize(l + v)), 0.0), 48.0) * 0.2;
  vec3 c = base * (uAmbient + uKey * kd + uHead * hd) + vec3(sp);
  return mix(c, uFog, smoothstep(uFogRange.x, uFogRange.y, length(uEye - world)));
}`;
  const GEOM_VS = `#version 300 es
layout(location=0) in vec3 aPos;
layout(location=1) in vec3 aNrm;
layout(location=2) in vec3 iPos;
layout(location=3) in vec4 iQuat;
layout(location=4) in float iMark;
uniform mat4 uViewProj;
out vec3 vNrm, vWorld;
out float vMark;
${QROT}
void main() {
  vWorld = iPos + qrot(iQuat, aPos);
  vNrm = qrot(iQuat, aNrm);
  vMark = iMark;
  gl_Position = uViewProj * vec4(vWorld, 1.0);
}`;
  const GEOM_FS = `#version 300 es
precision highp float;
in vec3 vNrm, vWorld;
in float vMark;
uniform vec4 uColor;
uniform vec3 uTint;
uniform float uMarkScale, uGround;
out vec4 outColor;
${SHADE}
void main() {
  vec3 base = uColor.rgb;
  if (uGround > 0.5) {
    vec2 p = vWorld.xy, w = max(fwidth(p), vec2(1e-5));
    float checker = mod(floor(p.x) + floor(p.y), 2.0);
    base *= mix(0.85, 1.15, checker);
    vec2 g = abs(fract(p - 0.5) - 0.5) / w;
    float line = (1.0 - min(min(g.x, g.y), 1.0)) * clamp(1.0 - 2.0 * max(w.x, w.y), 0.0, 1.0);
    base = mix(base, base * 1.8 + 0.08, 0.7 * line);
  }
  base = mix(base, uTint, 0.4 * vMark * uMarkScale);
  outColor = vec4(shade(base, vNrm, vWorld), uColor.a);
}`;
  // a robot's geoms merged into one mesh, each vertex naming its body: the poses of the
  // envs shown are a texture (a row per env: per body, position with the env's tint in w,
  // then orientation), and one instanced draw covers every env at one detail level
  const BODY_VS = `#version 300 es
layout(location=0) in vec3 aPos;
layout(location=1) in vec3 aNrm;
layout(location=2) in vec4 aColor;
layout(location=3) in float aBody;
uniform mat4 uViewProj;
uniform highp sampler2D uPoses;
uniform int uFirst;
out vec3 vNrm, vWorld;
out vec4 vColor;
out float vMark;
${QROT}
void main() {
  int b = int(aBody + 0.5), row = uFirst + gl_InstanceID;
  vec4 pos = texelFetch(uPoses, ivec2(2 * b, row), 0), quat = texelFetch(uPoses, ivec2(2 * b + 1, row), 0);
  vWorld = pos.xyz + qrot(quat, aPos);
  vNrm = qrot(quat, aNrm);
  vColor = aColor;
  vMark = pos.w;
  gl_Position = uViewProj * vec4(vWorld, 1.0);
}`;
  const BODY_FS = `#version 300 es
precision highp float;
in vec3 vNrm, vWorld;
in vec4 vColor;
in float vMark;
uniform vec3 uTint;
uniform float uMarkScale;
out vec4 outColor;
${SHADE}
void main() {
  vec3 base = mix(vColor.rgb, uTint, 0.4 * vMark * uMarkScale);
  outColor = vec4(shade(base, vNrm, vWorld), vColor.a);
}`;
  const MARK_VS = `#version 300 es
layout(location=0) in vec3 aPos;
layout(location=1) in vec3 aNrm;
layout(location=5) in vec4 iM0;
layout(location=6) in vec4 iM1;
layout(location=7) in vec4 iM2;
layout(location=8) in vec4 iM3;
layout(location=9) in vec4 iColor;
uniform mat4 uViewProj;
out vec3 vNrm, vWorld;
out vec4 vColor;
void main() {
  mat4 m = mat4(iM0, iM1, iM2, iM3);
  vWorld = (m * vec4(aPos, 1.0)).xyz;
  vNrm = mat3(m) * aNrm;
  vColor = iColor;
  gl_Position = uViewProj * vec4(vWorld, 1.0);
}`;
  const MARK_FS = `#version 300 es
precision highp float;
in vec3 vNrm, vWorld;
in vec4 vColor;
out vec4 outColor;
${SHADE}
void main() { outColor = vec4(shade(vColor.rgb, vNrm, vWorld), vColor.a); }`;

  function program(gl, vs, fs) {
    const p = gl.createProgram();
    for (const [kind, text] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
      const s = gl.createShader(kind);
      gl.shaderSource(s, text);
      gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error('shader: ' + gl.getShaderInfoLog(s));
      gl.attachShader(p, s);
    }
    gl.linkProgram(p);
    if (!gl.getProgramParameter(p, gl.LINK_STATUS)) throw new Error('program: ' + gl.getProgramInfoLog(p));
    const uniforms = {};
    const count = gl.getProgramParameter(p, gl.ACTIVE_UNIFORMS);
    for (let i = 0; i < count; i++) {
      const name = gl.getActiveUniform(p, i).name;
      uniforms[name] = gl.getUniformLocation(p, name);
    }
    return {program: p, u: uniforms};
  }

  // a shape's vertices and indices on the GPU, in a vertex array of its own
  function upload(gl, s) {
    const vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    const n = s.pos.length / 3, data = new Float32Array(n * 6);
    for (let i = 0; i < n; i++) {
      data.set(s.pos.slice(3 * i, 3 * i + 3), 6 * i);
      data.set(s.nrm.slice(3 * i, 3 * i + 3), 6 * i + 3);
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 24, 0);
    gl.enableVertexAttribArray(1);
    gl.vertexAttribPointer(1, 3, gl.FLOAT, false, 24, 12);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, gl.createBuffer());
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, new Uint32Array(s.idx), gl.STATIC_DRAW);
    return {vao, count: s.idx.length};
  }

  // shapes [shape, rgba, body] merged into one mesh: position, normal, colour and body per
  // vertex (BODY_VS), in a vertex array of its own
  function uploadMerged(gl, shapes) {
    let vertices = 0, indices = 0;
    for (const [shape] of shapes) { vertices += shape.pos.length / 3; indices += shape.idx.length; }
    const data = new Float32Array(vertices * 11), idx = new Uint32Array(indices);
    let v = 0, i = 0;
    for (const [shape, rgba, body] of shapes) {
      for (const k of shape.idx) idx[i++] = v + k;
      for (let k = 0; k < shape.pos.length / 3; k++, v++) {
        data.set([shape.pos[3 * k], shape.pos[3 * k + 1], shape.pos[3 * k + 2], shape.nrm[3 * k], shape.nrm[3 * k + 1], shape.nrm[3 * k + 2],
          rgba[0], rgba[1], rgba[2], rgba[3], body], 11 * v);
      }
    }
    const vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
    gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
    [[0, 3, 0], [1, 3, 12], [2, 4, 24], [3, 1, 40]].forEach(([loc, size, offset]) => {
      gl.enableVertexAttribArray(loc);
      gl.vertexAttribPointer(loc, size, gl.FLOAT, false, 44, offset);
    });
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, gl.createBuffer());
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
    gl.bindVertexArray(null);
    return {vao, count: indices};
  }

  // ---- a height field: one vertex per sample, chunks drawn at a stride chosen by distance
  class HeightField {
    constructor(gl, hf, geom, pose) {
      this.gl = gl;
      const nrow = hf.nrow, ncol = hf.ncol, [sx, sy, sz] = hf.size;
      const h = decode64(hf.data, Float32Array);
      const pos = add(pose.pos, qrot(pose.quat, geom.pos)), quat = qmul(pose.quat, geom.quat);
      this.nrow = nrow; this.ncol = ncol;
      const dx = 2 * sx / (ncol - 1), dy = 2 * sy / (nrow - 1);
      const data = new Float32Array(nrow * ncol * 6);
      for (let r = 0; r < nrow; r++) for (let c = 0; c < ncol; c++) {
        const k = r * ncol + c;
        const z = h[k] * sz;
        const zx = (h[r * ncol + Math.min(c + 1, ncol - 1)] - h[r * ncol + Math.max(c - 1, 0)]) * sz / ((Math.min(c + 1, ncol - 1) - Math.max(c - 1, 0)) * dx);
        const zy = (h[Math.min(r + 1, nrow - 1) * ncol + c] - h[Math.max(r - 1, 0) * ncol + c]) * sz / ((Math.min(r + 1, nrow - 1) - Math.max(r - 1, 0)) * dy);
        const p = add(pos, qrot(quat, [-sx + c * dx, -sy + r * dy, z]));
        const n = qrot(quat, unit([-zx, -zy, 1]));
        data[6 * k] = p[0]; data[6 * k + 1] = p[1]; data[6 * k + 2] = p[2];
        data[6 * k + 3] = n[0]; data[6 * k + 4] = n[1]; data[6 * k + 5] = n[2];
      }
      this.vao = gl.createVertexArray();
      gl.bindVertexArray(this.vao);
      gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
      gl.bufferData(gl.ARRAY_BUFFER, data, gl.STATIC_DRAW);
      gl.enableVertexAttribArray(0);
      gl.vertexAttribPointer(0, 3, gl.FLOAT, false, 24, 0);
      gl.enableVertexAttribArray(1);
      gl.vertexAttribPointer(1, 3, gl.FLOAT, false, 24, 12);
      this.chunks = [];
      for (let r0 = 0; r0 < nrow - 1; r0 += CHUNK) for (let c0 = 0; c0 < ncol - 1; c0 += CHUNK) {
        const r1 = Math.min(r0 + CHUNK, nrow - 1), c1 = Math.min(c0 + CHUNK, ncol - 1);
        let lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
        for (const r of [r0, r1]) for (const c of [c0, c1]) for (const zz of [0, sz]) {
          const p = add(pos, qrot(quat, [-sx + c * dx, -sy + r * dy, zz]));
          lo = lo.map((v, i) => Math.min(v, p[i])); hi = hi.map((v, i) => Math.max(v, p[i]));
        }
        this.chunks.push({r0, r1, c0, c1, center: scl(add(lo, hi), 0.5), radius: len(sub(hi, lo)) / 2, lods: {}});
      }
      this.cell = Math.min(dx, dy);
      this.triangles = 0;
    }
    lod(chunk, stride) {
      if (chunk.lods[stride]) return chunk.lods[stride];
      const samples = (a, b) => { const out = []; for (let i = a; i < b; i += stride) out.push(i); out.push(b); return out; };
      const rows = samples(chunk.r0, chunk.r1), cols = samples(chunk.c0, chunk.c1), idx = [];
      for (let i = 0; i + 1 < rows.length; i++) for (let j = 0; j + 1 < cols.length; j++) {
        const a = rows[i] * this.ncol + cols[j], b = rows[i] * this.ncol + cols[j + 1];
        const d = rows[i + 1] * this.ncol + cols[j], e = rows[i + 1] * this.ncol + cols[j + 1];
        idx.push(a, b, e, a, e, d); // split along (r, c)-(r+1, c+1), as MuJoCo does
      }
      const gl = this.gl, buffer = gl.createBuffer();
      gl.bindVertexArray(this.vao);
      gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, buffer);
      gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, new Uint32Array(idx), gl.STATIC_DRAW);
      chunk.lods[stride] = {buffer, count: idx.length};
      return chunk.lods[stride];
    }
    draw(eye, planes, pixelsPerRadian, fogFar, minPixels) {
      const gl = this.gl;
      gl.bindVertexArray(this.vao);
      this.triangles = 0;
      this.calls = 0;
      for (const chunk of this.chunks) {
        const d = Math.max(len(sub(chunk.center, eye)) - chunk.radius, 0.01);
        if (d > fogFar || !inFrustum(planes, chunk.center, chunk.radius)) continue;
        // a cell at least minPixels across: stride 1, 2, 4... up to the chunk
        let stride = 1;
        while (stride < CHUNK && this.cell * stride * pixelsPerRadian / d < minPixels) stride *= 2;
        const lod = this.lod(chunk, stride);
        gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, lod.buffer);
        gl.drawElements(gl.TRIANGLES, lod.count, gl.UNSIGNED_INT, 0);
        this.triangles += lod.count / 3;
        this.calls += 1;
      }
    }
  }
  function qmul(a, b) {
    return [a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3], a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
      a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1], a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]];
  }
  function frustumPlanes(m) { // (a, b, c, d) with a x + b y + c z + d >= 0 inside
    const row = (i) => [m[i], m[4 + i], m[8 + i], m[12 + i]];
    const r0 = row(0), r1 = row(1), r2 = row(2), r3 = row(3), out = [];
    for (const [s, r] of [[1, r0], [-1, r0], [1, r1], [-1, r1], [1, r2], [-1, r2]]) {
      const p = r3.map((v, i) => v + s * r[i]), l = Math.hypot(p[0], p[1], p[2]) || 1;
      out.push(p.map((v) => v / l));
    }
    return out;
  }
  function inFrustum(planes, c, radius) {
    for (const p of planes) if (p[0] * c[0] + p[1] * c[1] + p[2] * c[2] + p[3] < -radius) return false;
    return true;
  }

  // ---- markers: unit shapes, instanced (4 x 4 matrix and colour per instance) -------
  const AXES = [[0.9, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.3, 1.0]];
  function basis(dir) { // two unit vectors perpendicular to dir and to each other
    const a = Math.abs(dir[2]) < 0.9 ? [0, 0, 1] : [1, 0, 0];
    const x = unit(cross(a, dir));
    return [x, cross(dir, x)];
  }
  function concat(a, b) { const out = new Uint8Array(a.length + b.length); out.set(a); out.set(b, a.length); return out; }
  function finite(v, n) { return Array.isArray(v) && v.length === n && v.every((x) => typeof x === 'number' && Number.isFinite(x)); }

  class Scene3D {
    constructor(canvas, labels, options) {
      this.canvas = canvas;
      this.labels = labels;
      this.options = options || {};
      const software = Scene3D.softwareRenderer();
      const gl = canvas.getContext('webgl2', {antialias: !software, alpha: false, powerPreference: 'high-performance'});
      if (!gl) throw new Error('WebGL2 is not available');
      this.gl = gl;
      this.software = software;
      // a software rasterizer (SwiftShader, llvmpipe) pays per pixel: draw 3/4 size, scaled up
      this.maxPixelRatio = software ? 0.75 : 2;
      this.geomProgram = program(gl, GEOM_VS, GEOM_FS);
      this.markProgram = program(gl, MARK_VS, MARK_FS);
      // markers: of the 'watched' (selected) env, of every env 'shown', or 'none'
      this.view = {selected: 0, shown: 1, spread: false, follow: true, markers: 'watched'};
      this.envIds = [0];
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
      this.bodyProgram = program(gl, BODY_VS, BODY_FS);
      this.poseTexture = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, this.poseTexture);
      for (const [k, v] of [[gl.TEXTURE_MIN_FILTER, gl.NEAREST], [gl.TEXTURE_MAG_FILTER, gl.NEAREST], [gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE], [gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE]]) gl.texParameteri(gl.TEXTURE_2D, k, v);
      this.parts = new Map(); // detail level -> the merged meshes drawn at it (bodyParts)
      this.labelPool = [];
      this.pointer();
      // a hidden tab draws nothing (no animation frames): no poses streamed to it meanwhile
      document.addEventListener('visibilitychange', () => { if (document.hidden) this.closeStream(); });
      canvas.addEventListener('webglcontextlost', (e) => { e.preventDefault(); this.fail('the WebGL context was lost; reload the page'); });
    }

    static supported() {
      try { return !!document.createElement('canvas').getContext('webgl2'); } catch (e) { return false; }
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
      const gl = this.gl;
      this.scene = scene;
      this.nbody = scene.nbody;
      this.numEnvs = scene.num_envs;
      this.anchor = scene.anchor_body;
      const cam = scene.camera;
      Object.assign(this.camera, {azimuth: cam.azimuth, elevation: cam.elevation, distance: cam.distance, fovy: cam.fovy});
      this.camera.target = scene.center.slice();
      const light = scene.light, key = light.key;
      this.light = {ambient: light.ambient, head: light.headlight.map((v) => 0.6 * v),
        keyDir: key ? unit(key.dir) : unit([0.3, 0.4, -1]), key: key ? key.diffuse.map((v) => 0.6 * v) : [0.5, 0.5, 0.5]};
      const meshes = new Map(scene.meshes.map((m) => [m.id, m]));
      const bodies = scene.bodies;
      this.geoms = []; // drawn per env, merged into one mesh per detail level (bodyParts)
      this.ground = []; // planes and height fields: drawn once
      this.hfields = [];
      for (const g of scene.geoms) {
        const color = g.texture_rgb ? [g.rgba[0] * g.texture_rgb[0], g.rgba[1] * g.texture_rgb[1], g.rgba[2] * g.texture_rgb[2], g.rgba[3]] : g.rgba;
        if (g.type === 'hfield') {
          const hf = scene.hfields.find((h) => h.id === g.hfield);
          const body = bodies[g.body];
          if (hf) this.hfields.push({field: new HeightField(gl, hf, g, {pos: body.pos || [0, 0, 0], quat: body.quat || [1, 0, 0, 0]}), color});
          continue;
        }
        const fine = geomShape(g, meshes, FINE);
        if (!fine) continue;
        const item = {geom: g, color, body: g.body, static: g.static, transparent: g.rgba[3] < 0.999};
        if (g.type === 'plane') {
          const body = bodies[g.body];
          item.mesh = upload(gl, placed(fine, g.pos, g.quat));
          item.pose = {pos: body.pos || [0, 0, 0], quat: body.quat || [1, 0, 0, 0]};
          this.ground.push(item);
          continue;
        }
        this.geoms.push(item);
      }
      this.meshes = meshes;
      this.parts = new Map();
      // marker shapes: a unit cylinder (z from 0 to 1), cone, sphere and cube
      const unitCyl = cylinder(1, 0.5, 16, false);
      this.markShapes = {
        cylinder: this.markerVao(placed(unitCyl, [0, 0, 0.5], [1, 0, 0, 0])),
        cone: this.markerVao(cylinder(1, 1, 16, true)),
        sphere: this.markerVao(ellipsoid([1, 1, 1], {seg: 12, rings: 6})),
        box: this.markerVao(box([1, 1, 1])),
      };
      this.setView(this.view);
    }

    markerVao(shape) {
      const gl = this.gl, mesh = upload(gl, shape), buffer = gl.createBuffer();
      gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
      for (let i = 0; i < 5; i++) {
        gl.enableVertexAttribArray(5 + i);
        gl.vertexAttribPointer(5 + i, 4, gl.FLOAT, false, 80, 16 * i);
        gl.vertexAttribDivisor(5 + i, 1);
      }
      return {mesh, buffer, data: [], count: 0};
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
          const reader = r.body.getReader();
          let pending = new Uint8Array(0);
          for (;;) {
            const {value, done} = await reader.read();
            if (done) break;
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
      const w = Math.max(1, Math.round(c.clientWidth * ratio)), h = Math.max(1, Math.round(c.clientHeight * ratio));
      if (c.width === w && c.height === h) return false;
      c.width = w; c.height = h;
      return true;
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
      const near = Math.max(0.01, cam.distance * 0.01), far = Math.max(200, cam.distance * 50);
      const proj = perspective(rad(cam.fovy), c.width / c.height, near, far);
      const viewMat = lookAt(eye, cam.target, [0, 0, 1]);
      const viewProj = mul(proj, viewMat);
      return {eye, viewProj, forward, pixelsPerRadian: c.height / 2 / Math.tan(rad(cam.fovy) / 2), far};
    }

    draw() {
      const t0 = performance.now();
      const gl = this.gl, c = this.canvas;
      this.dirty = false;
      if (!this.scene) return;
      const m = this.cameraMatrices();
      this.matrices = m;
      const fogNear = Math.max(25, 6 * this.camera.distance), fogFar = Math.min(m.far * 0.9, fogNear * 3);
      const sky = [0.32, 0.4, 0.5];
      this.sky = sky;
      this.fogRange = [fogNear, fogFar];
      gl.viewport(0, 0, c.width, c.height);
      gl.clearColor(sky[0], sky[1], sky[2], 1);
      gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
      gl.enable(gl.DEPTH_TEST);
      let calls = 0, triangles = 0;
      const useProgram = (p) => {
        gl.useProgram(p.program);
        gl.uniformMatrix4fv(p.u.uViewProj, false, m.viewProj);
        gl.uniform3fv(p.u.uEye, m.eye);
        gl.uniform3fv(p.u.uKeyDir, this.light.keyDir);
        gl.uniform3fv(p.u.uKey, this.light.key);
        gl.uniform3fv(p.u.uHead, this.light.head);
        gl.uniform3fv(p.u.uAmbient, this.light.ambient);
        gl.uniform3fv(p.u.uFog, sky);
        gl.uniform2f(p.u.uFogRange, fogNear, fogFar);
      };
      const g = this.geomProgram;
      useProgram(g);
      gl.uniform3f(g.u.uTint, 1.0, 0.55, 0.1);
      // the ground: once, not per env
      gl.disable(gl.CULL_FACE);
      gl.uniform1f(g.u.uGround, 1);
      gl.uniform1f(g.u.uMarkScale, 0);
      gl.vertexAttrib4f(4, 0, 0, 0, 0);
      for (const item of this.ground) {
        gl.bindVertexArray(item.mesh.vao);
        gl.vertexAttrib3f(2, ...item.pose.pos);
        gl.vertexAttrib4f(3, ...item.pose.quat);
        gl.uniform4fv(g.u.uColor, item.color);
        gl.drawElements(gl.TRIANGLES, item.mesh.count, gl.UNSIGNED_INT, 0);
        calls += 1; triangles += item.mesh.count / 3;
      }
      if (this.hfields.length) {
        gl.vertexAttrib3f(2, 0, 0, 0);
        gl.vertexAttrib4f(3, 1, 0, 0, 0);
        const planes = frustumPlanes(m.viewProj);
        for (const h of this.hfields) {
          gl.uniform4fv(g.u.uColor, h.color);
          h.field.draw(m.eye, planes, m.pixelsPerRadian, fogFar, this.software ? 8 : 4);
          triangles += h.field.triangles;
          calls += h.field.calls;
        }
      }
      gl.uniform1f(g.u.uGround, 0);
      gl.enable(gl.CULL_FACE);
      // every moving geom of the envs shown: one draw per detail level (envs at a similar
      // size on screen share one), the bodies' poses read from a texture
      if (this.poses) {
        const bodies = this.drawBodies(m);
        calls += bodies.calls; triangles += bodies.triangles;
      }
      const drawn = this.drawMarkers(m);
      calls += drawn.calls; triangles += drawn.triangles;
      gl.bindVertexArray(null);
      const now = performance.now();
      this.stats.draws += 1;
      this.stats.drawMs = now - t0;
      this.stats.drawCalls = calls;
      this.stats.triangles = Math.round(triangles);
      if (this.poses && this.poses.frame !== this.shownFrame) {
        this.shownFrame = this.poses.frame;
        this.stats.newFrames += 1;
        this.frameTimes.push(now);
        while (this.frameTimes.length && now - this.frameTimes[0] > 2000) this.frameTimes.shift();
      }
      this.stats.fps = this.frameTimes.length > 1 ? (this.frameTimes.length - 1) * 1000 / (now - this.frameTimes[0]) : 0;
    }

    // the poses of the envs shown into the pose texture, nearest first (a row per env: per
    // body its position and spread offset, with the env's tint in w, then its orientation),
    // and every part drawn: per detail level, one instanced draw over the envs at that level
    drawBodies(m) {
      const gl = this.gl, p = this.poses, n = p.n, nb = p.nbody, f = p.floats;
      const order = [], levels = new Map();
      for (let k = 0; k < n; k++) {
        const anchor = this.bodyPose(k, this.anchor)[0];
        const pixels = this.scene.robot_radius * m.pixelsPerRadian / Math.max(len(sub(anchor, m.eye)), 1e-3);
        order.push([this.detailLevel(pixels), k]);
      }
      order.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
      const width = 2 * nb, data = this.poseData && this.poseData.length === width * n * 4 ? this.poseData : new Float32Array(width * n * 4);
      this.poseData = data;
      order.forEach(([level, k], row) => {
        const off = this.offsets[k] || [0, 0, 0], mark = n > 1 && p.ids[k] === this.view.selected ? 1 : 0;
        for (let b = 0; b < nb; b++) {
          const src = (k * nb + b) * POSE, dst = (row * width + 2 * b) * 4;
          data[dst] = f[src] + off[0]; data[dst + 1] = f[src + 1] + off[1]; data[dst + 2] = f[src + 2] + off[2]; data[dst + 3] = mark;
          data[dst + 4] = f[src + 3]; data[dst + 5] = f[src + 4]; data[dst + 6] = f[src + 5]; data[dst + 7] = f[src + 6];
        }
        const run = levels.get(level);
        if (run) run[1] += 1; else levels.set(level, [row, 1]);
      });
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D, this.poseTexture);
      if (this.poseTextureSize === width + 'x' + n) gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, width, n, gl.RGBA, gl.FLOAT, data);
      else gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA32F, width, n, 0, gl.RGBA, gl.FLOAT, data);
      this.poseTextureSize = width + 'x' + n;
      const r = this.bodyProgram;
      gl.useProgram(r.program);
      gl.uniformMatrix4fv(r.u.uViewProj, false, m.viewProj);
      gl.uniform3fv(r.u.uEye, m.eye);
      gl.uniform3fv(r.u.uKeyDir, this.light.keyDir);
      gl.uniform3fv(r.u.uKey, this.light.key);
      gl.uniform3fv(r.u.uHead, this.light.head);
      gl.uniform3fv(r.u.uAmbient, this.light.ambient);
      gl.uniform3fv(r.u.uFog, this.sky);
      gl.uniform2f(r.u.uFogRange, this.fogRange[0], this.fogRange[1]);
      gl.uniform3f(r.u.uTint, 1.0, 0.55, 0.1);
      gl.uniform1i(r.u.uPoses, 0);
      let calls = 0, triangles = 0;
      for (const transparent of [false, true]) {
        if (transparent) { gl.enable(gl.BLEND); gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA); gl.depthMask(false); }
        for (const [level, [first, count]] of levels) {
          for (const part of this.bodyParts(level)) {
            if (part.transparent !== transparent) continue;
            // a part fixed to the world is the same in every env: once, unless spread apart
            const once = part.static && !this.view.spread;
            if (once && first > 0) continue;
            gl.uniform1i(r.u.uFirst, first);
            gl.uniform1f(r.u.uMarkScale, once ? 0 : 1);
            gl.bindVertexArray(part.vao);
            const instances = once ? 1 : count;
            gl.drawElementsInstanced(gl.TRIANGLES, part.count, gl.UNSIGNED_INT, 0, instances);
            calls += 1; triangles += part.count / 3 * instances;
          }
        }
        if (transparent) { gl.disable(gl.BLEND); gl.depthMask(true); }
      }
      return {calls, triangles};
    }

    // the detail level of a robot this many pixels across (its radius): on a GPU, fine above
    // 100 pixels and coarse below; on a software rasterizer, which pays for every triangle,
    // level L holds robots up to 1024 / 2^(L/2) pixels, each geom then as fine as its own
    // size at that bound needs (detailFor)
    detailLevel(pixels) {
      if (!this.software) return pixels > 100 ? 0 : 1;
      return Math.max(0, Math.min(15, Math.floor(2 * (10 - Math.log2(Math.max(pixels, 1))))));
    }

    // the moving geoms (and those fixed to the world) of one robot, merged into a mesh per
    // (fixed, transparent) at a detail level: made at first use, then kept
    bodyParts(level) {
      if (this.parts.has(level)) return this.parts.get(level);
      const groups = new Map();
      // at a software level: pixels per metre at the largest robot the level holds
      const perMeter = level === 0 ? Infinity : 2 ** (10 - level / 2) / this.scene.robot_radius;
      for (const item of this.geoms) {
        const curved = ['sphere', 'ellipsoid', 'capsule', 'cylinder'].includes(item.geom.type);
        let detail = FINE;
        if (curved && !this.software) detail = level === 0 ? FINE : COARSE;
        else if (curved) detail = detailFor(Math.max(...item.geom.size.slice(0, item.geom.type === 'ellipsoid' ? 3 : 1)) * perMeter);
        const shape = placed(geomShape(item.geom, this.meshes, detail), item.geom.pos, item.geom.quat);
        const key = (item.static ? 's' : 'm') + (item.transparent ? 't' : 'o');
        if (!groups.has(key)) groups.set(key, {static: item.static, transparent: item.transparent, shapes: []});
        groups.get(key).shapes.push([shape, item.color, item.body]);
      }
      const parts = [...groups.values()].map((g) => Object.assign(uploadMerged(this.gl, g.shapes), {static: g.static, transparent: g.transparent}));
      this.parts.set(level, parts);
      return parts;
    }

    drawMarkers(m) {
      const gl = this.gl, shapes = this.markShapes;
      for (const s of Object.values(shapes)) s.data.length = 0;
      const texts = [];
      const put = (shape, axes, origin, rgba) => { // columns: x, y, z axes (scaled), origin
        const d = shapes[shape].data;
        d.push(...axes[0], 0, ...axes[1], 0, ...axes[2], 0, ...origin, 1, ...rgba);
      };
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
      this.envIds.forEach((env, k) => {
        const list = this.markers[env];
        if (!Array.isArray(list)) return;
        const off = this.offsets[k] || [0, 0, 0];
        for (const mk of list) {
          if (!mk || !finite(mk.start, 3)) continue;
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
            const width = Math.max(size / 25, 1e-3);
            [[1, 0, 0], [0, 1, 0], [0, 0, 1]].forEach((axis, i) => arrow(start, add(start, scl(qrot(q, axis), size)), width, [...AXES[i], rgba[3]]));
          } else if (mk.kind === 'text' && typeof mk.text === 'string' && mk.text) texts.push([start, mk.text, rgba]);
        }
      });
      let calls = 0, triangles = 0;
      const p = this.markProgram;
      let any = false;
      for (const s of Object.values(shapes)) any = any || s.data.length > 0;
      if (any) {
        gl.useProgram(p.program);
        gl.uniformMatrix4fv(p.u.uViewProj, false, m.viewProj);
        gl.uniform3fv(p.u.uEye, m.eye);
        gl.uniform3fv(p.u.uKeyDir, this.light.keyDir);
        gl.uniform3fv(p.u.uKey, this.light.key);
        gl.uniform3fv(p.u.uHead, this.light.head);
        gl.uniform3fv(p.u.uAmbient, this.light.ambient);
        gl.uniform3f(p.u.uFog, 0.32, 0.4, 0.5);
        gl.uniform2f(p.u.uFogRange, 1e6, 2e6);
        gl.enable(gl.BLEND);
        gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
        gl.disable(gl.CULL_FACE);
        for (const s of Object.values(shapes)) {
          const count = s.data.length / 20;
          if (!count) continue;
          gl.bindBuffer(gl.ARRAY_BUFFER, s.buffer);
          gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(s.data), gl.DYNAMIC_DRAW);
          gl.bindVertexArray(s.mesh.vao);
          gl.drawElementsInstanced(gl.TRIANGLES, s.mesh.count, gl.UNSIGNED_INT, 0, count);
          calls += 1; triangles += s.mesh.count / 3 * count;
        }
        gl.disable(gl.BLEND);
      }
      this.placeLabels(texts, m);
      return {calls, triangles};
    }

    placeLabels(texts, m) {
      if (!this.labels) return;
      const c = this.canvas, w = c.clientWidth, h = c.clientHeight;
      let used = 0;
      for (const [pos, text, rgba] of texts) {
        const q = transform(m.viewProj, pos);
        if (q[3] <= 0) continue;
        const x = (q[0] / q[3] * 0.5 + 0.5) * w, y = (0.5 - q[1] / q[3] * 0.5) * h;
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

    // ---- the mouse: drag rotates, wheel zooms, right-drag or shift-drag pans, click picks

    pointer() {
      const c = this.canvas;
      let drag = null;
      c.addEventListener('contextmenu', (e) => e.preventDefault());
      c.addEventListener('pointerdown', (e) => {
        drag = {x: e.clientX, y: e.clientY, moved: 0, pan: e.button === 2 || e.shiftKey, button: e.button};
        c.setPointerCapture(e.pointerId);
      });
      c.addEventListener('pointermove', (e) => {
        if (!drag) return;
        const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
        drag.x = e.clientX; drag.y = e.clientY;
        drag.moved += Math.abs(dx) + Math.abs(dy);
        const cam = this.camera;
        if (drag.pan) {
          const az = rad(cam.azimuth), el = rad(cam.elevation);
          const forward = [Math.cos(el) * Math.cos(az), Math.cos(el) * Math.sin(az), Math.sin(el)];
          const right = unit(cross(forward, [0, 0, 1])), up = cross(right, forward);
          const s = cam.distance * 2 * Math.tan(rad(cam.fovy) / 2) / Math.max(c.clientHeight, 1);
          const move = add(scl(right, -dx * s), scl(up, dy * s));
          cam.pan = add(cam.pan, move);
          cam.target = add(cam.target, move);
        } else {
          cam.azimuth -= 0.4 * dx;
          cam.elevation = Math.max(-89, Math.min(89, cam.elevation - 0.4 * dy));
        }
        this.dirty = true;
      });
      const end = (e) => {
        if (!drag) return;
        const click = drag.moved < 5 && drag.button === 0 && !drag.pan;
        drag = null;
        if (click) this.pick(e.clientX, e.clientY);
      };
      c.addEventListener('pointerup', end);
      c.addEventListener('pointercancel', () => { drag = null; });
      c.addEventListener('wheel', (e) => {
        e.preventDefault();
        this.camera.distance = Math.max(0.2, Math.min(500, this.camera.distance * Math.exp(0.0015 * e.deltaY)));
        this.dirty = true;
      }, {passive: false});
    }

    // the shown env whose body the ray under (x, y) meets first (each body a sphere that holds
    // its geoms), or null
    pickAt(clientX, clientY) {
      if (!this.poses || !this.matrices) return null;
      const rect = this.canvas.getBoundingClientRect();
      const nx = 2 * (clientX - rect.left) / rect.width - 1, ny = 1 - 2 * (clientY - rect.top) / rect.height;
      const inv = invert(this.matrices.viewProj);
      const a = transform(inv, [nx, ny, -1]), b = transform(inv, [nx, ny, 1]);
      const near = scl(a, 1 / a[3]), dir = unit(sub(scl(b, 1 / b[3]), near));
      const bodies = this.scene.bodies.filter((b) => b.radius > 0);
      let best = null;
      for (let k = 0; k < this.poses.n; k++) {
        for (const body of bodies) {
          const rel = sub(this.bodyPose(k, body.id)[0], near), t = dot(rel, dir);
          const miss2 = dot(rel, rel) - t * t, r2 = body.radius * body.radius;
          if (miss2 > r2) continue;
          const hit = t - Math.sqrt(r2 - miss2); // where the ray enters the sphere
          if (hit > 0 && (best === null || hit < best.t)) best = {t: hit, env: this.poses.ids[k]};
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
      const q = transform(this.matrices.viewProj, this.bodyPose(k, this.anchor)[0]);
      if (q[3] <= 0 || Math.abs(q[0]) > q[3] || Math.abs(q[1]) > q[3]) return null; // not in view
      const rect = this.canvas.getBoundingClientRect();
      return [rect.left + (q[0] / q[3] * 0.5 + 0.5) * rect.width, rect.top + (0.5 - q[1] / q[3] * 0.5) * rect.height];
    }
  }

  window.Scene3D = Scene3D;
})();
