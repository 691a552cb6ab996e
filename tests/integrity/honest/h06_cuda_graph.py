"""A CUDA graph per shape, captured once on static buffers; every call copies its inputs in and replays."""

#!kernelrank requires cuda
import torch
from task import input_t, output_t

_graphs = {}


def _capture(a, b):
    static_a, static_b = a.clone(), b.clone()
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        static_c = (static_a.float() + static_b.float()).half()
    torch.cuda.current_stream().wait_stream(warm)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_c = (static_a.float() + static_b.float()).half()
    return graph, static_a, static_b, static_c


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    if a.shape not in _graphs:
        _graphs[a.shape] = _capture(a, b)
    graph, static_a, static_b, static_c = _graphs[a.shape]
    static_a.copy_(a)
    static_b.copy_(b)
    graph.replay()
    return static_c.clone()
