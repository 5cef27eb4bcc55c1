#!/usr/bin/env bash
# GPU check of the service, run on a machine with an NVIDIA GPU and no Rust: fpgagdrd
# with the simulated card and a CUDA frame ring, then the pipeline benchmark with the
# ring in CUDA memory and in host memory. Prepare on the build machine:
#   appliance/scripts/fetch-deps.sh
#   cargo build --release -p fpgagdrd --bins --benches
#   mkdir -p .deps/device && cp target/release/fpgagdrd .deps/device/ &&
#     cp "$(ls -t target/release/deps/pipeline_fps-* | grep -v '\.d$' | head -1)" .deps/device/pipeline_fps &&
#     strip .deps/device/*
# then copy the tree with .deps/{onnxruntime,device,share} to the GPU machine and run
#   OUT=<results dir> appliance/scripts/gpu-check.sh
# Figures from 2026-11-29 on an H200 are in docs/benchmarks.md.
set -u
: "${OUT:=$PWD/target/gpu-check}"
mkdir -p "$OUT"
export ORT_DYLIB_PATH=$PWD/.deps/onnxruntime/libonnxruntime.so FPGAGDR_DATA_DIR=$PWD/.deps/share
nvidia-smi -L; nproc
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
print("CHECK memory.kind =", s["memory"]["kind"], "; top1 on chelsea =", r["top5"][0]["label"], "; d2h in stages:", "d2h" in r["latency_us"])
PY
kill "$pid"; wait "$pid"
FPGAGDR_BENCH_SECS=8 .deps/device/pipeline_fps | tee "$OUT/bench_cuda.md"
FPGAGDR_NO_CUDA=1 FPGAGDR_BENCH_SECS=8 .deps/device/pipeline_fps | tee "$OUT/bench_host.md"
