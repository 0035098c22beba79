// ONNX Runtime's side of the attention benchmark: one model, one thread count, in this
// process; prints one JSON line.
//
//   node benchmarks/peers/onnxruntime/run.mjs --model DIR/gqa.onnx --dir DIR --threads 1 \
//        [--min-time 1.0] [--profile FILE]
//
// DIR holds x.bin and y.bin (raw float32 [1, T, 768], written by onnx_models.py from
// PyTorch). The session runs on the CPU execution provider with every graph optimisation
// (ORT_ENABLE_ALL), intra-op threads = --threads (the calling thread counts as one), one
// inter-op thread, sequential execution, the CPU memory arena on. One warm-up run, whose
// output is compared with y.bin (max_abs_diff, largest |y|), then as many runs as fill
// --min-time seconds (at least 2). Reports wall and process CPU time per run, peak resident
// set and page faults per run of the timed loop, as torch_side.py does.
// --profile FILE writes ONNX Runtime's own per-operator profile (JSON) of the timed runs.
import { readdirSync, readFileSync, renameSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { createRequire } from "node:module";
import ort from "onnxruntime-node";

function args(argv) {
  const a = { minTime: 1.0 };
  for (let i = 2; i < argv.length; i += 2) {
    const [k, v] = [argv[i], argv[i + 1]];
    if (v === undefined) usage(`missing value for ${k}`);
    if (k === "--model") a.model = v;
    else if (k === "--dir") a.dir = v;
    else if (k === "--threads") a.threads = Number(v);
    else if (k === "--min-time") a.minTime = Number(v);
    else if (k === "--profile") a.profile = v;
    else usage(`unknown option ${k}`);
  }
  if (!a.model || !a.dir || !(a.threads >= 1)) usage("--model, --dir and --threads are required");
  return a;
}

function usage(msg) {
  process.stderr.write(`run.mjs: ${msg}\nusage: node run.mjs --model M.onnx --dir DIR ` +
                       `--threads N [--min-time S] [--profile FILE]\n`);
  process.exit(2);
}

function floats(path) {
  const b = readFileSync(path);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

function usage_now() {
  const r = process.resourceUsage();
  return { faults: r.minorPageFault + r.majorPageFault, maxRSS: r.maxRSS };
}

const a = args(process.argv);
const x = floats(`${a.dir}/x.bin`);
const expected = floats(`${a.dir}/y.bin`);
const T = x.length / 768;
const options = {
  executionProviders: ["cpu"],
  graphOptimizationLevel: "all",
  intraOpNumThreads: a.threads,
  interOpNumThreads: 1,
  executionMode: "sequential",
  enableCpuMemArena: true,
};
// The profile goes to <prefix>_<date>.json beside --profile; renamed to --profile at the end.
const prefix = a.profile ? `${a.profile}.part` : null;
if (prefix) Object.assign(options, { enableProfiling: true, profileFilePrefix: prefix });
const session = await ort.InferenceSession.create(a.model, options);
const feeds = { x: new ort.Tensor("float32", x, [1, T, 768]) };

let t0 = performance.now();
const warm = await session.run(feeds);
const first = performance.now() - t0;
const y = warm.y.data;
if (y.length !== expected.length) {
  process.stderr.write(`run.mjs: output has ${y.length} values, y.bin ${expected.length}\n`);
  process.exit(1);
}
let maxDiff = 0, maxAbs = 0;
for (let i = 0; i < y.length; ++i) {
  maxDiff = Math.max(maxDiff, Math.abs(y[i] - expected[i]));
  maxAbs = Math.max(maxAbs, Math.abs(expected[i]));
}
if (!Number.isFinite(maxDiff)) maxDiff = Infinity;

const iters = Math.max(2, Math.ceil((a.minTime * 1e3) / Math.max(first, 1e-3)));
const u0 = usage_now();
const c0 = process.cpuUsage();
t0 = performance.now();
for (let i = 0; i < iters; ++i) await session.run(feeds);
const elapsed = performance.now() - t0;
const cpu = process.cpuUsage(c0);
const u1 = usage_now();
let profile = null;
if (prefix) {
  session.endProfiling();
  const dir = dirname(prefix), stem = basename(prefix);
  const written = readdirSync(dir).filter((f) => f.startsWith(stem) && f.endsWith(".json")).sort();
  if (written.length) {
    renameSync(join(dir, written[written.length - 1]), a.profile);
    profile = a.profile;
  }
}
const pkg = createRequire(import.meta.url)("onnxruntime-node/package.json");
console.log(JSON.stringify({
  side: "onnxruntime", model: a.model.split("/").pop().replace(/\.onnx$/, ""), T,
  threads: a.threads, iterations: iters, time_ms: elapsed / iters,
  cpu_ms: (cpu.user + cpu.system) / 1e3 / iters, first_call_ms: first,
  peak_rss_MB: u1.maxRSS * 1024 / 1e6, faults: (u1.faults - u0.faults) / iters,
  max_abs_diff: maxDiff, max_abs_output: maxAbs,
  onnxruntime: pkg.version, node: process.version, session_options: options, profile,
}));
