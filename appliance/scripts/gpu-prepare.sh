#!/usr/bin/env bash
# Builds what appliance/scripts/gpu-check.sh runs on a GPU machine that has no Rust: the
# release service, the GPU tests and the benchmarks, stripped, in .deps/device/
# (fpgagdrd, gpu_tests, gpu_dmabuf, gpu_bench, pipeline_fps, infer_stage, and the benches
# engine, overlap (fpgagdr-infer) and offer (fpgagdr-sim)). A Debian 12 build
# (glibc 2.36) runs on the H200 machine's Ubuntu 24.04 unchanged.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --locked --release -p fpgagdrd --bins
cargo test --locked --release -p fpgagdrd --test gpu --no-run
cargo test --locked --release -p fpgagdr --test gpu_dmabuf --no-run
cargo bench --locked -p fpgagdrd --bench pipeline_fps --bench infer_stage --no-run
cargo bench --locked -p fpgagdr-infer --bench gpu --bench engine --bench overlap --no-run
cargo bench --locked -p fpgagdr-sim --bench offer --no-run
rm -rf .deps/device
mkdir -p .deps/device
cp target/release/fpgagdrd .deps/device/
# The newest binary of each name (cargo keeps older builds beside it): ls -t sorts by
# time, and cargo's file names have no spaces.
# shellcheck disable=SC2012
mapfile -t bins < <(ls -t target/release/deps/{pipeline_fps,infer_stage,gpu,gpu_dmabuf,engine,overlap,offer}-*)
for b in "${bins[@]}"; do
  case $b in *.d) continue ;; esac
  case $("$b" --list 2>&1) in
    *"gpu: bench"*) n=gpu_bench ;;
    *"pipeline_fps: bench"*) n=pipeline_fps ;;
    *"infer_stage: bench"*) n=infer_stage ;;
    *"engine: bench"*) n=engine ;;
    *"overlap: bench"*) n=overlap ;;
    *"offer: bench"*) n=offer ;;
    *preprocessing*) n=gpu_tests ;;
    *exports_a_dma_buf*) n=gpu_dmabuf ;;
    *) continue ;;
  esac
  [ -e ".deps/device/$n" ] || cp "$b" ".deps/device/$n"
done
strip .deps/device/*
ls -l .deps/device
