#!/usr/bin/env bash
# GPU check, run on a machine with an NVIDIA GPU and no Rust (the H200 test machine: no
# network, no zstd). Prepare on the build machine:
#   appliance/scripts/fetch-deps.sh
#   appliance/scripts/gpu-prepare.sh        # release binaries, stripped, in .deps/device/
#   appliance/scripts/ort-gpu.sh pack       # the GPU ONNX Runtime, in parts
# then bring the tree with .deps/{onnxruntime,device,share} (and models/) to the GPU
# machine, unpack the GPU ONNX Runtime there (`ort-gpu.sh unpack PARTS_DIR`), and run
#   OUT=<results dir> ORT_GPU_DIR=$PWD/.deps/ortgpu/lib appliance/scripts/gpu-check.sh
# GPU_CHECK_STEPS picks what runs (default "cpu sanitizer cuda"; a device call is at most
# 10 minutes, so split them over calls: "tests anchor", "stage", "pipeline cpu", ...).
# DEV_DIR names the folder of the binaries (default .deps/device); STAGE_CASES and
# ENGINE_CASES the cases of `stage` and `engine`; INFER_STAGE_BIN another infer_stage
# binary for `stage` (an earlier build, for before/after pairs in the same lease):
#   cpu   with the CPU-only ONNX Runtime: the GPU tests, the CUDA dma-buf export of the
#         frame ring and its nvidia_p2p fallback (gpu_dmabuf), the GPU benchmark (host-to-device
#         hop, preprocessing kernel, CRC), and
#         fpgagdrd with the simulated card and a CUDA frame ring (status, a PATCH of the
#         config with the API token, the result on a real photograph, /metrics)
#   sanitizer  the GPU tests under compute-sanitizer (memcheck)
#   service  the service check alone with ONNX Runtime's CUDA provider (status with the
#         GPU memory of the ring and the model, a PATCH, the result, /metrics)
#   gputests  the GPU tests alone with ONNX Runtime's CUDA provider (GPU_TESTS_FILTER:
#         names, as libtest filters them; default all)
#   offer the simulated card's offer: 1 MiB frames into a CUDA ring, 1 to 4 C2H channels,
#         link model off and x86-gen3x8 (the `offer` bench of fpgagdr-sim; no ONNX Runtime)
#   engine the model alone (the `engine` bench of fpgagdr-infer): the same ONNX file,
#         runtime, session options, binding and CUDA graphs as the inference stage, on
#         tensors already in GPU memory, fp32 and fp16, batch 1 to 256 (ORT_GPU_DIR)
#   overlap FramePrep alone (the `overlap` bench of fpgagdr-infer): check, preprocess and
#         model on batches of 1 MiB frames in GPU memory, one batch at a time (`finish`)
#         and with batch k+1 checked and preprocessed on a second stream while batch k
#         runs (`submit`/`collect`), fp32 and fp16 at batch 32 and 256 (ORT_GPU_DIR)
#   fp16opts  the engine alone in fp16 at batch 256 under each CUDA provider option
#         measured: layout (prefer_nhwc), cudnn_conv_algo_search,
#         cudnn_conv_use_max_workspace, fuse_conv_bias, one graph per batch size, no
#         graphs; and fp32 with TF32 (ORT_GPU_DIR)
#   live  the pipeline at the card's rate: the simulated card offering 6,661 frames/s of
#         1 MiB frames (1024x1024 mono8 + 64-byte header) with the x86-gen3x8 link model
#         and 10,000 frames/s with the link model off, two C2H channels, drop-oldest,
#         the service's default batching: inference.max_batch chosen (64 on a discrete
#         GPU), the batch limit and wait chosen as frames arrive for the default latency
#         target (5 ms); LIVE_BATCH sets inference.max_batch and LIVE_TARGET_US
#         inference.latency_target_us instead (overrides, not the default); 30 s each
#         (LIVE_SECS), fp32 and fp16 (LIVE_PRECISIONS), LIVE_CASES "LINK:FPS ...":
#         offered, captured, missed and dropped frames, mean batch, the batch choice
#         (aim, limit, reason), every stage's p50/p99/max (ORT_GPU_DIR). fp16 runs one
#         CUDA graph padded to the largest batch (every batch costs a batch of 64), which
#         no choice brings within 5 ms at 6,661 frames/s; FPGAGDR_FP16_GRAPH_PER_SIZE=1
#         (exported) captures one per size instead, as fp32 does
#   cuda  = tests stage pipeline anchor, with ONNX Runtime's CUDA provider (ORT_GPU_DIR):
#         the GPU tests, the same
#         service check, the inference stage from a full ring (fp32 / fp16, batch 1 to
#         256), the pipeline at 1 MiB with the link model off (`wait`, with the simulated
#         card's ceiling), frames offered at 2000/s, and the PyTorch anchor of the same
#         network (appliance/scripts/torch-anchor.py) in the same run
# Every step writes OUT/<step>.txt and goes on when one fails; the summary lists each
# step's exit status. Figures from these runs are in docs/benchmarks.md, each from:
#   §12.0 the simulated card's offer (1-4 C2H channels, link off and x86-gen3x8): offer
#   §12.0 the pipeline offered 6,661 and 10,000 frames/s, fp32 and fp16, as a user runs
#         it (default batching): live; the rows with max batch 16 by hand:
#         LIVE_BATCH=16 LIVE_CASES=x86-gen3x8:6661 (an override, not the default)
#   §12.0 inference stage, engine alone, PyTorch, batch 1/8/32/256: stage engine anchor
#         (before/after in one lease: INFER_STAGE_BIN with STAGE_CASES)
#   §12.0 where the stage loses to the engine: overlap; fp16 provider options: fp16opts
#   §12.0 GPU memory in status (and after a restart): service; gputests with
#         GPU_TESTS_FILTER=the_model_s_gpu_memory_after_a_restart_is_its_own
#   §5, §8 the GPU tests, service check, pipeline at 1 MiB, 2,000 frames/s: cpu, cuda
#   §5.4 compute-sanitizer: sanitizer
set -u
: "${OUT:=$PWD/target/gpu-check}"
mkdir -p "$OUT"
steps=${GPU_CHECK_STEPS:-cpu sanitizer cuda}
dev=${DEV_DIR:-$PWD/.deps/device}
cpu_ort=$PWD/.deps/onnxruntime/libonnxruntime.so
export FPGAGDR_DATA_DIR=${FPGAGDR_DATA_DIR:-$PWD/.deps/share}
TOKEN=gpu-check-token-0123456789
export NCCL_NVLS_ENABLE=0

run() { # run NAME SECONDS COMMAND...: OUT/NAME.txt, status in OUT/summary.txt
  local name=$1 limit=$2 rc
  shift 2
  printf '== %s\n' "$name"
  # Through bash -c, so that the shell functions below (exported) can be timed out too.
  timeout "$limit" bash -c '"$@"' "$name" "$@" >"$OUT/$name.txt" 2>&1
  rc=$?
  printf '%-28s exit %s\n' "$name" "$rc" | tee -a "$OUT/summary.txt"
  tail -n 4 "$OUT/$name.txt"
}

service() { # service ORT_LIBRARY: fpgagdrd on a CUDA ring, its status, a PATCH, /metrics
  local ort=$1 dir pid
  dir=$(mktemp -d)
  printf '{"inference": {"max_batch": 8}, "ring": {"entries": 16}}\n' >"$dir/config.json"
  ORT_DYLIB_PATH=$ort FPGAGDR_TOKEN=$TOKEN "$dev/fpgagdrd" --listen 127.0.0.1:18080 \
    --config "$dir/config.json" >"$dir/svc.out" 2>"$dir/svc.err" &
  pid=$!
  sleep 10
  python3 - "$TOKEN" <<'PY'
import json, sys, time, urllib.request as u
B, token = "http://127.0.0.1:18080", sys.argv[1]
get = lambda p: json.load(u.urlopen(B + p))
s = get("/api/v1/status"); print(json.dumps(s, indent=1))
print(json.dumps(get("/api/v1/results/latest"), indent=1))
req = u.Request(B + "/api/v1/config", method="PATCH",
                data=json.dumps({"source": {"path": "frames/chelsea.png"}}).encode(),
                headers={"content-type": "application/json", "authorization": "Bearer " + token})
print("PATCH", u.urlopen(req).status)
time.sleep(6)
r = get("/api/v1/results/latest"); print(json.dumps(r, indent=1))
m = u.urlopen(B + "/metrics").read().decode()
print("\n".join(l for l in m.splitlines() if "batch" in l or "gpu_memory" in l))
s2 = get("/api/v1/status")
print("CHECK memory.kind =", s["memory"]["kind"], "; preprocess =", s["pipeline"]["preprocess"])
print("CHECK inference =", s2["pipeline"]["inference"])
print("CHECK gpu memory =", s2["memory"].get("gpu"))
print("CHECK batch =", s2["pipeline"]["batch"], "; top1 on chelsea =", r["top5"][0]["label"],
      "; stages:", sorted(r["latency_us"]))
assert r["top5"][0]["label"] == "tiger cat", r
PY
  local rc=$?
  kill "$pid"
  wait "$pid"
  tail -n 5 "$dir/svc.err"
  rm -rf "$dir"
  return "$rc"
}

stage() { # stage: the inference stage alone, one process per case
  local case bin=${INFER_STAGE_BIN:-$dev/infer_stage}
  for case in ${STAGE_CASES:-fp32:1 fp32:8 fp32:32 fp32:256 fp16:1 fp16:8 fp16:32 fp16:256}; do
    FPGAGDR_STAGE_CASES=$case FPGAGDR_BENCH_SECS=${BENCH_SECS:-5} "$bin" || echo "| $case | failed: exit $? |"
  done
}

engine() { # engine: the model alone, one process per case
  local case
  for case in ${ENGINE_CASES:-fp32:1 fp32:8 fp32:32 fp32:256 fp16:1 fp16:8 fp16:32 fp16:256}; do
    FPGAGDR_ENGINE_CASES=$case FPGAGDR_BENCH_SECS=${BENCH_SECS:-3} "$dev/engine" || echo "| $case | failed: exit $? |"
  done
}

fp16opts() { # fp16opts: the engine alone under each CUDA provider option, one process each
  local opts
  for opts in FPGAGDR_CUDA_NHWC=1 FPGAGDR_CUDA_NHWC=0 \
    "FPGAGDR_CUDA_NHWC=1 FPGAGDR_CUDNN_SEARCH=exhaustive" \
    "FPGAGDR_CUDA_NHWC=1 FPGAGDR_CUDNN_MAX_WORKSPACE=0" \
    "FPGAGDR_CUDA_NHWC=1 FPGAGDR_CUDA_FUSE_CONV_BIAS=1" \
    "FPGAGDR_CUDA_NHWC=1 FPGAGDR_FP16_GRAPH_PER_SIZE=1" FPGAGDR_STAGE_GRAPHS=0; do
    echo "## $opts"
    # shellcheck disable=SC2086 # the options are words for env
    env $opts FPGAGDR_ENGINE_CASES="${FP16OPTS_CASES:-fp16:256}" FPGAGDR_BENCH_SECS="${BENCH_SECS:-3}" \
      "$dev/engine" || echo "| $opts | failed: exit $? |"
  done
  echo "## fp32, FPGAGDR_CUDA_TF32=1"
  FPGAGDR_CUDA_TF32=1 FPGAGDR_ENGINE_CASES=fp32:256 FPGAGDR_BENCH_SECS="${BENCH_SECS:-3}" \
    "$dev/engine" || echo "| fp32 TF32 | failed: exit $? |"
}

live() { # live: the pipeline offered the card's rate, one process per case
  local p c
  for p in ${LIVE_PRECISIONS:-fp32 fp16}; do
    for c in ${LIVE_CASES:-x86-gen3x8:6661 off:10000}; do
      FPGAGDR_BENCH_PRECISION=$p FPGAGDR_BENCH_LINK=${c%%:*} FPGAGDR_BENCH_FPS=${c##*:} \
        FPGAGDR_BENCH_CHANNELS=2 FPGAGDR_BENCH_SECS=${LIVE_SECS:-30} FPGAGDR_BENCH_MODES=drop_oldest \
        FPGAGDR_BENCH_BATCH="${LIVE_BATCH:-0}" FPGAGDR_BENCH_RING=128 FPGAGDR_BENCH_CEILING=0 \
        FPGAGDR_BENCH_TARGET_US="${LIVE_TARGET_US:-}" \
        "$dev/pipeline_fps" || echo "| $p $c | failed: exit $? |"
    done
  done
}

export -f service stage engine fp16opts live
export dev TOKEN
has() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi -L
nproc
if has cpu; then
  export ORT_DYLIB_PATH=$cpu_ort
  run gpu_tests 300 "$dev/gpu_tests" --nocapture
  run gpu_dmabuf 60 "$dev/gpu_dmabuf" --nocapture
  run gpu_bench 300 "$dev/gpu_bench"
  run status_cpu_ort 60 service "$cpu_ort"
fi
if has sanitizer; then
  export ORT_DYLIB_PATH=$cpu_ort
  run sanitizer 500 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$dev/gpu_tests" --test-threads 1
fi
if has offer; then
  run offer 120 "$dev/offer"
fi
if has cuda || has tests || has stage || has pipeline || has engine || has fp16opts ||
  has overlap || has gputests || has live || has service; then
  [ -n "${ORT_GPU_DIR:-}" ] || { echo "ORT_GPU_DIR is not set (appliance/scripts/ort-gpu.sh)" >&2; exit 1; }
  # The CUDA provider's cuBLAS 13 / cuDNN 9: PyTorch's nvidia-* wheels on that machine.
  nv=$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null)/nvidia
  export LD_LIBRARY_PATH="$nv/cu13/lib:$nv/cudnn/lib:${LD_LIBRARY_PATH:-}"
  export ORT_DYLIB_PATH=$ORT_GPU_DIR/libonnxruntime.so
fi
if has cuda || has tests; then
  run gpu_tests_ort_cuda 400 "$dev/gpu_tests" --nocapture --test-threads 1
  run status_ort_cuda 60 service "$ORT_DYLIB_PATH"
fi
if has service && ! has cuda && ! has tests; then
  run status_ort_cuda 60 service "$ORT_DYLIB_PATH"
fi
if has gputests; then
  # shellcheck disable=SC2086 # the filter is a list of test names
  run gpu_tests_ort_cuda 400 "$dev/gpu_tests" --nocapture --test-threads 1 ${GPU_TESTS_FILTER:-}
fi
if has cuda || has stage; then
  run infer_stage 540 stage
fi
if has engine; then
  run engine 400 engine
fi
if has overlap; then
  run overlap 300 env FPGAGDR_BENCH_SECS="${BENCH_SECS:-3}" "$dev/overlap"
fi
if has fp16opts; then
  run fp16opts 500 fp16opts
fi
if has live; then
  run live 560 live
fi
if has cuda || has pipeline; then
  run pipeline_wait 120 env FPGAGDR_BENCH_SECS=8 FPGAGDR_BENCH_MODES=wait \
    FPGAGDR_BENCH_BATCH=64 FPGAGDR_BENCH_RING=128 "$dev/pipeline_fps"
  run pipeline_2000fps 120 env FPGAGDR_BENCH_SECS=10 FPGAGDR_BENCH_MODES=drop_oldest \
    FPGAGDR_BENCH_FPS=2000 FPGAGDR_BENCH_RING=128 FPGAGDR_BENCH_CEILING=0 "$dev/pipeline_fps"
fi
if has cuda || has anchor; then
  run torch_anchor 300 python3 "$PWD/appliance/scripts/torch-anchor.py"
fi
cat "$OUT/summary.txt"
