#!/usr/bin/env bash
# The GPU figures in ONE device call (a lent H100/H200 machine; ../shared/gpu/README.md):
#
#   echo /.whl/ >> .git/info/exclude; ../shared/gpu/wheelhouse.sh .whl; cp -r ../shared/data/mnist .mnist
#   run(command="bash tests/gpu/device_check.sh", carry=[".whl", ".mnist"], timeout_s=600)
#
# Steps, each under its own time limit, in this order: the wheelhouse's install; `make test-gpu`'s tests
# (tests/gpu) first, so that they always run; BERT-Large at the notebook's defaults (batch 1024,
# sequence 128, precision and micro-batch "auto"; the plan for 1000 steps is shown, then MAX_BERT_STEPS
# steps train with its choices); LLaMA model_size="auto" (7b on an H200); MNIST at its defaults, and one
# epoch at precision bf16; the IPU-vs-GPU study at its defaults; then the launch check (MNIST's and the
# study's steps ran as the policy chose, else the capture's error). The limits add up to DEADLINE (540 s:
# 60 s of a 600 s call are left for the figures, the archive and the transfer); a step never runs past
# the deadline, and one that would start with under 20 s left is skipped and says so. Everything lands
# in $OUT: device_check.tar.gz (logs, executed notebooks), figures.json (what each run recorded),
# summary.txt (each step's rc). The script exits 1 when a step failed or was skipped.
#
#   bash tests/gpu/device_check.sh --cpu     # the same logic on the CPU at tiny sizes (no GPU needed)
#   bash tests/gpu/device_check.sh --plan    # the steps and their limits, and the deadline; runs nothing
set -uo pipefail

MODE=gpu
case "${1:-}" in
  --cpu) MODE=cpu ;;
  --plan) MODE=plan ;;
esac
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
MAX_BERT_STEPS=${MAX_BERT_STEPS:-60}
WORK=$(mktemp -d)
LOGS=$WORK/device_check
mkdir -p "$LOGS"
if [ "$MODE" = plan ]; then
  trap 'rm -rf "$WORK"' EXIT
else
  OUT=${OUT:-$(mktemp -d)}
  mkdir -p "$OUT"
fi
STARTED=$(date +%s)
FAILED=0

if [ "$MODE" = cpu ]; then
  PY=${PYTHON:-$ROOT/.venv/bin/python}
  [ -x "$PY" ] || PY=python3
  DEVICE=cpu
  LIMIT_SCALE=${LIMIT_SCALE:-4}  # a shared CPU starts kernels and imports slowly: the logic, not the clock
  export LABKIT_GPU_TESTS_ON_CPU=1
else
  PY=${PYTHON:-python3}
  DEVICE=cuda
  LIMIT_SCALE=1
fi
DEADLINE=${DEADLINE:-$(( 540 * LIMIT_SCALE ))}
[ "$MODE" = plan ] && echo "deadline ${DEADLINE}"
[ -d .mnist ] && export LABKIT_DATA_DIR=$ROOT/.mnist
[ -z "${LABKIT_DATA_DIR:-}" ] && [ -d ../shared/data/mnist ] && export LABKIT_DATA_DIR=$(cd ../shared/data/mnist && pwd)
export MPLBACKEND=Agg PYTHONUNBUFFERED=1 LABKIT_PROGRESS=text
export LABKIT_CACHE_DIR=${LABKIT_CACHE_DIR:-$WORK/cache} TORCHINDUCTOR_CACHE_DIR=$WORK/inductor

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND under min(LIMIT, time left), logs to NAME.log
# (--plan: says NAME and LIMIT only). --kill-after's 10 s come out of the limit, so a step that hangs
# still ends by its limit.
step() {
  local name=$1 limit=$(( $2 * LIMIT_SCALE )); shift 2
  if [ "$MODE" = plan ]; then
    echo "step $name $limit"
    return
  fi
  local left=$(( DEADLINE - ($(date +%s) - STARTED) ))
  if [ "$left" -lt 20 ]; then
    echo "$name: skipped, ${left} s left of ${DEADLINE}" | tee -a "$LOGS/summary.txt"
    FAILED=1
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0=$(date +%s)
  timeout --kill-after=10 "$(( limit - 10 ))" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  [ $rc -ne 0 ] && FAILED=1
  echo "$name: rc=$rc in $(( $(date +%s) - t0 )) s (limit ${limit} s)$([ $rc -eq 124 ] && echo ', TIMED OUT')" \
    | tee -a "$LOGS/summary.txt"
}

# The wheelhouse (torch and the rest, built by ../shared/gpu/wheelhouse.sh) on a bare GPU machine.
if [ -d .whl ] || [ "$MODE" = plan ]; then
  step pip 30 $PY -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:$ROOT
fi

if [ "$MODE" = gpu ]; then
  BERT=(model_size=large batch_size=1024 max_seq_length=128 max_steps=1000)
  LLAMA=(-p model_size auto)
  MNIST=()
  MNIST_BF16=(-p precision bf16 -p epochs 1)
  STUDY=()
else  # every size shrunk: the logic, not the figures
  BERT=(model_size=micro batch_size=16 max_seq_length=32 max_steps=40)
  MAX_BERT_STEPS=4
  LLAMA=(-p model_size tiny -p batch_size 4 -p steps 6 -p log_steps 3 -p sequence_length 32)
  MNIST=(-p epochs 1 -p max_train_samples 2000 -p max_test_samples 400)
  MNIST_BF16=(-p precision bf16 -p epochs 1 -p max_train_samples 400 -p max_test_samples 80)  # one step: 8 x 50
  STUDY=(-p replicas "[1]" -p micro_batch_sizes "[64]" -p model small)
fi

step environment 10 bash -c 'date -u; uname -a; nvidia-smi 2>&1 | head -15; "$0" -c "import torch, transformers, sys; \
print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"transformers\", \
transformers.__version__); print(torch.cuda.get_device_name() if torch.cuda.is_available() else \"no CUDA\")"; \
git log --oneline -1' "$PY"

# The tests first: on a bare machine they must always run (tests/gpu: every notebook on CUDA at small sizes)
step test_gpu 240 $PY -m pytest tests/gpu -m gpu -p no:cacheprovider -rs -q --durations=10

# BERT-Large: the plan for the defaults (its shown time, precision, micro-batch, launch), then that plan's steps
step bert_large 100 $PY - "$LOGS" "$DEVICE" "$MAX_BERT_STEPS" "${BERT[@]}" <<'EOF'
import json, sys, time
from labkit.testbeds.cerebras import bert_large
logs, device, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
values = {k: int(v) if v.isdigit() else v for k, v in (a.split("=", 1) for a in sys.argv[4:])}
config = bert_large.SPEC.validate(dict(values, target=device, log_steps=min(20, steps)))
t0 = time.perf_counter()
chosen = bert_large.plan(config)
plan_s = time.perf_counter() - t0
print(chosen, "\n(plan took {:.1f} s)".format(plan_s), flush=True)
run = bert_large.run_portable(config.replace(max_steps=steps, log_steps=min(20, steps)), chosen.device,
                              log_path=logs + "/bert_large_portable.log", steps=chosen.steps)
json.dump({"plan": str(chosen), "plan_seconds": plan_s, "params": run.params, "metrics": run.metrics,
           "environment": run.environment, "notes": run.notes, "steady_rate": run.metrics.get("steady_rate"),
           "estimated_seconds_1000_steps": chosen.steps.seconds(config.batch_size * config.max_steps)},
          open(logs + "/bert_large.json", "w"), indent=1, default=str)
EOF
# each notebook through labkit's own runner (a real kernel), into $LOGS/<name>.ipynb
RUN=($PY -m labkit run)
step llama 70 "${RUN[@]}" notebooks/cerebras/llama2_7b.ipynb "$LOGS/llama2_7b.ipynb" -p device "$DEVICE" "${LLAMA[@]}"
step mnist 30 "${RUN[@]}" notebooks/graphcore/mnist.ipynb "$LOGS/mnist.ipynb" -p device "$DEVICE" ${MNIST[@]+"${MNIST[@]}"}
step mnist_bf16 15 "${RUN[@]}" notebooks/graphcore/mnist.ipynb "$LOGS/mnist_bf16.ipynb" -p device "$DEVICE" \
  "${MNIST_BF16[@]}"
step study 30 "${RUN[@]}" notebooks/comparison/ipu_vs_gpu.ipynb "$LOGS/ipu_vs_gpu.ipynb" -p device "$DEVICE" \
  ${STUDY[@]+"${STUDY[@]}"}
# MNIST's and the study's steps ran as the policy chose (a CUDA graph; eager on a CPU), else the capture's error
step launch_check 15 $PY tests/gpu/launch_check.py "$DEVICE" "$LOGS/mnist.ipynb" "$LOGS/mnist_bf16.ipynb" \
  "$LOGS/ipu_vs_gpu.ipynb"
[ "$MODE" = plan ] && exit 0

# figures.json: what each run recorded (read back from the executed notebooks), and the step summary
$PY - "$LOGS" > "$LOGS/figures.log" 2>&1 <<'EOF'
import glob, json, os, sys
from labkit import results
logs = sys.argv[1]
figures = {"summary": open(os.path.join(logs, "summary.txt")).read().splitlines()}
bert = os.path.join(logs, "bert_large.json")
if os.path.exists(bert):
    figures["bert_large"] = json.load(open(bert))
for path in sorted(glob.glob(os.path.join(logs, "*.ipynb"))):
    name = os.path.basename(path)[:-6]
    try:
        figures[name] = [{"name": getattr(r, "name", None), "params": r.params, "metrics": r.metrics,
                          "environment": r.environment, "notes": r.notes} for r in results.read(path).runs]
    except Exception as exc:  # a notebook cut short by its time limit: say so, keep the others
        figures[name] = {"unreadable": repr(exc)}
json.dump(figures, open(os.path.join(logs, "figures.json"), "w"), indent=1, default=str)
print("figures.json:", ", ".join(k for k in figures if k != "summary"))
EOF
echo "total: $(( $(date +%s) - STARTED )) s" | tee -a "$LOGS/summary.txt"
tar -czf "$OUT/device_check.tar.gz" -C "$WORK" device_check
cp "$LOGS/summary.txt" "$OUT/summary.txt"
[ -f "$LOGS/figures.json" ] && cp "$LOGS/figures.json" "$OUT/figures.json"
echo "wrote $OUT/device_check.tar.gz, $OUT/figures.json, $OUT/summary.txt"
exit $FAILED
