// The report itself: reads the JSON block and renders each input (bench, session,
// doctor) and the comparisons between them. Strings from the data only ever reach the
// page as text nodes (epEl), never as markup.
const EP_RUN_CLOCK = 'result repetitions (start_ns, end_ns, decode_step_ms) on the run clock';

function epTable(parent, head, rows, numeric) {
  const t = epEl('table');
  t.appendChild(epEl('tr', {}, ...head.map(h => epEl('th', {text: h}))));
  for (const r of rows) {
    t.appendChild(epEl('tr', {}, ...r.map((c, i) => epEl('td', numeric && numeric[i] ? {class: 'num'} : {},
                                                           typeof c === 'number' ? epNum(c) : (c ?? '\u2014')))));
  }
  parent.appendChild(epEl('div', {class: 'table-wrap'}, t));
  return t;
}

// A turn's decode telemetry as readable cells: CPU clock per cluster, the hottest zone,
// throttled time, other processes' share, power; "not measured" where a figure is absent.
function epTurnTelemetry(tel) {
  const none = 'not measured';
  if (!tel || typeof tel !== 'object') return [none, none, none, none, none];
  const clusters = (tel.clusters || []).filter(c => typeof c.mean_freq_share === 'number')
    .map(c => `${c.name}${c.role ? ` (${c.role})` : ''} ${epNum(c.mean_freq_share * 100, 0)}% of max`);
  const zones = Object.entries(tel.thermal || {}).filter(([, z]) => typeof z.max_temp_c === 'number')
    .sort((a, b) => b[1].max_temp_c - a[1].max_temp_c);
  const num = (v, fmt) => (typeof v === 'number' ? fmt(v) : none);
  return [clusters.length ? clusters.join(', ') : none,
          zones.length ? `${zones[0][0]} ${epNum(zones[0][1].max_temp_c)} \u00b0C` : none,
          num(tel.throttled_ms, v => `${epNum(v)} ms`),
          num(tel.other_cpu_share, v => `${epNum(v * 100)}%`),
          num(tel.mean_power_w, v => `${epNum(v)} W${tel.energy_source ? ` (${tel.energy_source})` : ''}`)];
}

function epKv(parent, pairs) {
  const dl = epEl('dl', {class: 'kv'});
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === '') continue;
    dl.appendChild(epEl('dt', {text: k}));
    dl.appendChild(epEl('dd', {text: typeof v === 'number' ? epNum(v) : String(v)}));
  }
  parent.appendChild(dl);
}

function epProvenance(parent, prov) {
  if (!prov) return;
  const dev = prov.device || {}, eng = prov.engine || {};
  epKv(parent, [
    ['device', [dev.board, dev.soc, dev.cpu_model].filter(Boolean).join(' \u00b7 ')],
    ['device id', dev.id], ['os', dev.os], ['kernel', dev.kernel],
    ['engine', [eng.name, eng.version, eng.commit, eng.cpu_variant].filter(Boolean).join(' ')],
    ['started (UTC)', prov.started_at_utc], ['command line', prov.command_line]]);
  for (const mdl of prov.models || []) {
    epKv(parent, [['model', mdl.path], ['name', mdl.name], ['quant', mdl.quant],
                  ['size (MB)', mdl.size_bytes ? mdl.size_bytes / 1e6 : null], ['sha256', mdl.sha256]]);
  }
}

// A summary of no samples (an older result wrote its median as 0) has no median.
function epMedian(summary) { return summary && typeof summary === 'object' && summary.n !== 0 ? summary.median : null; }
// The threads that ran the model: behind an endpoint the server's as it stated them
// (details.server_side), 'n/a' when it did not; never the client's -t.
// Set for each input before it renders (inputs render one after another).
let epEndpointThreads;  // undefined: in-process
function epServerThreads(prov) {
  const eng = (prov || {}).engine || {};
  if (eng.kind !== 'endpoint') return undefined;
  const t = ((eng.details || {}).server_side || {}).threads;
  return typeof t === 'number' ? t : null;
}
function epThreads(c) {
  if (epEndpointThreads === undefined) return (c || {}).n_threads;
  return typeof epEndpointThreads === 'number' ? epEndpointThreads : 'n/a';
}
// A label per model that tells rows apart (the same rule as the markdown table): the names
// where unique, else the file names, else the paths; null for a run of one model.
function epModelLabels(doc) {
  const models = (doc.provenance || {}).models || [];
  if (models.length < 2) return null;
  const unique = v => new Set(v).size === v.length;
  const paths = models.map(m => String(m.path || ''));
  const files = paths.map(p => p.slice(p.lastIndexOf('/') + 1));
  const names = models.map((m, i) => String(m.name || files[i]));
  return unique(names) ? names : unique(files) ? files : paths;
}
// Each parameter once: the test name already holds a depth ("tg128 @ d32").
function epTestLabel(r, doc) {
  const c = r.config || {};
  const labels = doc ? epModelLabels(doc) : null;
  const model = labels && typeof r.model_index === 'number' ? `${labels[r.model_index]} ` : '';
  const depth = c.n_depth && !String(r.test).includes(`d${c.n_depth}`) ? ` d${c.n_depth}` : '';
  return `${model}${r.test} t${epThreads(c)}${depth}`;
}

// Telemetry reasons that apply to one kind of series ("cpufreq ...", "thermal ...").
function epReasons(unavailable, words, fallback) {
  const hits = (unavailable || []).filter(u => words.some(w => String(u).toLowerCase().includes(w)));
  return hits.length ? hits.map(String) : [fallback];
}

function epBenchTimeline(parent, doc, key) {
  const results = (doc.results || []).filter(r => Array.isArray(r.repetitions));
  let t0 = Infinity;
  for (const r of results) {
    for (const rep of r.repetitions) {
      const stepsNs = (rep.decode_step_ms || []).reduce((a, b) => a + b, 0) * 1e6;
      t0 = Math.min(t0, rep.start_ns, rep.end_ns - stepsNs);
    }
  }
  const sec = ns => (ns - t0) / 1e9;
  const latency = [];
  const phaseSeries = {freq: new Map(), gpufreq: new Map(), gpubusy: new Map(), temp: new Map(), power: new Map(), throttled: new Map(), other: new Map()};
  const addSeg = (kind, name, seg) => {
    if (!phaseSeries[kind].has(name)) phaseSeries[kind].set(name, []);
    phaseSeries[kind].get(name).push(seg);
  };
  const unavailable = [];
  let telemetryOff = true;
  for (const r of results) {
    const xs = [], ys = [];
    if (r.telemetry && typeof r.telemetry === 'object') {
      telemetryOff = false;
      for (const u of r.telemetry.unavailable || []) if (!unavailable.includes(u)) unavailable.push(u);
    }
    for (const rep of r.repetitions) {
      // Steps end at the repetition's end; each step's time is where it finished.
      const steps = rep.decode_step_ms || [];
      let t = rep.end_ns;
      const times = new Array(steps.length);
      for (let i = steps.length - 1; i >= 0; i--) { times[i] = t; t -= steps[i] * 1e6; }
      for (let i = 0; i < steps.length; i++) { xs.push(sec(times[i])); ys.push(steps[i]); }
      const tel = rep.telemetry;
      if (!tel || typeof tel !== 'object') continue;
      for (const [phase, p] of Object.entries(tel)) {
        if (!p || typeof p !== 'object') continue;
        const dur = (p.duration_ms || 0) * 1e6;
        const a = phase === 'decode' ? rep.end_ns - dur : rep.start_ns, b = a + dur;
        const seg = y => [sec(a), sec(b), y];
        for (const c of p.clusters || []) if (typeof c.mean_freq_share === 'number') addSeg('freq', `${c.name}${c.role ? ' (' + c.role + ')' : ''}`, seg(c.mean_freq_share * 100));
        for (const g of p.gpus || []) {
          if (typeof g.mean_freq_share === 'number') addSeg('gpufreq', g.name, seg(g.mean_freq_share * 100));
          if (typeof g.mean_busy_share === 'number') addSeg('gpubusy', g.name, seg(g.mean_busy_share * 100));
        }
        for (const [zone, z] of Object.entries(p.thermal || {})) if (typeof z.max_temp_c === 'number') addSeg('temp', zone, seg(z.max_temp_c));
        if (typeof p.mean_power_w === 'number') addSeg('power', p.energy_source || 'total', seg(p.mean_power_w));
        if (typeof p.throttled_ms === 'number') addSeg('throttled', 'cgroup throttled', seg(p.throttled_ms));
        if (typeof p.other_cpu_share === 'number') addSeg('other', 'other processes', seg(p.other_cpu_share * 100));
      }
    }
    if (xs.length) latency.push({name: epTestLabel(r, doc), xs, ys, style: 'dots'});
  }
  const group = `${key}-time`;
  if (!latency.length) {
    epNotMeasured(parent, `${key}-decode-latency`, 'Per-token decode latency over time',
                  ['no repetition recorded decode steps (prompt-only tests, or a v1 result without decode_step_ms)']);
  } else {
    epChart(parent, {id: `${key}-decode-latency`, title: 'Per-token decode latency over time', xLabel: 'run time (s)',
                     yLabel: 'decode step (ms)', source: EP_RUN_CLOCK, series: latency, zoomGroup: group, yZero: true});
  }
  const off = 'telemetry was off for this run (no sampler ran)';
  const panels = [
    ['freq', 'CPU frequency per cluster (mean per phase)', 'share of max frequency (%)', ['cpufreq', 'frequency', 'cluster']],
    ['gpufreq', 'GPU clock (mean per phase)', 'share of max clock (%)', null],
    ['gpubusy', 'GPU busy (mean per phase)', 'busy (%)', null],
    ['temp', 'Temperature (max per phase)', '\u00b0C', ['thermal', 'temp']],
    ['power', 'Power (mean per phase)', 'W', ['power', 'rapl', 'battery', 'energy']],
    ['throttled', 'Throttled time (per phase)', 'ms', ['cgroup', 'throttl', 'cpu.stat']],
    ['other', "Other processes' CPU (per phase)", 'share of all CPUs (%)', ['stat', 'other', 'cpu time']]];
  for (const [kind, title, unit, words] of panels) {
    const id = `${key}-telemetry-${kind}`;
    const series = [...phaseSeries[kind].entries()].map(([name, segs]) => ({name, segs, style: 'segments'}));
    if (!series.length && !words) continue;  // GPU panels: only where a GPU was found
    if (!series.length) {
      epNotMeasured(parent, id, title, telemetryOff ? [off] : epReasons(unavailable, words, 'the device offered no such figure for any phase'));
      continue;
    }
    epChart(parent, {id, title, xLabel: 'run time (s)', yLabel: unit, series, zoomGroup: group, height: 160,
                     source: 'per-phase telemetry of each repetition (prefill, decode), on the run clock', yZero: kind !== 'temp'});
  }
}

function epBenchCdf(parent, doc, key) {
  const series = [], vmarks = [];
  for (const r of doc.results || []) {
    const steps = [];
    for (const rep of r.repetitions || []) for (const s of rep.decode_step_ms || []) steps.push(s);
    if (!steps.length) continue;
    steps.sort((a, b) => a - b);
    series.push({name: epTestLabel(r, doc), xs: steps, ys: steps.map((_, i) => (i + 1) / steps.length * 100), style: 'line'});
    const lat = (r.decode && r.decode.token_latency_ms) || {};
    ['p50', 'p90', 'p99'].forEach((p, row) => {
      if (typeof lat[p] === 'number') vmarks.push({x: lat[p], label: `${epTestLabel(r, doc)} ${p} ${epNum(lat[p])} ms`, row});
    });
  }
  if (!series.length) return epNotMeasured(parent, `${key}-latency-cdf`, 'Decode latency CDF', ['no decode steps were recorded']);
  epChart(parent, {id: `${key}-latency-cdf`, title: 'Decode latency CDF (p50, p90, p99 marked)', xLabel: 'decode step (ms)',
                   yLabel: 'share of steps at or below (%)', source: 'every decode step of every repetition, pooled per test',
                   series, vmarks});
}

function epBenchSweep(parent, doc, key) {
  const results = (doc.results || []).filter(r => r.status === 'ok' || !r.error);
  for (const [phase, title] of [['prefill', 'Prefill'], ['decode', 'Decode']]) {
    const rows = results.filter(r => r[phase] && r[phase].tokens_per_s);
    const id = `${key}-sweep-${phase}`;
    if (!rows.length) { epNotMeasured(parent, id, `${title} tokens/s across the sweep`, [`no test ran a ${phase} phase`]); continue; }
    const s = rows.map(r => r[phase].tokens_per_s);
    epChart(parent, {id, title: `${title} tokens/s across the sweep`, xLabel: 'test', yLabel: 'tokens/s', yZero: true,
                     source: 'median of repetitions; whiskers p25\u2013p75', categories: rows.map(r => epTestLabel(r, doc)),
                     series: [{name: `${phase} tokens/s`, xs: rows.map((_, i) => i), ys: s.map(x => x.median),
                               lo: s.map(x => x.p25), hi: s.map(x => x.p75), style: 'bars'}]});
  }
}

function epBenchRoofline(parent, doc, key) {
  const rows = [], bars = {achieved: [], bandwidth: [], kernel: [], compute: []}, notes = [];
  for (const r of doc.results || []) {
    const rf = r.roofline;
    if (!rf || typeof rf !== 'object') continue;
    const phase = r.config && r.config.n_gen > 0 ? 'decode' : 'prefill';
    const achieved = epMedian((r[phase] || {}).tokens_per_s);
    rows.push(`${epTestLabel(r, doc)} ${phase}`);
    // A ceiling the rate beat by more than the noise margin is not drawn as a ceiling.
    const suspect = phase === 'decode' ? rf.decode_ceiling_suspect === true : rf.prefill_ceiling_suspect === true;
    bars.achieved.push(achieved);
    bars.bandwidth.push(phase === 'decode' && !suspect && rf.decode_cache_resident !== true
                        ? rf.decode_bandwidth_ceiling_tokens_per_s : null);
    bars.kernel.push(phase === 'decode' && !suspect ? rf.decode_kernel_ceiling_tokens_per_s : null);
    bars.compute.push(phase === 'prefill' && !suspect ? rf.prefill_ceiling_tokens_per_s : null);
    const eff = phase === 'decode' ? rf.decode_efficiency : rf.prefill_efficiency;
    const bound = phase === 'decode'
      ? (rf.decode_bound ? `${rf.decode_bound}-bound` : 'bound unknown') + (rf.decode_cache_resident === true ? ' (fits in the LLC)' : '')
      : 'compute-bound';
    const share = suspect ? `ceiling suspect (re-measure: ${rf.remeasure_command || 'edgeprobe probe --refresh --replace'})`
                : eff == null ? 'efficiency unknown' : epNum(eff * 100, 0) + '% of its ceiling';
    const on = rf.ceiling_device ? ` (ceilings of ${rf.ceiling_device}, the GPU that held the model)` : '';
    notes.push(`${epTestLabel(r, doc)} ${phase}: ${bound}${on}, ${epNum(achieved)} tokens/s = ${share}`);
  }
  const id = `${key}-roofline`;
  if (!rows.length) return epNotMeasured(parent, id, 'Roofline', ['no ceilings were measured (bench --ceilings off, or the probe failed)']);
  const x = rows.map((_, i) => i);
  const series = [['achieved', bars.achieved], ['bandwidth ceiling', bars.bandwidth], ['decode kernel ceiling', bars.kernel],
                  ['compute ceiling', bars.compute]].filter(([, ys]) => ys.some(v => typeof v === 'number'))
                  .map(([name, ys]) => ({name, xs: x, ys, style: 'bars'}));
  epChart(parent, {id, title: 'Roofline: achieved against the ceilings', xLabel: 'test and phase', yLabel: 'tokens/s',
                   categories: rows, yZero: true, series,
                   source: "result roofline (the device's measured bandwidth and compute ceilings)"});
  const list = epEl('ul', {class: 'binding'});
  for (const n of notes) list.appendChild(epEl('li', {text: n}));
  parent.appendChild(list);
}

// The run's status as the store keeps it (store::finished_status): complete, partial when
// some of its tests or turns failed, failed when all did.
function epRunStatus(parent, units, failed, unit) {
  const status = failed === 0 ? 'complete' : failed >= units ? 'failed' : 'partial';
  const text = failed === 0 ? 'complete' : failed >= units ? `failed: all ${units} ${unit} failed`
                                                          : `partial: ${failed} of ${units} ${unit} failed`;
  parent.appendChild(epEl('p', {class: `run-status ${status}`, 'data-run-status': status, text: `run: ${text}`}));
}

function epBench(parent, doc, key) {
  const ran = (doc.results || []).filter(r => !(r.error && r.error.kind === 'interrupted'));
  epRunStatus(parent, ran.length, ran.filter(r => r.error).length, 'tests');
  parent.appendChild(epEl('h3', {text: 'Summary'}));
  const mem = r => (typeof r.peak_rss_bytes === 'number' && r.peak_rss_bytes >= 0 ? r.peak_rss_bytes / 1048576 : null);
  const models = (doc.provenance || {}).models || [];
  const labels = epModelLabels(doc) || models.map(m => String(m.name || m.path || ''));
  const modelOf = r => (typeof r.model_index === 'number' && labels[r.model_index] !== undefined ? labels[r.model_index] : '');
  epTable(parent, ['model', 'test', 'status', 'threads', 'prefill t/s', 'decode t/s', 'TTFT ms', 'latency p50 ms', 'p99 ms',
                   'load cold ms', 'load warm ms', 'peak RSS MiB', 'decode bound'],
          (doc.results || []).map(r => {
            const lat = (r.decode && r.decode.token_latency_ms) || {};
            if (r.error) return [modelOf(r), r.test, `error: ${r.error.message || r.error}`, epThreads(r.config)];
            return [modelOf(r), r.test, r.status || 'ok', epThreads(r.config),
                    epMedian((r.prefill || {}).tokens_per_s), epMedian((r.decode || {}).tokens_per_s), epMedian(r.ttft_ms),
                    lat.p50, lat.p99, (r.load || {}).cold_ms, epMedian((r.load || {}).warm_ms), mem(r),
                    (r.roofline || {}).decode_bound];
          }), [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
  parent.appendChild(epEl('h3', {text: 'Decode latency and telemetry over time'}));
  epBenchTimeline(parent, doc, key);
  epBenchCdf(parent, doc, key);
  parent.appendChild(epEl('h3', {text: 'Throughput across the sweep'}));
  epBenchSweep(parent, doc, key);
  epBenchRoofline(parent, doc, key);
  epBenchPlacement(parent, doc);
  epBenchServing(parent, doc);
}

// Where each test's model and compute lived (result placement, docs/gpu.md): layers on the
// GPU, the nodes each backend ran in prefill and decode, what fell back to the CPU while a
// GPU held the model, and whose ceilings judged it. Nothing when no test saw a GPU.
function epBenchPlacement(parent, doc) {
  const shares = g => (g && Array.isArray(g.backends) && g.backends.length
    ? g.backends.map(b => `${b.backend} ${b.nodes}`).join(', ') : null);
  const fallback = g => {
    const nodes = (g && Array.isArray(g.cpu_nodes) ? g.cpu_nodes : []).filter(n => n.weight_bytes > 0);
    return nodes.length ? nodes.slice(0, 3).map(n => `${n.op} on ${n.tensor} x${n.count}`).join('; ')
                          + (nodes.length > 3 ? ` (+${nodes.length - 3} more)` : '') : 'none';
  };
  const rows = [];
  for (const r of doc.results || []) {
    const p = r.placement;
    if (!p || typeof p !== 'object' || !Array.isArray(p.devices) || !p.devices.length) continue;
    const layers = typeof p.layers_total === 'number' && p.layers_total >= 0 ? `${p.layers_offloaded} / ${p.layers_total}` : null;
    const splits = p.graph_splits || {};
    rows.push([r.test, (r.config || {}).n_gpu_layers, p.devices.join('; '), layers, shares(p.prefill), shares(p.decode),
               fallback(p.decode || p.prefill), (p.weights_moved || []).length ? p.weights_moved.join('; ') : 'none',
               `${splits.prefill ?? '\u2014'} / ${splits.decode ?? '\u2014'}`,
               (r.roofline || {}).ceiling_device || (r.roofline ? 'CPU' : null)]);
  }
  if (!rows.length) return;
  parent.appendChild(epEl('h3', {text: 'Placement: where the model and its compute lived'}));
  epTable(parent, ['test', '-ngl', 'devices', 'layers on GPU', 'prefill nodes', 'decode nodes', 'ran on the CPU (fallback)',
                   'weights moved to the CPU', 'graph splits (prefill / decode)', 'judged against the ceilings of'], rows,
          [0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
}

// Load levels (--concurrency, --request-rate), one row a level, vLLM's figures; nothing
// when no test ran them.
function epBenchServing(parent, doc) {
  const rows = [];
  for (const r of doc.results || []) {
    for (const l of Array.isArray(r.serving) ? r.serving : []) {
      const level = 'concurrency' in l ? `concurrency ${l.concurrency}` : `${l.request_rate} req/s`;
      rows.push([r.test, level, `${l.completed} / ${l.failed}`, l.request_throughput, l.output_throughput,
                 typeof l.goodput === 'number' ? l.goodput : 'no SLO', l.median_ttft_ms, l.p99_ttft_ms,
                 l.median_tpot_ms, l.p99_itl_ms, l.median_e2el_ms]);
    }
  }
  if (!rows.length) return;
  parent.appendChild(epEl('h3', {text: 'Serving: load levels after the repetitions'}));
  epTable(parent, ['test', 'level', 'completed / failed', 'req/s', 'output t/s', 'goodput req/s', 'TTFT p50 ms',
                   'TTFT p99 ms', 'TPOT p50 ms', 'ITL p99 ms', 'E2E p50 ms'], rows,
          [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
}

function epSession(parent, doc, key) {
  let units = 0, failed = 0;
  for (const cfg of doc.configs || []) {
    const turns = cfg.turns || [];
    units += turns.length; failed += turns.filter(t => t.error && typeof t.error === 'object').length;
    if (cfg.error && !turns.length) { ++units; ++failed; }
  }
  epRunStatus(parent, units, failed, 'turns');
  (doc.configs || []).forEach((cfg, ci) => {
    const c = cfg.config || {}, a = cfg.analysis || {}, k = `${key}-c${ci}`;
    parent.appendChild(epEl('h3', {text: `Configuration ${ci}: ${c.model_path || ''} ctx ${c.n_ctx} max ${c.max_tokens} t${epThreads(c)}`}));
    if (cfg.error) { parent.appendChild(epEl('p', {class: 'not-comparable', text: `did not run: ${cfg.error.message || ''}`})); return; }
    const st = a.stability || {};
    epKv(parent, [['turns measured', a.turns_measured], ['decode t/s median', epMedian(a.decode_tokens_per_s)],
                  ['TTFT ms median', epMedian(a.ttft_ms)], ['CV of decode t/s', st.cv],
                  ['drift (last/first)', st.drift && st.drift.ratio], ['missed UI frames', a.missed_frame_share == null ? 'not measured' : epNum(a.missed_frame_share * 100) + '%'],
                  ['QES', a.qes && a.qes.total]]);
    // The series analysis ran on: measured turns that generated more than one token.
    const turns = (cfg.turns || []).filter(t => !(t.error && typeof t.error === 'object') &&
                                                 !(t.stop_reason === 'context_full' && !t.generated_tokens));
    const withTps = turns.filter(t => t.generated_tokens > 1);
    const vmarks = (st.change_points_at || []).map((cp, row) => ({x: cp.index, row,
      label: `round ${cp.round} ${cp.conversation_id} turn ${cp.turn_index}: ${epNum((cp.relative_change || 0) * 100)}%`}));
    const group = `${k}-turns`;
    if (!withTps.length) epNotMeasured(parent, `${k}-tps`, 'Decode tokens/s per turn', ['no turn generated more than one token']);
    else epChart(parent, {id: `${k}-tps`, title: 'Decode tokens/s per turn (change points marked)', xLabel: 'turn (order run)',
                          yLabel: 'tokens/s', source: 'session turns (decode_tokens_per_s); change points from PELT', zoomGroup: group,
                          series: [{name: 'decode tokens/s', xs: withTps.map((_, i) => i), ys: withTps.map(t => t.decode_tokens_per_s), style: 'line'}], vmarks});
    if (!turns.length) epNotMeasured(parent, `${k}-ttft`, 'TTFT per turn', ['no turn was measured']);
    else epChart(parent, {id: `${k}-ttft`, title: 'Time to first token per turn', xLabel: 'turn (order run)', yLabel: 'TTFT (ms)',
                          source: 'session turns (ttft_ms)', zoomGroup: group, yZero: true,
                          series: [{name: 'TTFT', xs: turns.map((_, i) => i), ys: turns.map(t => t.ttft_ms), style: 'line'}]});
    const temp = new Map();
    withTps.forEach((t, i) => {
      const d = t.telemetry && t.telemetry.decode;
      for (const [zone, z] of Object.entries((d && d.thermal) || {})) {
        if (!temp.has(zone)) temp.set(zone, {name: zone, xs: [], ys: [], style: 'line'});
        temp.get(zone).xs.push(i); temp.get(zone).ys.push(z.max_temp_c);
      }
    });
    if (!temp.size) epNotMeasured(parent, `${k}-temp`, 'Temperature per turn', epReasons(doc.telemetry_unavailable, ['thermal', 'temp'], 'no thermal reading in any turn'));
    else epChart(parent, {id: `${k}-temp`, title: 'Temperature during decode, per turn', xLabel: 'turn (order run)', yLabel: 'max \u00b0C',
                          source: 'turn telemetry (decode phase)', zoomGroup: group, series: [...temp.values()], height: 160});
    const cps = st.change_points_at || [];
    if (cps.length) {
      parent.appendChild(epEl('h4', {text: 'Change points and the telemetry of their turn'}));
      epTable(parent, ['turn', 'change', 'CPU clock', 'max temperature', 'throttled', "other processes' CPU", 'power'],
              cps.map(cp => [cp.index, `${epNum((cp.relative_change || 0) * 100)}% at round ${cp.round} ${cp.conversation_id} turn ${cp.turn_index}`,
                             ...epTurnTelemetry(cp.telemetry)]));
    }
    const q = a.qes;
    if (q) {
      parent.appendChild(epEl('h4', {text: `QES ${epNum(q.total)} (rests on: ${(q.rests_on || []).join(', ')})`}));
      const rows = [];
      for (const comp of q.components || []) for (const p of comp.parts || [comp]) {
        rows.push([comp.name, comp.weight, comp.score, p.name, p.input, p.unit, p.score, p.rule]);
      }
      epTable(parent, ['component', 'weight', 'score', 'part', 'input', 'unit', 'part score', 'rule'], rows, [0, 1, 1, 0, 1, 0, 1, 0]);
      if ((q.unavailable || []).length) epNotMeasured(parent, `${k}-qes-unavailable`, 'QES components', q.unavailable.map(u => `${u}: not measured, left out of the total`));
    }
  });
}

// A --tune search: the best configuration, its measured gain, and every value tried.
function epTune(parent, t) {
  const flags = f => (f || []).join(' ') || '(defaults)';
  epKv(parent, [['model', t.model], ['given', flags(t.start)], ['best', flags(t.best)],
                ['measured gain', typeof t.gain === 'number' ? `${epNum(t.gain)}\u00d7 per turn` : 'not confirmed'],
                ['reproduce', t.edgeprobe_command]]);
  const rows = [];
  for (const s of t.steps || [])
    for (const c of s.candidates || [])
      rows.push([s.setting, c.value, c.rates?.prefill_tokens_per_s, c.rates?.decode_tokens_per_s, c.turn_s,
                 s.error ? `not measured: ${s.error}` : (c.value === s.chosen ? 'kept' : '')]);
  epTable(parent, ['setting', 'value', 'prefill tok/s', 'decode tok/s', 's per turn', ''], rows, [false, false, true, true, true, false]);
}

// Doctor documents arrive in today's shape (html_report.cpp reads them into their structs).
function epDoctor(parent, doc, key) {
  if (doc.tune) return epTune(parent, doc.tune);
  const d = doc.doctor || {};
  epKv(parent, [['model', d.model], ['verdict', d.healthy ? 'healthy' : 'not healthy']]);
  const findings = d.findings || [];
  const speed = findings.filter(f => typeof f.speedup === 'number');
  if (speed.length) {
    epChart(parent, {id: `${key}-speedups`, title: 'Speed-up each fix is expected to give', xLabel: 'finding', yLabel: 'speed-up (\u00d7)',
                     source: 'doctor findings (measured or estimated, see each finding)', categories: speed.map(f => f.id), yZero: true,
                     hmarks: [{y: 1, label: 'no change'}],
                     series: [{name: 'speed-up', xs: speed.map((_, i) => i), ys: speed.map(f => f.speedup), style: 'bars'}]});
  }
  for (const f of findings) {
    const box = epEl('div', {class: `finding ${f.severity}`, 'data-finding': 'true'});
    box.appendChild(epEl('h4', {}, epEl('span', {class: `sev sev-${f.severity}`, text: f.severity}), ` ${f.id}: ${f.title}`));
    const ev = epEl('ul');
    for (const e of f.evidence || []) ev.appendChild(epEl('li', {text: typeof e === 'string' ? e : JSON.stringify(e)}));
    box.appendChild(ev);
    const s = f.speedup;
    const why = f.speedup_detail || f.speedup_basis || 'basis not stated';
    if (typeof s === 'number') box.appendChild(epEl('p', {text: `speed-up: ${epNum(s)}\u00d7 (${why})`}));
    else if (f.speedup_detail) box.appendChild(epEl('p', {text: `speed-up: ${f.speedup_detail}`}));
    if (f.fix) box.appendChild(epEl('p', {}, 'fix: ', epEl('code', {text: f.fix})));
    parent.appendChild(box);
  }
  if (!findings.length) parent.appendChild(epEl('p', {text: 'no findings'}));
}

function epComparison(parent, data) {
  for (const cmp of data.comparisons) {
    const a = data.inputs[cmp.a], b = data.inputs[cmp.b], r = cmp.report;
    if (cmp.error) {
      const none = epEl('section', {class: 'comparison', 'data-comparable': 'false'});
      parent.appendChild(none);
      none.appendChild(epEl('h2', {text: `Comparison: B = ${b.label} against A = ${a.label}`}));
      none.appendChild(epEl('p', {class: 'muted', text: `compare: ${cmp.error}`}));
      continue;
    }
    const sec = epEl('section', {class: 'comparison', 'data-comparable': String(r.comparable)});
    parent.appendChild(sec);  // in the document before its charts measure their width
    sec.appendChild(epEl('h2', {text: `Comparison: B = ${b.label} against A = ${a.label}`}));
    if (!r.comparable) {
      const box = epEl('div', {class: 'not-comparable', role: 'alert'}, 'NOT COMPARABLE: the ratios below compare different things');
      const ul = epEl('ul');
      for (const m of r.mismatches) ul.appendChild(epEl('li', {text: m.message}));
      box.appendChild(ul);
      sec.appendChild(box);
    }
    // What changed between A and B, comparable or not (the mismatches name theirs above).
    const shown = new Set(r.mismatches.map(m => m.field));
    const diffs = (r.differences || []).filter(d => !shown.has(d.setting));
    if (diffs.length) {
      const ul = epEl('ul', {class: 'differences'});
      for (const d of diffs) ul.appendChild(epEl('li', {text: d.text}));
      sec.appendChild(epEl('div', {}, epEl('p', {text: 'settings that differ (A \u2192 B):'}), ul));
    }
    if ((r.unverified || []).length) sec.appendChild(epEl('p', {class: 'muted', text: `unverified (recorded on neither side): ${r.unverified.join(', ')}`}));
    const ms = r.metrics.filter(m => typeof m.ratio === 'number');
    epTable(sec, ['test', 'metric', 'A median', 'B median', 'B/A', '95% CI', 'p (Mann-Whitney)', 'n A/B', 'verdict'],
            r.metrics.map(m => typeof m.ratio === 'number'
              ? [m.test, m.metric, m.median_a, m.median_b, epNum(m.ratio, 3), m.ci ? `[${epNum(m.ci[0], 3)}, ${epNum(m.ci[1], 3)}]` : 'n/a',
                 epNum(m.mann_whitney_p) + (m.p_exact ? '' : ' (approx.)'), `${m.n_a}/${m.n_b}`, m.verdict]
              : [m.test, m.metric, null, null, 'n/a', '', '', '', 'no samples or zero baseline']), [0, 0, 1, 1, 1, 0, 1, 0, 0]);
    if (ms.length) {
      epChart(sec, {id: `cmp-${cmp.b}-ratios`, title: 'B/A ratio of medians with 95% bootstrap CI', xLabel: 'test/metric', yLabel: 'B/A',
                    source: 'analysis::compare_documents (percentile bootstrap, 4000 resamples, fixed seed)',
                    categories: ms.map(m => `${m.test}/${m.metric}`), hmarks: [{y: 1, label: 'B = A'}], yZero: true,
                    series: [{name: 'B/A', xs: ms.map((_, i) => i), ys: ms.map(m => m.ratio), lo: ms.map(m => (m.ci ? m.ci[0] : null)),
                              hi: ms.map(m => (m.ci ? m.ci[1] : null)), style: 'bars'}]});
    }
    const rule = r.rule || {};
    if (rule.min_samples_per_side) {
      const t = rule.practical_threshold || {};
      sec.appendChild(epEl('p', {class: 'muted', text: `A verdict needs ${rule.min_samples_per_side} samples per side, p < ${rule.significance} ` +
        `and an interval that excludes 1; a ratio within \u00b1${epNum(t.tokens_per_s * 100)} % (tokens/s, ms), \u00b1${epNum(t.bytes * 100)} % (bytes) ` +
        `or \u00b1${epNum(t.j * 100)} % (J) is no practical difference.`}));
    }
    for (const s of r.only_in_a || []) sec.appendChild(epEl('p', {class: 'muted', text: `only in A: ${s}`}));
    for (const s of r.only_in_b || []) sec.appendChild(epEl('p', {class: 'muted', text: `only in B: ${s}`}));
  }
  // Decode latency of every bench input on one axis: the phones next to each other.
  const series = [];
  data.inputs.forEach((inp, i) => {
    if (inp.kind !== 'bench') return;
    const steps = [];
    for (const r of inp.document.results || []) for (const rep of r.repetitions || []) for (const s of rep.decode_step_ms || []) steps.push(s);
    if (!steps.length) return;
    steps.sort((x, y) => x - y);
    series.push({name: `${String.fromCharCode(65 + Math.min(i, 25))}: ${inp.label}`, xs: steps, ys: steps.map((_, j) => (j + 1) / steps.length * 100), style: 'line'});
  });
  if (series.length > 1) {
    epChart(parent, {id: 'cmp-latency-cdf', title: 'Decode latency CDF, every input', xLabel: 'decode step (ms)', yLabel: 'share of steps at or below (%)',
                     source: 'every decode step of every test of each input, pooled', series});
  }
}

// explain: B against A as a product of factors per phase, and the speed B reaches after
// each fix as a waterfall ending at the hardware line.
function epExplain(parent, data) {
  for (const ex of data.explanations || []) {
    const a = data.inputs[ex.a], b = data.inputs[ex.b];
    const sec = epEl('section', {class: 'explanation'});
    parent.appendChild(sec);
    sec.appendChild(epEl('h2', {text: `Why B = ${b.label} differs from A = ${a.label}`}));
    if (ex.error) { sec.appendChild(epEl('p', {class: 'muted', text: `explain: ${ex.error}`})); continue; }
    const e = ex.explanation;
    for (const n of e.notes || []) sec.appendChild(epEl('p', {class: 'muted', text: n}));
    for (const p of e.phases || []) {
      // The explanation holds rates (load: loads per second); load reads as ms.
      const load = p.phase === 'load';
      const shown = v => (load ? (v > 0 ? 1000 / v : null) : v);
      const unit = load ? 'ms' : 'tok/s';
      sec.appendChild(epEl('h3', {text: `${p.phase}: B/A = ${epNum(p.ratio, 3)} (A ${epNum(shown(p.a_tokens_per_s))} ${unit}, B ${epNum(shown(p.b_tokens_per_s))} ${unit})`}));
      epTable(sec, ['factor', 'on', 'x B/A', 'basis', 'evidence', 'fix'],
              p.factors.map(f => [f.id, f.side || '', epNum(f.factor, 3), f.basis, f.detail, f.fix || ''])
                .concat([['product', '', epNum(p.product, 3), `= measured B/A ${epNum(p.ratio, 3)}`, '', '']]), [0, 0, 1, 0, 0, 0]);
      const steps = p.steps || [];
      if (p.verdict) {
        sec.appendChild(epEl('p', {class: 'verdict', text: p.verdict}));
        for (const c of p.closing_commands || []) sec.appendChild(epEl('p', {class: 'muted', text: `to close it: ${c}`}));
      }
      if (p.chain_withheld) {
        sec.appendChild(epEl('p', {text: 'What B reaches after each fix: not shown, the factors above do not add up'}));
        for (const u of p.unmeasured || []) sec.appendChild(epEl('p', {class: 'muted', text: `named without a factor: ${u}`}));
        for (const n of p.notes || []) sec.appendChild(epEl('p', {class: 'muted', text: n}));
        continue;
      }
      sec.appendChild(epEl('p', {text: `What B reaches after each fix, largest first: ` +
        `${steps.slice(0, -1).map(s => epNum(shown(s.tokens_per_s))).join(' \u2192 ')} (hardware line ${epNum(shown(p.hardware_line_tokens_per_s))}) ${unit}`}));
      epChart(sec, {id: `explain-${ex.b}-${p.phase}`, title: `${p.phase}: what B reaches after each fix (${load ? 'first load, ms' : 'tok/s'})`,
                    xLabel: 'step', yLabel: unit, source: 'analysis::explain (edgeprobe explain A B)',
                    categories: steps.map(s => s.label), yZero: true,
                    hmarks: [{y: shown(p.a_tokens_per_s), label: 'A as measured'}],
                    series: [{name: 'B', xs: steps.map((_, i) => i), ys: steps.map(s => shown(s.tokens_per_s)), style: 'bars'}]});
      for (const u of p.unmeasured || []) sec.appendChild(epEl('p', {class: 'muted', text: `named without a factor: ${u}`}));
      for (const n of p.notes || []) sec.appendChild(epEl('p', {class: 'muted', text: n}));
    }
  }
}

function epRender() {
  const started = performance.now();
  const data = JSON.parse(document.getElementById('edgeprobe-data').textContent);
  const root = document.getElementById('report');
  const kinds = data.inputs.map(i => i.kind);
  document.title = `edgeprobe report: ${data.inputs.map(i => i.label).join(' vs ')}`;
  document.getElementById('subtitle').textContent =
    `${data.inputs.length > 1 ? 'comparison of ' : ''}${data.inputs.map((i, k) => `${i.kind} ${i.label}`).join(', ')}`;
  if (data.comparisons.length) epComparison(root, data);
  epExplain(root, data);
  const grid = epEl('div', {class: data.inputs.length === 2 ? 'inputs side-by-side' : 'inputs'});
  root.appendChild(grid);
  data.inputs.forEach((inp, i) => {
    const sec = epEl('section', {class: `input ${inp.kind}`, 'data-kind': inp.kind});
    const letter = data.inputs.length > 1 ? `${String.fromCharCode(65 + Math.min(i, 25))}: ` : '';
    sec.appendChild(epEl('h2', {text: `${letter}${inp.kind} ${inp.label}`}));
    grid.appendChild(sec);
    epProvenance(sec, inp.document.provenance);
    epEndpointThreads = epServerThreads(inp.document.provenance);
    const render = {bench: epBench, session: epSession, doctor: epDoctor}[inp.kind];
    render(sec, inp.document, `in${i}`);
  });
  document.body.dataset.kinds = kinds.join(',');
  document.body.dataset.charts = String(document.querySelectorAll('figure.chart').length);
  document.body.dataset.renderMs = String(Math.round(performance.now() - started));
  document.body.dataset.render = 'done';
}

(function () {
  const errors = [];
  const note = msg => {
    errors.push(String(msg));
    const box = document.getElementById('errors');
    box.hidden = false;
    box.textContent = 'This report failed to render completely:\n' + errors.join('\n');
    document.body.dataset.errors = String(errors.length);
  };
  window.addEventListener('error', e => note(e.message));
  try { epRender(); } catch (e) { note(e && e.stack ? e.stack : e); document.body.dataset.render = 'failed'; }
})();
