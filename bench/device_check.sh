#!/usr/bin/env bash
# One prepared check for a lent CUDA machine (e.g. one H200), offline.
#
#   bash bench/device_check.sh [DEST]               # DEST defaults to $OUT, else a new temp dir
#   bash bench/device_check.sh --cpu-dry-run [DEST] # every stage on the CPU at tiny sizes
#   GPUKIT_CHECK_DRY_RUN=1 bash bench/device_check.sh [DEST]
#
# Writes exactly two files into DEST: device_check.tar.gz (every stage's log
# and JSON, status.tsv, summary.md) and summary.md (the table). Nothing is
# installed or downloaded: gpukit runs from this working tree through
# PYTHONPATH with what python3 has (torch with CUDA and numpy; pyarrow and
# tqdm are gpukit core dependencies and are reported, and the stages that
# need them skipped, when absent; pytest, faiss, ranx, torchmetrics,
# sentence-transformers, triton are optional: their stages skip with a line).
#
# Stages (bench/device_check.py STAGE, unless noted), each under `timeout`:
#   env        versions, device, which optional modules are present
#   cuda_tests python3 -m pytest -q -m cuda tests/  (CUDA parity tests)
#   kernels    metric kernels at 10k x 100, 1M x 100, 10k x 1000, fraction of the copy-probe bandwidth
#   update     RetrievalEvaluator.update at 1,024 x 100,000 (CUDA events)
#   search     exact bf16 search, N = 1M and 8.8M (if memory allows), d = 768, vs a measured bf16 matmul rate
#   budgets    device paths under torch.cuda.set_sync_debug_mode("error")
#   graph      CUDA-graph capture of update: capture, replay, compare with eager
#   stats      bootstrap / randomization on the device, CPU == device
#   streamed   HostStreamedIndex, overlapped vs synchronous copies (same blocks), == ExactIndex,
#              queries/s and corpus GB/s vs the in-memory index and an H2D copy probe, peak memory
#   streaming  bench/compare_streaming.py --device (torchmetrics etc. if present)
#   stats_ranx bench/compare_stats_ranx.py --device (ranx if present)
#   ivf        gpukit bench with faiss IVF on the GPU (only with faiss-gpu)
#   multi_gpu  bench/multi_gpu_check.py: embed-eval and sharded search on all
#              visible GPUs vs one (only with more than one GPU)
# A global budget (GPUKIT_CHECK_BUDGET, default 450 s) caps every stage's
# timeout, so the whole run, packing included, stays under 8 minutes.
set -u

DRY=${GPUKIT_CHECK_DRY_RUN:-0}
if [ "${1:-}" = "--cpu-dry-run" ]; then
    DRY=1
    shift
fi
cd "$(dirname "$0")/.." || exit 1
DEST="${1:-${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpukit-device-check.XXXXXX")}}"
mkdir -p "$DEST" || exit 1
DEST=$(cd "$DEST" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpukit-check-work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
RESULTS="$WORK/device_check"
mkdir -p "$RESULTS"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg
export PYTHONDONTWRITEBYTECODE=1
PY=${PYTHON:-python3}
BUDGET="${GPUKIT_CHECK_BUDGET:-450}"
START=$(date +%s)
STATUS="$RESULTS/status.tsv"
: > "$STATUS"
FLAG=""
[ "$DRY" = 1 ] && FLAG="--cpu-dry-run"
if [ "$DRY" = 1 ]; then SIZE=small; DEV=cpu; else SIZE=full; DEV=cuda; fi
echo "device check: $([ "$DRY" = 1 ] && echo 'CPU dry run' || echo CUDA), results -> $DEST"

# stage NAME LIMIT_SECONDS COMMAND...   -> RESULTS/NAME.log and one status row
stage() {
    local name=$1 limit=$2
    shift 2
    local left=$((START + BUDGET - $(date +%s)))
    if [ "$left" -lt 10 ]; then
        printf '%s\tSKIPPED (budget spent)\t0\n' "$name" >> "$STATUS"
        echo "SKIPPED: $name (budget spent)"
        return 0
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "== $name (timeout ${limit}s)"
    local t0 rc=0 status=ok
    t0=$(date +%s)
    timeout --kill-after=5 "$limit" "$@" > "$RESULTS/$name.log" 2>&1 || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        status="FAILED (timeout ${limit}s)"
    elif [ "$rc" -ne 0 ]; then
        status="FAILED (rc=$rc)"
    fi
    tail -n 3 "$RESULTS/$name.log"
    printf '%s\t%s\t%s\n' "$name" "$status" "$(($(date +%s) - t0))" >> "$STATUS"
}

skip() {
    printf '%s\tSKIPPED\t0\t%s\n' "$1" "$2" >> "$STATUS"
    echo "SKIPPED: $1 ($2)"
}

has_module() { "$PY" -c "import $1" > /dev/null 2>&1; }

check() { stage "$1" "$2" "$PY" bench/device_check.py "$1" --out "$RESULTS" $FLAG; }

# ------------------------------------------------------------------- stages
if ! "$PY" -c "import torch" > /dev/null 2>&1; then
    skip all "python3 cannot import torch"
else
    check env 40
    if has_module pytest; then check cuda_tests 110; else skip cuda_tests "pytest not installed"; fi
    check kernels 50
    check update 40
    check search 70
    check budgets 30
    check graph 35
    check stats 30
    check streamed 90

    if ! has_module pyarrow || ! has_module tqdm; then
        skip streaming "pyarrow or tqdm (gpukit core dependencies) missing"
    else
        # torchmetrics / sentence-transformers: the script skips what is not installed.
        if [ "$DRY" = 1 ]; then sizes=(--queries 16 --candidates 500 --repeats 1); else sizes=(--repeats 2); fi
        stage streaming 60 "$PY" bench/compare_streaming.py --device "$DEV" "${sizes[@]}"
    fi

    if ! has_module pyarrow || ! has_module tqdm; then
        skip stats_ranx "pyarrow or tqdm (gpukit core dependencies) missing"
    else
        if [ "$DRY" = 1 ]; then sizes=(--queries 50 --resamples 100 --repeats 1 --skip-ranx); else sizes=(--queries 5000 --resamples 10000 --repeats 3); fi
        stage stats_ranx 40 "$PY" bench/compare_stats_ranx.py --device "$DEV" "${sizes[@]}"
    fi

    if [ "$DRY" = 1 ]; then
        skip ivf "CPU dry run (faiss IVF on the GPU only)"
    elif "$PY" -c "import faiss, sys; sys.exit(0 if hasattr(faiss, 'StandardGpuResources') else 1)" > /dev/null 2>&1; then
        stage ivf 40 "$PY" -m gpukit.cli bench --device cuda --synthetic 200000,2000,128 \
            --index IVF1024,Flat --nprobe 16 --latency-budget 0.5 --nprobe-grid 1,16,256,2048 \
            --output "$RESULTS/ivf_report.json"
    else
        skip ivf "faiss with GPU support not installed"
    fi
fi

# ------------------------------------------ multi-GPU section (scale-out)
# bench/multi_gpu_check.py under torchrun, one process per visible GPU:
# gpukit embed-eval and sharded_search on N GPUs vs one, equality and
# timing. Runs only when more than one GPU is visible (the dry run: two CPU
# processes over gloo); otherwise one SKIPPED row says why.
multi_gpu_section() {
    local gpus
    gpus=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2> /dev/null) || gpus=0
    if [ "$DRY" = 1 ]; then
        stage multi_gpu 240 "$PY" bench/multi_gpu_check.py --out "$RESULTS" --nproc 2 --cpu-dry-run
    elif [ "${gpus:-0}" -gt 1 ]; then
        stage multi_gpu 240 "$PY" bench/multi_gpu_check.py --out "$RESULTS" --nproc "$gpus"
    else
        skip multi_gpu "${gpus:-0} GPU(s) visible; the multi-GPU section runs only with more than one"
    fi
}
multi_gpu_section

# --------------------------------------------------------- summary and pack
echo
echo "== summary ($(($(date +%s) - START)) s so far; size $SIZE)"
if ! "$PY" bench/device_check.py summary --out "$RESULTS" --status "$STATUS" --destination "$DEST"; then
    # Without a working python the table is the raw status file.
    { echo "# gpukit device check (summary script failed; raw status)"; echo; cat "$STATUS"; } > "$DEST/summary.md"
    cp "$DEST/summary.md" "$RESULTS/summary.md"
fi
tar -czf "$DEST/device_check.tar.gz" -C "$WORK" device_check
echo "wrote $DEST/device_check.tar.gz and $DEST/summary.md in $(($(date +%s) - START)) s"
