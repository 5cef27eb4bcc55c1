#!/usr/bin/env python3
"""The PyTorch anchor for the inference benchmarks: the same network as the default
model (timm's `efficientnet_lite0`, random weights: no download), replayed as a CUDA
graph, fp32 (NCHW) and fp16 (channels-last), batch 1 and large batches.

Owns: nothing the appliance runs. docs/benchmarks.md reads its table beside the
service's figures from the same machine and the same run (appliance/scripts/gpu-check.sh
runs it on the GPU machine, where PyTorch and timm are installed).

Prints one Markdown row per case: images/s (batch / replay time, median of 50 timed
replays of 20 graph launches each, CUDA events) and, for batch 1, the replay's latency
p50 (one launch, 200 replays).
"""

import statistics
import sys

import timm
import torch

BATCHES = [int(b) for b in (sys.argv[1] if len(sys.argv) > 1 else "1,8,32,256").split(",")]


def graph_of(model, x):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.no_grad():
        for _ in range(5):  # warm-up: cuDNN picks its algorithms before capture
            model(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        out = model(x)
    return graph, out


def time_ms(graph, launches):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(launches):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def main():
    torch.backends.cudnn.benchmark = True
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; timm {timm.__version__}")
    print("| network | precision | layout | batch | images/s | batch-1 latency p50 ms |")
    print("|---|---|---|---|---|---|")
    for precision, layout in (("fp32", "NCHW"), ("fp16", "channels-last")):
        dtype = torch.float32 if precision == "fp32" else torch.float16
        fmt = torch.contiguous_format if layout == "NCHW" else torch.channels_last
        model = timm.create_model("efficientnet_lite0", pretrained=False).cuda().eval()
        model = model.to(dtype=dtype, memory_format=fmt)
        for batch in BATCHES:
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype).to(memory_format=fmt)
            graph, _ = graph_of(model, x)
            time_ms(graph, 20)
            per_replay = [time_ms(graph, 20) / 20 for _ in range(50)]
            ips = batch / (statistics.median(per_replay) / 1000)
            lat = ""
            if batch == 1:
                lat = f"{statistics.median(time_ms(graph, 1) for _ in range(200)):.3f}"
            print(f"| timm efficientnet_lite0 | {precision} | {layout} | {batch} | {ips:.0f} | {lat} |")
            del graph
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
