#!/usr/bin/env bash
# One prepared check for a lent CUDA machine (e.g. one H200), offline.
#
#   bash bench/device_check.sh            # logs and JSON under $OUT (or a new temp dir)
#
# Uses only what is installed there (python3 with torch and pytest; faiss,
# pytest-benchmark and nvidia-ml-py may be absent): gpukit runs from the
# working tree through PYTHONPATH, nothing is downloaded. Steps, each
# independent, each under a timeout, each followed by `|| echo FAILED`:
#   env          torch / CUDA / faiss / NVML versions, nvidia-smi
#   cuda_tests   python3 -m pytest -q -m cuda tests/   (CUDA parity tests)
#   bench_exact  gpukit bench --device cuda on 1M x 128 synthetic, exact fp16,
#                with the fp32/fp16/bf16 sweep (throughput, roofline fraction)
#   metrics      kernel-only metric throughput, 100k x 100 (bench/bench_metrics.py)
#   search       bench/compare_search.py --device cuda, 1M x 768 (if it exists)
#   bench_ivf    gpukit bench with faiss IVF1024,Flat        (if faiss imports)
#   streaming    bench/compare_streaming.py --device cuda    (if it exists)
#   stats        bench/compare_stats_ranx.py --device cuda   (if it exists)
# and prints a summary table last. A global budget (GPUKIT_CHECK_BUDGET,
# default 420 s) caps every step's timeout so the whole run stays under 8 min.
set -u

cd "$(dirname "$0")/.." || exit 1
OUT_DIR="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpukit-device-check.XXXXXX")}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg
export PYTHONDONTWRITEBYTECODE=1
PY=python3
BUDGET="${GPUKIT_CHECK_BUDGET:-420}"
START=$(date +%s)
SUMMARY="$OUT_DIR/summary.tsv"
: > "$SUMMARY"

# step NAME LIMIT_SECONDS COMMAND...   -> $OUT_DIR/NAME.log, one summary row
step() {
    local name=$1 limit=$2
    shift 2
    local left=$((START + BUDGET - $(date +%s)))
    if [ "$left" -lt 20 ]; then
        printf '%s\tSKIPPED (budget spent)\t0\n' "$name" >> "$SUMMARY"
        echo "SKIPPED: $name (budget spent)"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name (timeout ${limit}s)"
    local t0=$(date +%s) rc=0
    timeout --kill-after=10 "$limit" "$@" > "$OUT_DIR/$name.log" 2>&1 || rc=$?
    local dt=$(($(date +%s) - t0)) status=ok
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="FAILED (timeout ${limit}s)"
    elif [ "$rc" -ne 0 ]; then
        status="FAILED (rc=$rc)"
    fi
    [ "$status" = ok ] || echo "FAILED: $name, see $OUT_DIR/$name.log"
    tail -n 4 "$OUT_DIR/$name.log"
    printf '%s\t%s\t%s\n' "$name" "$status" "$dt" >> "$SUMMARY"
}

skip() {
    printf '%s\tSKIPPED (%s)\t0\n' "$1" "$2" >> "$SUMMARY"
    echo "SKIPPED: $1 ($2)"
}

has_module() { "$PY" -c "import $1" > /dev/null 2>&1; }

# ---------------------------------------------------------------- env
step env 60 bash -c '
  nvidia-smi -L 2>&1 || echo "nvidia-smi not found"
  python3 - <<PYEOF
import importlib, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "cc", f"{p.major}.{p.minor}", "memory GiB", round(p.total_memory / 2**30, 1))
for name in ("faiss", "pynvml", "pytest_benchmark", "hypothesis", "matplotlib", "pyarrow"):
    try:
        mod = importlib.import_module(name)
        extra = " gpu=" + str(hasattr(mod, "StandardGpuResources")) if name == "faiss" else ""
        print(name, getattr(mod, "__version__", "present") + extra)
    except Exception as exc:
        print(name, "ABSENT", type(exc).__name__)
PYEOF' || echo FAILED env

# ------------------------------------------------------- CUDA parity tests
step cuda_tests 170 "$PY" -m pytest -q -m cuda tests/ -p no:cacheprovider \
    --continue-on-collection-errors -o addopts="-ra" || echo FAILED cuda_tests

# ------------------------------------------ exact search on five axes (gpukit bench)
step bench_exact 150 "$PY" -m gpukit.cli bench --device cuda --synthetic 1000000,10000,128 \
    --index exact --dtype fp16 --latency-budget 1 --repeats 5 \
    --hardware-price-per-hour 3.0 --power-price-per-kwh 0.15 \
    --dtype-grid fp32,fp16,bf16 --pareto-json "$OUT_DIR/pareto_exact.json" \
    --pareto-png "$OUT_DIR/pareto_exact.png" --output "$OUT_DIR/bench_exact.json" || echo FAILED bench_exact

# ------------------------------------------------- metric kernel throughput
if has_module pytest_benchmark; then
    step metrics 120 env GPUKIT_BENCH_DEVICE=cuda "$PY" -m pytest -q bench/bench_metrics.py -p no:cacheprovider \
        --benchmark-only --benchmark-json="$OUT_DIR/bench_metrics.json" \
        --benchmark-columns=median,ops || echo FAILED metrics
else
    step metrics 120 bash -c "GPUKIT_BENCH_DEVICE=cuda $PY bench/bench_metrics.py > '$OUT_DIR/bench_metrics.json'" \
        || echo FAILED metrics
fi

# --------------------------------------------- other engineers' comparisons
if [ -f bench/compare_search.py ]; then
    step search 90 "$PY" bench/compare_search.py --device cuda --n-docs 1000000 --dim 768 \
        --n-queries 4096 --json "$OUT_DIR/compare_search.json" || echo FAILED search
else
    skip search "bench/compare_search.py not present"
fi

if has_module faiss; then
    if "$PY" -c "import faiss, sys; sys.exit(0 if hasattr(faiss, 'StandardGpuResources') else 1)"; then
        step bench_ivf 120 "$PY" -m gpukit.cli bench --device cuda --synthetic 1000000,10000,128 \
            --index IVF1024,Flat --nprobe 16 --latency-budget 1 --nprobe-grid 1,4,16,64,256 \
            --pareto-json "$OUT_DIR/pareto_ivf.json" --pareto-png "$OUT_DIR/pareto_ivf.png" \
            --output "$OUT_DIR/bench_ivf.json" || echo FAILED bench_ivf
    else
        step bench_ivf 120 "$PY" -m gpukit.cli bench --device cpu --synthetic 200000,2000,128 \
            --index IVF1024,Flat --nprobe 16 --latency-budget 0.5 --train-size 100000 \
            --output "$OUT_DIR/bench_ivf.json" || echo FAILED bench_ivf
    fi
else
    skip bench_ivf "faiss not installed"
fi

if [ -f bench/compare_streaming.py ]; then
    step streaming 60 "$PY" bench/compare_streaming.py --device cuda || echo FAILED streaming
else
    skip streaming "bench/compare_streaming.py not present"
fi

if [ -f bench/compare_stats_ranx.py ]; then
    step stats 60 "$PY" bench/compare_stats_ranx.py --device cuda || echo FAILED stats
else
    skip stats "bench/compare_stats_ranx.py not present"
fi

# ---------------------------------------------------------------- summary
echo
echo "== summary (logs and JSON in $OUT_DIR, total $(($(date +%s) - START)) s)"
"$PY" - "$OUT_DIR" <<'PYEOF' || { echo "summary script FAILED; raw table:"; cat "$SUMMARY"; }
import json, os, sys
out = sys.argv[1]
rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(out, "summary.tsv")) if line.strip()]
print(f"{'step':<12} {'status':<28} {'seconds':>7}")
for name, status, seconds in rows:
    print(f"{name:<12} {status:<28} {seconds:>7}")

def show(label, path):
    try:
        d = json.load(open(path))
    except Exception as exc:
        print(f"{label}: no report ({type(exc).__name__})")
        return
    q, t, m = d["quality"], d["throughput"], d["memory"]
    k = q["k"]
    roof = t.get("roofline") or {}
    lat = {b["batch_size"]: b["p50_ms"] for b in d["latency"]["batches"]}
    energy = d["infrastructure"]["energy"]
    print(f"{label}: {d['setup']['index']} on {d['infrastructure']['device']['name']}: recall@{k}={q[f'recall@{k}']:.4f} "
          f"nDCG@10={q['nDCG@10']} qps={t['qps']:.0f} roofline={roof.get('fraction', float('nan')):.3f} ({roof.get('bound')}) "
          f"p50 ms by batch={ {b: round(v, 3) for b, v in lat.items()} } build={d['build']['index_seconds']:.2f}s "
          f"index={m['index_bytes'] / 2**20:.1f} MiB peak_search={m['peak_allocation']['search']['bytes']} "
          f"J/query={energy['per_query_joules']} ({energy['reason'] or 'NVML'})")
    pareto = t.get("pareto")
    if pareto:
        print("  front: " + "; ".join(f"{p['params']} recall={p['recall']:.3f} qps={p['qps']:.0f}" for p in pareto["front"]))

show("bench_exact", os.path.join(out, "bench_exact.json"))
show("bench_ivf", os.path.join(out, "bench_ivf.json"))
try:
    d = json.load(open(os.path.join(out, "bench_metrics.json")))
    if "benchmarks" in d:
        for b in d["benchmarks"]:
            print(f"metrics {b['name']:<32} median {b['stats']['median'] * 1e3:9.3f} ms  {b['extra_info'].get('queries_per_s', 0):,.0f} queries/s")
    else:
        for name, r in d["kernels"].items():
            print(f"metrics {name:<32} median {r['median_s'] * 1e3:9.3f} ms  {r['queries_per_s']:,.0f} queries/s")
except Exception as exc:
    print(f"metrics: no report ({type(exc).__name__})")
PYEOF
