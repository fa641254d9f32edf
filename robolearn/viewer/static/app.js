/* The viewer page's logic: the controls (POST /control with the launch's token), the state
   polled from /state.json, and the picture: "3D" (scene3d.js, three.js, loaded only when
   that mode is first shown) or "rendered" (MuJoCo's JPEG frames). A module, loaded by
   index.html after its import map. */
const $ = (id) => document.getElementById(id);
const TOKEN = document.querySelector('meta[name="robolearn-token"]').content;
let state = {};
let errorTimer = null;
function showError(text) {
  $('error').textContent = text;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { $('error').textContent = ''; }, 5000);
}
// A state snapshot taken before the viewer applied the user's latest command would put the
// old value back into the control just set (a checkbox would flick back): such snapshots are
// not shown. The viewer numbers each command; a snapshot says how many it has applied. While
// a command is on its way its number is not known yet: nothing is shown until it is.
let controlsPending = 0, lastCommand = 0, launch = null;
function current(s) {
  if (controlsPending > 0) return false;
  if (s.launch !== launch) {  // a restarted viewer counts afresh; ours went to the last one
    launch = s.launch;
    lastCommand = 0;
  }
  return s.commands_applied >= lastCommand;
}
async function control(action, value) {
  controlsPending++;
  try {
    const r = await fetch('/control', {
      method: 'POST',
      headers: {'Content-Type': 'application/json', 'X-Robolearn-Token': TOKEN},
      body: JSON.stringify({action: action, value: value}),
    });
    let answer = {};
    try { answer = await r.json(); } catch (e) {}
    if (r.ok) {
      lastCommand = Math.max(lastCommand, answer.command || 0);
    } else {
      // 403 after a restart of the viewer: this page holds the previous launch's secret
      showError(answer.error || ('the viewer answered ' + r.status));
    }
  } catch (e) {
    showError('the viewer is not reachable');
  } finally {
    controlsPending--;
  }
  poll();
}
$('pause').onclick = () => control(state.paused ? 'resume' : 'pause');
$('step').onclick = () => control('step');
$('reset').onclick = () => control('reset');
$('reset-all').onclick = () => control('reset_all');
$('env').onchange = (e) => control('env', parseInt(e.target.value));
$('speed').onchange = (e) => control('speed', parseFloat(e.target.value));
$('follow').onchange = (e) => control('camera', e.target.checked);
$('contacts').onchange = (e) => control('contacts', e.target.checked);
// a value the simulation made NaN or infinite arrives as null (state.json is strict JSON)
function fmt(x) { return typeof x === 'number' ? (x >= 0 ? '+' : '') + x.toFixed(3) : 'n/a'; }
function rate(x, unit) { return typeof x === 'number' ? x.toFixed(x < 10 ? 1 : 0) + unit : '-' + unit; }
// "running x4" only when the speed reached (realtime_factor, measured over the last 2 s) is
// within 10% of the one asked for; else both, as session.speed_text says it
function speedText(s) {
  if (s.paused) return 'paused';
  const got = s.realtime_factor;
  if (typeof got !== 'number') return 'x' + s.speed + ' requested';
  if (Math.abs(got - s.speed) <= 0.1 * s.speed) return 'running x' + s.speed;
  return 'x' + s.speed + ' requested, x' + Number(got.toPrecision(2)) + ' reached';
}
function render(s) {
  state = s;
  $('pause').textContent = s.paused ? 'resume' : 'pause';
  $('steps').textContent = s.steps;
  $('time').textContent = s.episode_time_s.toFixed(2);
  $('status').textContent = speedText(s);
  // frames/s: in 3D, new poses this page drew (its own count); rendered, new frames served
  const frames = mode === '3d' && view3d ? view3d.stats.fps : s.frames_per_s;
  $('rates').textContent = s.paused ? '' : rate(s.steps_per_s, ' steps/s') + ' · ' + rate(frames, ' frames/s');
  $('actions').textContent = s.actions;
  // following a run that has not saved yet: no checkpoint, the robots stand still
  $('checkpoint').textContent = s.checkpoint ? (s.checkpoint.split('/').slice(-2).join('/') + ' (iteration ' + s.iteration + ')')
    : s.actions === 'follow' ? 'zero actions until ' + (s.run || 'the run').split('/').slice(-1)[0] + ' saves its first checkpoint' : '';
  $('termination').textContent = s.last_termination || 'none yet';
  if ($('env').options.length !== s.num_envs) {
    $('env').innerHTML = '';
    for (let i = 0; i < s.num_envs; i++) $('env').add(new Option(i, i));
  }
  $('env').value = s.env;
  if ($('speed').options.length === 0) for (const v of s.speeds) $('speed').add(new Option('x' + v, v));
  $('speed').value = s.speed;
  $('follow').checked = s.follow_camera;
  $('contacts').checked = s.contacts;
  if (s.command) {
    $('velocity').innerHTML = '<span class="cmd">command</span> vx ' + fmt(s.command.vx) + ' vy ' + fmt(s.command.vy) +
      ' wz ' + fmt(s.command.wz) + '<br><span class="act">actual</span> vx ' + fmt(s.velocity.vx) + ' vy ' +
      fmt(s.velocity.vy) + ' wz ' + fmt(s.velocity.wz);
  }
  if (mode === '3d') sync3d();
  $('terrain').textContent = s.terrain ? 'terrain: ' + s.terrain.type + ', level ' + s.terrain.level + ' of ' + (s.terrain.levels - 1) : '';
  let rows = '';
  for (const [name, value] of Object.entries(s.rewards)) {
    rows += '<tr><td>' + name + '</td><td class="num ' + (value < 0 ? 'neg' : 'pos') + '">' + fmt(value) + '</td></tr>';
  }
  rows += '<tr><td><b>total</b></td><td class="num"><b>' + fmt(s.reward_total) + '</b></td></tr>';
  $('rewards').innerHTML = rows;
}
async function poll() {
  try {
    const s = await (await fetch('/state.json')).json();
    if (current(s)) render(s);
  } catch (e) {}
}
setInterval(poll, 250);
poll();
// ---- the picture: "3D" (drawn here from the scene and each frame's poses) or "rendered"
// (MuJoCo's frames as JPEG: what the videos show; the fallback without WebGL2).
// ?mode=3d|rendered, ?shown=N, ?spread=0|1 and ?markers=watched|shown|none in the address
// choose them at load.
const params = new URLSearchParams(location.search);
const SHOWN = [1, 4, 16, 64];
const view = {shown: parseInt(params.get('shown')) || 16, spread: params.has('spread') ? params.get('spread') === '1' : null,
  markers: ['watched', 'shown', 'none'].includes(params.get('markers')) ? params.get('markers') : 'watched'};
let mode = null, view3d = null, view3dFailed = false, picked = null;
// next frame when the last one arrived: never more requests than the server can answer
function nextFrame(delay) {
  setTimeout(() => { if (mode === 'rendered') $('frame').src = '/frame.jpg?t=' + Date.now(); }, delay);
}
$('frame').onload = () => nextFrame(30);
$('frame').onerror = () => nextFrame(500);
function fillShown(n) {
  const options = [...new Set(SHOWN.map((v) => Math.min(v, n)))];
  $('shown').innerHTML = '';
  for (const v of options) $('shown').add(new Option(v, v));
  view.shown = Math.min(view.shown, n);
  if (!options.includes(view.shown)) $('shown').add(new Option(view.shown, view.shown));
  $('shown').value = view.shown;
}
function sync3d() {
  if (!view3d) return;
  // a robot clicked is watched at once; the state confirms it a moment later
  if (picked && (state.env === picked.env || performance.now() - picked.at > 3000)) picked = null;
  const selected = picked ? picked.env : (typeof state.env === 'number' ? state.env : 0);
  view3d.setView({selected, shown: view.shown, spread: view.spread, follow: state.follow_camera !== false,
    markers: view.markers});
}
// WebGL2 in this browser (three.js needs it): else the rendered mode, three.js never loaded
function webgl2() {
  try { return !!document.createElement('canvas').getContext('webgl2'); } catch (e) { return false; }
}
async function setMode(wanted) {
  if (wanted === '3d' && (view3dFailed || !webgl2())) wanted = 'rendered';
  mode = wanted;
  $('mode').value = wanted;
  for (const id of ['view3d', 'hint3d', 'controls3d']) $(id).hidden = wanted !== '3d';
  $('frame').hidden = wanted !== 'rendered';
  if (wanted === 'rendered') {
    if (view3d) view3d.stop();
    $('frame').src = '/frame.jpg?t=' + Date.now();
    return;
  }
  $('frame').removeAttribute('src');
  try {
    if (!view3d) {
      const {Scene3D} = await import('./scene3d.js');
      const v = new Scene3D($('canvas3d'), $('labels3d'), {
        onPick: (env) => {
          picked = {env, at: performance.now()};
          sync3d();
          if (env !== state.env) control('env', env);
        },
        onError: showError,
      });
      await v.load();
      view3d = window.robolearn3d = v;
      if (view.spread === null) view.spread = v.scene.spread.default;
      $('spread').checked = view.spread;
      fillShown(v.numEnvs);
    }
    sync3d();
    if (mode === '3d') view3d.start();
  } catch (e) {
    view3dFailed = true;
    showError('no 3D view (' + e.message + '): showing rendered frames');
    setMode('rendered');
  }
}
$('mode').onchange = (e) => setMode(e.target.value);
$('shown').onchange = (e) => { view.shown = parseInt(e.target.value); sync3d(); };
$('spread').onchange = (e) => { view.spread = e.target.checked; sync3d(); };
$('markers').value = view.markers;
$('markers').onchange = (e) => { view.markers = e.target.value; sync3d(); };
setMode(params.get('mode') === 'rendered' ? 'rendered' : '3d');
