#!/usr/bin/env bash
# GPU check, run on a machine with an NVIDIA GPU and no Rust: the GPU tests (also under
# compute-sanitizer), the GPU benchmark (host-to-device hop, GPU preprocessing), fpgagdrd
# with the simulated card and a CUDA frame ring, and the pipeline benchmark with the ring
# in CUDA memory and in host memory. Prepare on the build machine:
#   appliance/scripts/fetch-deps.sh
#   cargo build --release -p fpgagdrd --bins --benches
#   cargo test --release -p fpgagdrd --test gpu --no-run
#   rm -rf .deps/device && mkdir -p .deps/device && cp target/release/fpgagdrd .deps/device/
#   for b in $(ls -t target/release/deps/{pipeline_fps,gpu}-*); do   # newest first
#     case $b in *.d) continue;; esac
#     case $("$b" --list 2>&1) in *"gpu: bench"*) n=gpu_bench;; *"pipeline_fps: bench"*) n=pipeline_fps;;
#       *preprocessing*) n=gpu_tests;; *) continue;; esac
#     [ -e ".deps/device/$n" ] || cp "$b" ".deps/device/$n"; done
#   strip .deps/device/*
# then copy the tree with .deps/{onnxruntime,device,share} to the GPU machine and run
#   OUT=<results dir> appliance/scripts/gpu-check.sh
# With ORT_GPU_DIR set (ONNX Runtime with its CUDA provider: appliance/scripts/ort-gpu.sh),
# the GPU tests and the pipeline benchmark run once more with inference on the GPU.
# Figures from 2026-11-29 on an H200 are in docs/benchmarks.md.
set -u
: "${OUT:=$PWD/target/gpu-check}"
mkdir -p "$OUT"
export ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share
nvidia-smi -L; nproc
.deps/device/gpu_tests --nocapture 2>&1 | tee "$OUT/gpu_tests.txt"
/usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 \
  .deps/device/gpu_tests --test-threads 1 2>&1 | tee "$OUT/sanitizer.txt" | tail -3
.deps/device/gpu_bench | tee "$OUT/gpu_bench.md"
.deps/device/fpgagdrd --listen 127.0.0.1:18080 --config /tmp/fg/config.json >"$OUT/svc.out" 2>"$OUT/svc.err" &
pid=$!
sleep 8
python3 - <<'PY' | tee "$OUT/status.txt"
import json, time, urllib.request as u
B = "http://127.0.0.1:18080"
get = lambda p: json.load(u.urlopen(B + p))
s = get("/api/v1/status"); print(json.dumps(s, indent=1))
print(json.dumps(get("/api/v1/results/latest"), indent=1))
req = u.Request(B + "/api/v1/config", data=json.dumps({"source": {"path": "frames/chelsea.png"}}).encode(), method="PATCH", headers={"content-type": "application/json"})
print(u.urlopen(req).status)
time.sleep(4)
r = get("/api/v1/results/latest"); print(json.dumps(r, indent=1))
print("CHECK preprocess =", s["pipeline"]["preprocess"])
print("CHECK memory.kind =", s["memory"]["kind"], "; top1 on chelsea =", r["top5"][0]["label"], "; d2h in stages:", "d2h" in r["latency_us"])
PY
kill "$pid"; wait "$pid"
FPGAGDR_BENCH_SECS=8 .deps/device/pipeline_fps | tee "$OUT/bench_cuda.md"
FPGAGDR_NO_CUDA=1 FPGAGDR_BENCH_SECS=8 .deps/device/pipeline_fps | tee "$OUT/bench_host.md"
if [ -n "${ORT_GPU_DIR:-}" ]; then
  # The CUDA provider's cuBLAS 13 / cuDNN 9: PyTorch's nvidia-* wheels on that machine.
  nv=$(find /opt/torch/.venv/lib -maxdepth 3 -type d -path '*site-packages/nvidia' -print -quit 2>/dev/null)
  export LD_LIBRARY_PATH="$nv/cu13/lib:$nv/cudnn/lib:${LD_LIBRARY_PATH:-}"
  ORT_DYLIB_PATH=$ORT_GPU_DIR/libonnxruntime.so .deps/device/gpu_tests --nocapture 2>&1 | tee "$OUT/gpu_tests_ort_cuda.txt"
  ORT_DYLIB_PATH=$ORT_GPU_DIR/libonnxruntime.so FPGAGDR_BENCH_SECS=8 .deps/device/pipeline_fps | tee "$OUT/bench_cuda_ep.md"
fi
