"""Small multi-module projects for the interprocedural tests: each a dict of files, with markers.

``# expect: PINxxx`` marks the line a finding must be reported at (the copy, or the call that passes a
buffer into a function that copies it: where the evidence meets); ``# via: PINxxx`` marks a line the
finding's trace must pass through (the copy inside the callee). A project without ``expect`` markers
must stay quiet. One project per pattern and library.
"""

from __future__ import annotations

PROJECTS: dict = {}


def project(name: str, **files: str) -> None:
    PROJECTS[name] = {path.replace("__init__", "\0").replace("__", "/").replace("_DOT_", ".").replace("\0", "__init__"): text
                      for path, text in files.items()}


# ------------------------------------------------------------------ parameters
project("param-helper-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def upload(dev, host, stream):
    cuda.memcpy_htod_async(dev, host, stream)  # via: PIN001

def main():
    stream = cuda.Stream()
    host = np.random.rand(1 << 20).astype(np.float32)
    dev = cuda.mem_alloc(host.nbytes)
    upload(dev, host, stream)  # expect: PIN001
''')

project("param-helper-cupy", main_DOT_py='''
import numpy as np
import cupy as cp

def push(d, h, s):
    d.set(h, stream=s)  # via: PIN001

h = np.zeros(1 << 20, dtype=np.float32)
push(cp.empty(1 << 20, dtype=cp.float32), h, cp.cuda.Stream(non_blocking=True))  # expect: PIN001
''')

project("param-helper-numba", main_DOT_py='''
import numpy as np
from numba import cuda

def prices(rand, low, high):
    return (1.0 - rand) * low + rand * high

def upload(x, stream):
    return cuda.to_device(x, stream)  # via: PIN001

stream = cuda.stream()
d = upload(prices(np.random.random(1 << 20), 5.0, 30.0), stream)  # expect: PIN001
''')

project("param-helper-cudapython", main_DOT_py='''
import numpy as np
from cuda.bindings import runtime as cudart

def download(host, dptr, stream):
    cudart.cudaMemcpyAsync(host.ctypes.data, dptr, host.nbytes,  # via: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)

out = np.empty(1 << 20, dtype=np.float32)
err, dptr = cudart.cudaMalloc(out.nbytes)
err, stream = cudart.cudaStreamCreate()
download(out, dptr, stream)  # expect: PIN001
''')

project("param-helper-torch", main_DOT_py='''
import numpy as np
import torch

def to_gpu(t, device):
    return t.to(device, non_blocking=True)  # via: PIN001

def step(device):
    x = torch.from_numpy(np.random.rand(256, 256).astype(np.float32))
    return to_gpu(x, device)  # expect: PIN001
''')

project("mixed-callers-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def do_inference(host_in, dev_in, stream):
    cuda.memcpy_htod_async(dev_in, host_in, stream)  # via: PIN001
    stream.synchronize()

def fast(n):
    h = cuda.pagelocked_empty(n, np.float32)  # expect: PIN008
    do_inference(h, cuda.mem_alloc(h.nbytes), cuda.Stream())

def slow(n):
    h = np.ones(n, np.float32)
    do_inference(h, cuda.mem_alloc(h.nbytes), cuda.Stream())  # expect: PIN001
''')

project("caller-pinned-helper-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def do_inference(host_in, host_out, dev_in, dev_out, stream):
    cuda.memcpy_htod_async(dev_in, host_in, stream)
    cuda.memcpy_dtoh_async(host_out, dev_out, stream)
    stream.synchronize()

def main(n):
    h_in = cuda.pagelocked_empty(n, np.float32)  # expect: PIN008
    h_out = cuda.pagelocked_empty(n, np.float32)  # expect: PIN008
    do_inference(h_in, h_out, cuda.mem_alloc(h_in.nbytes), cuda.mem_alloc(h_out.nbytes), cuda.Stream())
''')

project("numba-pinned-context-mixed-callers", test_copies_DOT_py='''
import numpy as np
from numba import cuda

def run_copies(A):
    stream = cuda.stream()
    ptr = cuda.device_array_like(A, stream=stream)
    ptr.copy_to_device(A, stream=stream)  # via: PIN001
    ptr.copy_to_host(A, stream=stream)
    stream.synchronize()

def test_pinned():
    A = np.arange(2 * 1024 * 1024)
    with cuda.pinned(A):
        run_copies(A)

def test_unpinned():
    A = np.arange(2 * 1024 * 1024)
    run_copies(A)  # expect: PIN001
''')

# ------------------------------------------------------------------ across modules
project("helper-cross-module-cudapython",
        pkg____init___DOT_py="",
        pkg__cuda_utils_DOT_py='''
from cuda.bindings import runtime as cudart

def h2d(dev_ptr, host_arr, stream):
    cudart.cudaMemcpyAsync(dev_ptr, host_arr.ctypes.data, host_arr.nbytes,  # via: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)

def d2h(host_arr, dev_ptr, stream):
    cudart.cudaMemcpyAsync(host_arr.ctypes.data, dev_ptr, host_arr.nbytes,  # via: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)
''',
        pkg__infer_DOT_py='''
import numpy as np
from cuda.bindings import runtime as cudart
import pkg.cuda_utils as cu
from .cuda_utils import h2d

def run(n):
    err, stream = cudart.cudaStreamCreate()
    x = np.ones(n, dtype=np.float32)
    y = np.empty_like(x)
    err, dx = cudart.cudaMalloc(x.nbytes)
    err, dy = cudart.cudaMalloc(y.nbytes)
    h2d(dx, x, stream)  # expect: PIN001
    cu.d2h(y, dy, stream)  # expect: PIN001
    cudart.cudaStreamSynchronize(stream)
    return float(y.sum())
''')

project("helper-cross-module-pycuda",
        helpers_DOT_py='''
import pycuda.driver as cuda

def upload(dev, host, stream):
    cuda.memcpy_htod_async(dev, host, stream)  # via: PIN001
''',
        main_DOT_py='''
import numpy as np
import pycuda.driver as cuda
from helpers import upload

def main(n):
    stream = cuda.Stream()
    good = cuda.pagelocked_empty(n, np.float32)  # expect: PIN008
    bad = np.zeros(n, np.float32)
    upload(cuda.mem_alloc(good.nbytes), good, stream)
    upload(cuda.mem_alloc(bad.nbytes), bad, stream)  # expect: PIN001
''')

project("return-cross-module-numba",
        data_DOT_py='''
import numpy as np

def make_inputs(n):
    return np.random.rand(n).astype(np.float32)
''',
        main_DOT_py='''
from numba import cuda
from data import make_inputs

stream = cuda.stream()
x = make_inputs(1 << 20)
d = cuda.to_device(x, stream=stream)  # expect: PIN001
''')

project("from-numpy-dict-helper-cross-module-torch",
        data_utils_DOT_py='''
import numpy as np
import torch

def load_sample(path):
    arr = np.load(path)
    return {"image": torch.from_numpy(arr["image"]), "label": torch.from_numpy(arr["label"]).long()}
''',
        serve_DOT_py='''
import torch
from data_utils import load_sample

def predict(model, paths, device):
    out = []
    for p in paths:
        sample = load_sample(p)
        batch = {k: v.to(device, non_blocking=True) for k, v in sample.items()}  # expect: PIN001
        out.append(model(batch["image"]))
    return out
''')

# ------------------------------------------------------------------ holder objects
project("holder-hostdevicemem-pycuda",
        common_DOT_py='''
import numpy as np
import pycuda.driver as cuda

class HostDeviceMem:
    def __init__(self, host_mem, device_mem):
        self.host = host_mem
        self.device = device_mem

def allocate_buffers(sizes_in, sizes_out):
    inputs, outputs = [], []
    for size in sizes_in:
        host = np.empty(size, dtype=np.float32)
        inputs.append(HostDeviceMem(host, cuda.mem_alloc(host.nbytes)))
    for size in sizes_out:
        host = np.empty(size, dtype=np.float32)
        outputs.append(HostDeviceMem(host, cuda.mem_alloc(host.nbytes)))
    return inputs, outputs, cuda.Stream()
''',
        infer_DOT_py='''
import pycuda.driver as cuda

def do_inference(context, inputs, outputs, stream):
    [cuda.memcpy_htod_async(inp.device, inp.host, stream) for inp in inputs]  # via: PIN001
    context.execute_async_v2(stream_handle=stream.handle)
    [cuda.memcpy_dtoh_async(out.host, out.device, stream) for out in outputs]  # via: PIN001
    stream.synchronize()
    return [out.host for out in outputs]
''',
        main_DOT_py='''
from common import allocate_buffers
from infer import do_inference

def main(context):
    inputs, outputs, stream = allocate_buffers([3 * 224 * 224], [1000])
    return do_inference(context, inputs, outputs, stream)  # expect: PIN001
''')

project("holder-hostdevicemem-pinned-pycuda",
        common_DOT_py='''
import numpy as np
import pycuda.driver as cuda

class HostDeviceMem:
    def __init__(self, host_mem, device_mem):
        self.host = host_mem
        self.device = device_mem

def allocate_buffers(sizes):
    inputs = []
    for size in sizes:
        host = cuda.pagelocked_empty(size, np.float32)
        inputs.append(HostDeviceMem(host, cuda.mem_alloc(host.nbytes)))
    return inputs, cuda.Stream()

def do_inference(inputs, stream):
    [cuda.memcpy_htod_async(inp.device, inp.host, stream) for inp in inputs]
    stream.synchronize()
''',
        main_DOT_py='''
import numpy as np
from common import allocate_buffers, do_inference

def main(image):
    inputs, stream = allocate_buffers([1 << 20])
    for _ in range(10):
        np.copyto(inputs[0].host, image)
        do_inference(inputs, stream)
''')

project("holder-dataclass-self-pycuda", engine_DOT_py='''
from dataclasses import dataclass
import numpy as np
import pycuda.driver as cuda

@dataclass
class Tensor:
    name: str
    cpu: np.ndarray
    gpu: int

class Engine:
    def __init__(self, shapes):
        self.stream = cuda.Stream()
        self.out_info = []
        for i, shape in enumerate(shapes):
            cpu = np.empty(shape, dtype=np.float32)
            self.out_info.append(Tensor(str(i), cpu, cuda.mem_alloc(cpu.nbytes)))

    def fetch(self):
        outputs = []
        for info in self.out_info:
            cuda.memcpy_dtoh_async(info.cpu, info.gpu, self.stream)  # expect: PIN001
            outputs.append(info.cpu)
        self.stream.synchronize()
        return outputs
''')

project("holder-field-overwritten-subclass-pycuda",
        model_DOT_py='''
import numpy as np
import pycuda.driver as cuda

class HostDeviceMem:
    def __init__(self, host, device):
        self.host = host
        self.device = device

class Model:
    def __init__(self, n):
        self.stream = cuda.Stream()
        host = cuda.pagelocked_empty(n, np.float32)
        self.inputs = [HostDeviceMem(host, cuda.mem_alloc(host.nbytes))]

    def pre_process(self, images):
        return np.array(images, dtype=np.float32)

    def model_inference(self, data):
        self.inputs[0].host = data
        [cuda.memcpy_htod_async(inp.device, inp.host, self.stream) for inp in self.inputs]  # via: PIN001
''',
        detection_DOT_py='''
from model import Model

class Detection(Model):
    def detect(self, images):
        data = self.pre_process(images)
        return self.model_inference(data)  # expect: PIN001
''')

project("holder-property-setter-cudapython", runtime_DOT_py='''
import ctypes
import numpy as np
from cuda.bindings import runtime as cudart

class HostDeviceMem:
    def __init__(self, size):
        err, ptr = cudart.cudaMallocHost(size * 4)
        self._host = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), (size,))
        err, self.device = cudart.cudaMalloc(size * 4)

    @property
    def host(self):
        return self._host

    @host.setter
    def host(self, arr):
        np.copyto(self._host[:arr.size], arr.flat)

def run(arr):
    err, stream = cudart.cudaStreamCreate()
    inputs = [HostDeviceMem(1 << 20)]
    inputs[0].host = arr.astype(np.float32)
    for inp in inputs:
        cudart.cudaMemcpyAsync(inp.device, inp.host.ctypes.data, inp.host.nbytes,
                               cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
    cudart.cudaStreamSynchronize(stream)
''')

project("dict-of-lists-self-pycuda", runner_DOT_py='''
import numpy as np
import pycuda.driver as cuda

class Runner:
    def __init__(self, names, n):
        self.stream = cuda.Stream()
        self.buffer = {}
        for name in names:
            host = np.zeros(n, dtype=np.float32)
            self.buffer[name] = [host, cuda.mem_alloc(host.nbytes)]

    def infer(self, name):
        cuda.memcpy_htod_async(self.buffer[name][1], self.buffer[name][0], self.stream)  # expect: PIN001
        self.stream.synchronize()
''')

project("self-list-alias-cudapython", wrapper_DOT_py='''
import numpy as np
from cuda import cudart

class Wrapper:
    def __init__(self, sizes):
        host_inputs = []
        for size in sizes:
            host_mem = np.empty(size, dtype=np.float32)
            host_inputs.append(host_mem)
        self.host_inputs = host_inputs
        _, self.stream = cudart.cudaStreamCreate()
        _, self.d_in = cudart.cudaMalloc(sizes[0] * 4)

    def infer(self):
        host_inputs = self.host_inputs
        cudart.cudaMemcpyAsync(self.d_in, host_inputs[0].ctypes.data, host_inputs[0].nbytes,  # expect: PIN001
                               cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, self.stream)
''')

project("holder-dict-literal-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def allocate(n):
    host = cuda.pagelocked_empty(n, np.float32)
    return [{"host": host, "device": cuda.mem_alloc(host.nbytes)}]

def run(n):
    stream = cuda.Stream()
    for inp in allocate(n):
        cuda.memcpy_htod_async(inp["device"], inp["host"], stream)
    stream.synchronize()
''')

# ------------------------------------------------------------------ containers and loop variables
project("comprehension-sliced-cupy", main_DOT_py='''
import numpy as np
import cupy as cp

def upload_all(n, k):
    s = cp.cuda.Stream(non_blocking=True)
    hosts = [np.random.rand(n).astype(np.float32) for _ in range(k)]
    devs = [cp.empty(n, dtype=cp.float32) for _ in range(k)]
    for h, d in zip(hosts[1:], devs[1:]):
        d.set(h, stream=s)  # expect: PIN001
    s.synchronize()
''')

project("comprehension-sliced-numba", main_DOT_py='''
import numpy as np
from numba import cuda

def split(n, k):
    stream = cuda.stream()
    parts = [np.zeros(n, dtype=np.float32) for _ in range(k)]
    first, rest = parts[0], parts[1:]
    d0 = cuda.to_device(first, stream=stream)  # expect: PIN001
    ds = [cuda.to_device(p, stream=stream) for p in rest]  # expect: PIN001
    stream.synchronize()
''')

project("zip-row-views-cupy", main_DOT_py='''
import numpy as np
import cupy as cp

def rows(n, m):
    A = np.random.rand(n, m)
    B = np.zeros((n, m))
    d = cp.empty(m)
    s = cp.cuda.Stream(non_blocking=True)
    for a, b in zip(A, B):
        d.set(a, stream=s)  # expect: PIN001
        d.get(stream=s, out=b, blocking=False)  # expect: PIN001
    s.synchronize()
''')

project("zip-row-views-numba", main_DOT_py='''
import numpy as np
from numba import cuda

def rows(n, m):
    A = np.arange(n * m, dtype=np.float64).reshape(n, m)
    B = np.zeros_like(A)
    stream = cuda.stream()
    for a, b in zip(A, B):
        d = cuda.to_device(a, stream=stream)  # expect: PIN001
        d.copy_to_host(b, stream=stream)  # expect: PIN001
    stream.synchronize()
''')

# `dA` is made on a device nothing in the function names: a torch tensor, CPU or GPU, which the
# non-blocking copies say is on a GPU; the function's own analysis reports them, once, not per caller.
project("zip-row-views-torch", main_DOT_py='''
import torch

def upload_rows(n, m, device):
    A = torch.randn(n, m)
    B = torch.empty(n, m)
    dA = torch.empty(m, device=device)
    for a, b in zip(A, B):
        dA.copy_(a, non_blocking=True)  # expect: PIN001
        b.copy_(dA * 2, non_blocking=True)  # expect: PIN001
    torch.cuda.synchronize()

upload_rows(64, 1 << 15, torch.device("cuda"))
''')

project("star-args-tensors-torch", main_DOT_py='''
import numpy as np
import torch

def to_device(device, *tensors):
    moved = []
    for x in tensors:
        moved.append(x.to(device, non_blocking=True))  # via: PIN001
    return moved

def step(device):
    obs = torch.from_numpy(np.random.rand(1024, 4096).astype(np.float32))
    return to_device(device, obs)  # expect: PIN001
''')

project("pin-memory-per-element-loop-torch", main_DOT_py='''
import torch

def update(steps, n):
    for _ in range(steps):
        local = {"obs": torch.zeros(n, 4), "act": torch.zeros(n)}
        for v in local.values():
            v = v.pin_memory()  # expect: PIN002
    kept = []
    for v in {"obs": torch.zeros(n, 4)}.values():
        kept.append(v.pin_memory())
    return kept
''')

# ------------------------------------------------------------------ returns and PIN005
project("return-d2h-pin005-cupy", main_DOT_py='''
import cupy as cp
import cupyx

def fetch(d, stream):
    out = cupyx.empty_pinned(d.shape, d.dtype)
    d.get(stream=stream, out=out, blocking=False)
    return out

def report(n):
    s = cp.cuda.Stream(non_blocking=True)
    d = cp.arange(n, dtype=cp.float32)
    host = fetch(d, s)
    total = host.sum()  # expect: PIN005
    s.synchronize()
    return total

def report_synced(n):
    s = cp.cuda.Stream(non_blocking=True)
    host = fetch(cp.arange(n, dtype=cp.float32), s)
    s.synchronize()
    return host.sum()
''')

project("return-d2h-pin005-torch",
        fetching_DOT_py='''
import torch

def fetch(y):
    return y.to("cpu", non_blocking=True)
''',
        main_DOT_py='''
import torch
from fetching import fetch

def report(model, x):
    host = fetch(model(x.cuda()))
    return host.numpy().mean()  # expect: PIN005

def report_synced(model, x):
    host = fetch(model(x.cuda()))
    torch.cuda.synchronize()
    return host.numpy().mean()

def cpu_batch(dataset):
    for image, _ in torch.utils.data.DataLoader(dataset):
        image = image.to("cpu", non_blocking=True)
        return float(image.sum())

def moved_here(tensors):
    for t in tensors:
        host = t.to("cpu", non_blocking=True)
        print(host.sum())  # expect: PIN005
''')

project("return-d2h-pin005-numba", main_DOT_py='''
import numpy as np
from numba import cuda

def fetch(d, stream):
    out = cuda.pinned_array(d.shape, dtype=np.float32)
    d.copy_to_host(out, stream=stream)
    return out

def run(n):
    stream = cuda.stream()
    d = cuda.device_array(n, dtype=np.float32, stream=stream)
    host = fetch(d, stream)
    print(host[0])  # expect: PIN005
''')

project("pin006-after-helper-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def refill(buf, value):
    buf[:] = value

def run(n):
    stream = cuda.Stream()
    h = cuda.pagelocked_empty(n, np.float32)  # expect: PIN008
    d = cuda.mem_alloc(h.nbytes)
    cuda.memcpy_htod_async(d, h, stream)
    refill(h, 1.0)  # expect: PIN006
    stream.synchronize()
''')

# ------------------------------------------------------------------ torch directions and batches
project("dataloader-pinned-then-converted-torch", train_DOT_py='''
import torch
from torch.utils.data import DataLoader

def train(model, data, device):
    loader = DataLoader(data, batch_size=32, pin_memory=True)
    for (imgs,) in loader:
        x = imgs.float() / 255.0
        x = x.to(device, non_blocking=True)  # expect: PIN001
        y = imgs.to(device, non_blocking=True)
        model(x, y)
''')

project("dataloader-pinned-param-torch", main_DOT_py='''
import torch
from torch.utils.data import DataLoader

def train(loader, device):
    for images, target in loader:
        images = images.to(device, non_blocking=True)
        target = target.cuda(non_blocking=True)

def main(data, device):
    train(DataLoader(data, batch_size=32, pin_memory=True), device)
''')

project("copy-direction-torch", optim_DOT_py='''
import torch

class Optimizer:
    def __init__(self, sizes):
        self.device = torch.device("cuda", 0)
        self.gpu = [torch.empty(n, dtype=torch.uint8, device=self.device) for n in sizes]
        self.cpu = [torch.empty(n, dtype=torch.uint8, device="cpu") for n in sizes]

    def gather(self):
        for dst, src in zip(self.cpu, self.gpu):
            dst.copy_(src, non_blocking=True)  # expect: PIN001

    def step(self, values, device):
        ptrs = torch.tensor(values, dtype=torch.int64)
        return ptrs.to(device, non_blocking=True)  # expect: PIN001
''')

project("cpu-to-cpu-copy-torch", main_DOT_py='''
import torch

class Batcher:
    def __init__(self, n):
        self.states = torch.zeros(n, 1, 4)

    def put(self, i, state):
        self.states[i].copy_(state)

    def fill(self, states):
        for i in range(10):
            self.states.copy_(torch.zeros(10, 1, 4), non_blocking=True)
''')

project("indexed-by-loop-variable-cupy", main_DOT_py='''
import numpy as np
import cupy as cp

def refit(names):
    weights = {name: np.load(name + ".npy") for name in names}
    fakes = {name: np.ones_like(w) for name, w in weights.items()}
    d = cp.empty(1 << 20, dtype=cp.float32)
    for table in (fakes, weights):
        for name in names:
            d.set(table[name])  # a different buffer each time: each is copied once
    for _ in range(10):
        d.set(weights["bias"])  # expect: PIN007
''')

project("alternative-backends-imported-under-if", backend_a_DOT_py='''
import pycuda.driver as cuda

class Engine:
    def __init__(self, n):
        self.stream = cuda.Stream()
        self.d = cuda.mem_alloc(n)
    def __call__(self, *inputs):
        for x in inputs:
            cuda.memcpy_htod_async(self.d, x, self.stream)  # via: PIN001
        self.stream.synchronize()
''', backend_b_DOT_py='''
from cuda.bindings import runtime as cudart

class Engine:
    def __init__(self, n):
        err, self.stream = cudart.cudaStreamCreate()
        err, self.d = cudart.cudaMalloc(n)
    def __call__(self, *inputs):
        for x in inputs:
            cudart.cudaMemcpyAsync(self.d, x.ctypes.data, x.nbytes,  # via: PIN001
                                   cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, self.stream)
        cudart.cudaStreamSynchronize(self.stream)
''', utils_DOT_py='''
import numpy as np

def blob(im, return_seg=False):
    seg = None
    if return_seg:
        seg = im.astype(np.float32) / 255
    im = np.ascontiguousarray(im).astype(np.float32) / 255
    if return_seg:
        return im, seg
    return im
''', main_DOT_py='''
from utils import blob

def main(method, images):
    if method == "a":
        from backend_a import Engine
    elif method == "b":
        from backend_b import Engine
    else:
        raise NotImplementedError
    engine = Engine(1 << 20)
    for image in images:
        tensor = blob(image, return_seg=False)
        engine(tensor)  # expect: PIN001
''')

project("constant-flag-prunes-an-arm-cupy", main_DOT_py='''
import numpy as np
import cupy as cp
import cupyx

def make(n, pinned):
    if pinned:
        return cupyx.empty_pinned(n, dtype=np.float32)
    return np.empty(n, dtype=np.float32)

def upload(n, s):
    d = cp.empty(n, dtype=cp.float32)
    d.set(make(n, True), stream=s)
    d.set(make(n, pinned=False), stream=s)  # expect: PIN001
''')

# ------------------------------------------------------------------ PIN002 and sizes
project("setup-loop-escape-view-cudapython", buffers_DOT_py='''
import ctypes
import numpy as np
from cuda.bindings import runtime as cudart

def allocate(names, nbytes):
    host = {}
    for name in names:
        err, ptr = cudart.cudaHostAlloc(nbytes, cudart.cudaHostAllocDefault)
        cptr = ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float))
        host[name] = np.ctypeslib.as_array(cptr, (nbytes // 4,))
    raw = []
    for _ in names:
        err, ptr = cudart.cudaMallocHost(nbytes)
        buf = (ctypes.c_byte * nbytes).from_address(ptr)
        raw.append(np.ndarray((nbytes,), dtype=np.uint8, buffer=buf))
    return host, raw
''')

project("arange-size-threshold-numba", main_DOT_py='''
import numpy as np
from numba import cuda

def small():
    ary = np.arange(60).reshape(2, 5, 2, 3)
    for order in "CA":
        cuda.to_device(ary)

def large():
    ary = np.arange(1 << 22)
    for _ in range(4):
        cuda.to_device(ary)  # expect: PIN007
''')

project("pin002-helper-in-loop-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

def upload(d, x, stream):
    h = cuda.pagelocked_empty(x.shape, x.dtype)
    h[:] = x
    cuda.memcpy_htod_async(d, h, stream)
    stream.synchronize()

def run(batches):
    stream = cuda.Stream()
    d = cuda.mem_alloc(1 << 22)
    for x in batches:
        upload(d, x, stream)  # expect: PIN002
''')

# ------------------------------------------------------------------ the checked code's own methods
project("own-methods-numba", devarray_DOT_py='''
import numpy as np

class DeviceArray:
    def __init__(self, data):
        self.data = data
    def copy_to_host(self, ary=None, stream=0):
        return np.array(self.data)
    def copy_to_device(self, ary, stream=0):
        self.data = np.array(ary)

def to_device(ary, stream=0):
    return DeviceArray(ary)

def run(stream):
    h = np.zeros(1024)
    d = to_device(h, stream)
    d.copy_to_device(h, stream=stream)
    out = d.copy_to_host(stream=stream)
    d.copy_to_host(h, stream=stream)
''')

project("own-methods-pycuda", engine_DOT_py='''
import numpy as np
import pycuda.driver as cuda

class Binding:
    def __init__(self, n):
        self.device = cuda.mem_alloc(n * 4)
        self._host = None
    @property
    def host_buffer(self):
        if self._host is None:
            self._host = cuda.pagelocked_empty(1024, np.float32)
        return self._host
    def get_async(self, stream):
        dst = self.host_buffer
        cuda.memcpy_dtoh_async(dst, self.device, stream)
        return dst

def run(n):
    stream = cuda.Stream()
    outputs = [Binding(n)]
    return [o.get_async(stream) for o in outputs]
''')

project("own-methods-cupy", sparse_DOT_py='''
import cupy

class Matrix:
    def __init__(self, data):
        self.data = data
    def get(self, stream=None, blocking=True):
        return self.data.get(stream)

def run(m, stream):
    return m.get(stream, blocking=False)
''')


# ------------------------------------------------------------------ analyses kept while work is under way
# The engine's fields are worked out while run.py's module body (its globals) is being analysed, and its
# __init__ warms up through __call__: the analyses made then see the fields unfinished. Kept after the
# fields are done, they would make the engine's own D2H copy look new at the caller's call (a second,
# misplaced report at run.py's `engine(x)`).
project("engine-warmed-up-in-init-called-from-main", models____init___DOT_py="", models__engine_DOT_py='''
import numpy as np
from cuda.bindings import runtime as cudart


class Engine:
    def __init__(self, n):
        status, self.stream = cudart.cudaStreamCreate()
        self.n = n
        self.outputs = []
        for i in range(2):
            host = np.empty(n, dtype=np.float32)
            status, dev = cudart.cudaMalloc(host.nbytes)
            self.outputs.append((host, dev))
        self.warm_up()

    def warm_up(self):
        for _ in range(3):
            self(np.empty(self.n, dtype=np.float32))  # expect: PIN001

    def __call__(self, x):
        status, dx = cudart.cudaMalloc(x.nbytes)
        cudart.cudaMemcpyAsync(dx, x.ctypes.data, x.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, self.stream)  # via: PIN001
        for host, dev in self.outputs:
            cudart.cudaMemcpyAsync(host.ctypes.data, dev, host.nbytes,  # expect: PIN001
                                   cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, self.stream)
        cudart.cudaStreamSynchronize(self.stream)
        return [host for host, _ in self.outputs]
''', run_DOT_py='''
import numpy as np


def main():
    from models.engine import Engine
    engine = Engine(1 << 20)
    for _ in range(10):
        x = np.random.rand(1 << 20).astype(np.float32)
        engine(x)  # expect: PIN001


if __name__ == "__main__":
    main()
''')


# ------------------------------------------------------------------ library modules reached through the project
# The project re-exports the library module (`from pkg.libs import cudart`, libs.py importing it):
# its names are the library's.
project("reexported-library-module-cudapython", pkg____init___DOT_py="", pkg__libs_DOT_py='''
from cuda.bindings import runtime as cudart  # noqa: F401
''', pkg__mem_DOT_py='''
import numpy as np
from pkg.libs import cudart


def upload(dptr, stream):
    a = np.empty(1 << 20, dtype=np.float32)
    cudart.cudaMemcpyAsync(dptr, a.ctypes.data, a.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)  # expect: PIN001
''')

project("reexported-library-module-pycuda", gpu____init___DOT_py='''
import pycuda.driver as cuda
''', app_DOT_py='''
import numpy as np
from gpu import cuda


def run(dev):
    stream = cuda.Stream()
    host = np.random.rand(1 << 20).astype(np.float32)
    cuda.memcpy_htod_async(dev, host, stream)  # expect: PIN001
''')

project("reexported-library-module-cupy", backend_DOT_py='''
import cupy as xp
import numpy
''', app_DOT_py='''
from backend import xp, numpy


def push():
    h = numpy.zeros(1 << 20, dtype=numpy.float32)
    d = xp.empty(1 << 20, dtype=xp.float32)
    d.set(h, stream=xp.cuda.Stream(non_blocking=True))  # expect: PIN001
''')

# importlib.import_module with a literal, directly or through the project's own import shim (a
# fallback stand-in when the library is missing, a TYPE_CHECKING-only binding).
project("importlib-literal-cudapython", main_DOT_py='''
import importlib
import numpy as np
cudart = importlib.import_module("cuda.bindings.runtime")


def h2d(dptr, stream):
    host = np.empty(1 << 20, dtype=np.float32)
    cudart.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)  # expect: PIN001
''')

project("importlib-shim-cudapython", pkg____init___DOT_py="", pkg__compat_DOT_py='''
import importlib
from typing import TYPE_CHECKING


class _Missing:
    def __init__(self, name):
        self.name = name


def _load(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return _Missing(name)


if TYPE_CHECKING:
    cudart = None
else:
    cudart = _load("cuda.bindings.runtime")
''', pkg__memory_DOT_py='''
from pkg.compat import cudart


def h2d_async(dptr, host, stream):
    cudart.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes,  # via: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
''', tests__test_memory_DOT_py='''
import numpy as np
from pkg.memory import h2d_async


def test_h2d(dptr, stream):
    src = np.arange(1 << 20, dtype=np.float32)
    h2d_async(dptr, src, stream)  # expect: PIN001
''')

# What stays unknown: a module named by something other than a literal, or a literal naming no
# library the tables describe.
project("importlib-unknown-name-is-quiet", main_DOT_py='''
import importlib
import numpy as np


def h2d(name, dptr, stream):
    rt = importlib.import_module(name)
    host = np.empty(1 << 20, dtype=np.float32)
    rt.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes, 1, stream)
    other = importlib.import_module("json")
    other.cudaMemcpyAsync(dptr, host.ctypes.data, host.nbytes, 1, stream)
''')

# src/ layout: a test outside src/ imports the package src/ holds; no other file names a GPU library.
project("src-layout-test-calls-package", pyproject_DOT_toml='''
[project]
name = "gpkg"
''', src__gpkg____init___DOT_py="", src__gpkg__mem_DOT_py='''
from cuda.bindings import runtime as cudart


def h2d_async(dptr, host_arr, stream):
    cudart.cudaMemcpyAsync(dptr, host_arr.ctypes.data, host_arr.nbytes,  # via: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
''', tests__test_mem_DOT_py='''
import numpy as np
from gpkg.mem import h2d_async


def test_roundtrip(ptr, stream):
    src = np.empty(1 << 20, dtype=np.float32)
    h2d_async(ptr, src, stream)  # expect: PIN001
''')

# A dict of allocation keywords made in another module and unpacked into the call: the keywords are
# the dict's (the prefilter reads a file with `**` in a call, though `pin_memory` is not written in it).
project("unpacked-keywords-from-another-module-torch", pkg____init___DOT_py="", pkg__config_DOT_py='''
PINNED = dict(pin_memory=True)
PAGEABLE = dict(dtype=None)
''', main_DOT_py='''
import torch
from pkg.config import PINNED, PAGEABLE


def run(n, dev):
    for i in range(n):
        h = torch.empty(1 << 20, **PINNED)  # expect: PIN002
        h.to(dev, non_blocking=True)
    p = torch.empty(1 << 20, **PAGEABLE)
    p.to(dev, non_blocking=True)  # expect: PIN001
''')

# A method that __init__ calls after storing its argument in a field runs on the object with that field
# (a prefetcher that loads its first batch in the constructor).
project("method-called-in-init-sees-the-fields-set-so-far-torch", data__prefetch_DOT_py='''
import torch


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        self.batch = next(self.loader)
        with torch.cuda.stream(self.stream):
            self.batch = self.batch.cuda(non_blocking=True)  # via: PIN001
''', train_DOT_py='''
import torch
from data.prefetch import Prefetcher


def pageable(dataset):
    return Prefetcher(torch.utils.data.DataLoader(dataset, batch_size=8))  # expect: PIN001


def pinned(dataset):
    return Prefetcher(torch.utils.data.DataLoader(dataset, batch_size=8, pin_memory=True))
''')

project("method-called-in-init-sees-the-fields-set-so-far-cupy", main_DOT_py='''
import numpy as np
import cupy as cp
import cupyx


class Uploader:
    def __init__(self, host):
        self.host = host
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.dev = cp.empty(host.shape, host.dtype)
        self.upload()

    def upload(self):
        self.dev.set(self.host, stream=self.stream)  # via: PIN001


def main(n):
    Uploader(np.zeros(n, np.float32))  # expect: PIN001
    Uploader(cupyx.zeros_pinned(n, np.float32))
''')

# One copy of one buffer is one mistake, however many calls of one function reach it: reported at the first
# (the prefetcher's constructor gets the pageable loader; each `pf.next()` reaches the same copy of the
# same batches).
project("one-report-per-copy-and-buffer-torch", data__prefetch_DOT_py='''
import torch


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.cuda.Stream()
        self.preload()

    def preload(self):
        self.batch = next(self.loader, None)
        if self.batch is None:
            return
        with torch.cuda.stream(self.stream):
            self.batch = self.batch.cuda(non_blocking=True)  # via: PIN001

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        batch = self.batch
        self.preload()
        return batch
''', train_DOT_py='''
import torch
from data.prefetch import Prefetcher


def train(dataset, steps):
    pf = Prefetcher(torch.utils.data.DataLoader(dataset, batch_size=8))  # expect: PIN001
    batch = pf.next()
    for _ in range(steps):
        batch = pf.next()
''')

# Other buffers at the same copy are other mistakes: each call that passes one keeps its report.
project("other-buffers-at-one-copy-keep-their-reports-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda


def upload(dev, host, stream):
    cuda.memcpy_htod_async(dev, host, stream)  # via: PIN001


def main(dev):
    stream = cuda.Stream()
    a = np.zeros(1 << 20, np.float32)
    b = np.ones(1 << 20, np.float32)
    upload(dev, a, stream)  # expect: PIN001
    upload(dev, b, stream)  # expect: PIN001
    upload(dev, a, stream)
''')

# `for x in obj` (and `iter(obj)`) of an object of the checked code runs its class's __iter__ there: a
# prefetching loader wrapping a DataLoader copies each batch non-blocking inside its generator. A factory
# that wraps the loader only when asked, and passes its own `pin_memory=False` parameter on, is decided
# per caller.
project("iterating-an-object-runs-its-iter-torch", data__loader_DOT_py='''
import torch
import torch.utils.data


class PrefetchLoader:
    def __init__(self, loader, device=torch.device("cuda")):
        self.loader = loader
        self.device = device

    def __iter__(self):
        stream = torch.cuda.Stream()
        for images, labels in self.loader:
            with torch.cuda.stream(stream):
                images = images.to(device=self.device, non_blocking=True)  # via: PIN001
            torch.cuda.current_stream().wait_stream(stream)
            yield images, labels


def create_loader(dataset, batch_size, pin_memory=False, use_prefetcher=True):
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, pin_memory=pin_memory)
    if use_prefetcher:
        loader = PrefetchLoader(loader)
    return loader
''', train_DOT_py='''
import torch
from data.loader import PrefetchLoader, create_loader


def wrapped(dataset):
    for images, labels in PrefetchLoader(torch.utils.data.DataLoader(dataset, batch_size=32)):  # expect: PIN001
        pass


def stepped(dataset):
    batches = iter(PrefetchLoader(torch.utils.data.DataLoader(dataset, batch_size=32)))  # expect: PIN001
    return next(batches)


def default_factory(dataset):
    for images, labels in create_loader(dataset, 64):  # expect: PIN001
        pass


def pinned_factory(dataset):
    for images, labels in create_loader(dataset, 64, pin_memory=True):
        pass


def factory_pinned_as_the_command_line_says(dataset, args):
    for images, labels in create_loader(dataset, 64, pin_memory=args.pin_mem):
        pass


def plain_loader(dataset):
    for images, labels in create_loader(dataset, 64, use_prefetcher=False):
        images.cuda(non_blocking=True)  # expect: PIN001
''')

project("iterating-an-object-runs-its-iter-cupy", main_DOT_py='''
import numpy as np
import cupy as cp
import cupyx


class Chunks:
    def __init__(self, host, rows):
        self.host = host
        self.rows = rows
        self.stream = cp.cuda.Stream(non_blocking=True)

    def __iter__(self):
        dev = cp.empty((self.rows, self.host.shape[1]), self.host.dtype)
        for start in range(0, self.host.shape[0], self.rows):
            dev.set(self.host[start:start + self.rows], stream=self.stream)  # via: PIN001
            self.stream.synchronize()
            yield dev


def pageable(n):
    for block in Chunks(np.zeros((n, 1 << 16), np.float32), 64):  # expect: PIN001
        block.sum()


def pinned(n):
    for block in Chunks(cupyx.zeros_pinned((n, 1 << 16), np.float32), 64):
        block.sum()
''')

# The standard library's dicts hold what is stored in them, as `{}` does: a wrapper keeping
# [host, device, nbytes] per tensor in an OrderedDict field, read back by a timing loop in another file.
project("ordered-dict-field-cuda-python", wrapper_DOT_py='''
from collections import OrderedDict, defaultdict
import numpy as np
from cuda.bindings import runtime as cudart


class Wrapper:
    def __init__(self, shapes):
        self.shapes = shapes
        self.buffer = OrderedDict()
        self.spare = defaultdict(list)

    def setup(self):
        for name, shape in self.shapes.items():
            host = np.empty(shape, dtype=np.float32)
            self.buffer[name] = [host, cudart.cudaMalloc(host.nbytes)[1], host.nbytes]
            self.spare[name].append(host)
''', bench_DOT_py='''
from cuda.bindings import runtime as cudart
from wrapper import Wrapper


def bench(steps):
    w = Wrapper({"x": (8, 64, 128, 128), "y": (8, 64, 128, 128)})
    w.setup()
    _, stream = cudart.cudaStreamCreate()
    for _ in range(steps):
        cudart.cudaMemcpyAsync(w.buffer["x"][1], w.buffer["x"][0].ctypes.data, w.buffer["x"][2],  # expect: PIN001
                               cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
        cudart.cudaMemcpyAsync(w.buffer["y"][0].ctypes.data, w.buffer["y"][1], w.buffer["y"][2],  # expect: PIN001
                               cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost, stream)
    cudart.cudaStreamSynchronize(stream)
''')

# A factory's constant reaches the function it makes and returns: `make_worker(pin_memory=False)` gives a
# worker whose stream copies run from pageable buffers, wherever the worker is later called.
project("factory-closure-sees-the-factorys-constant-numba", recon_DOT_py='''
import numpy as np
from numba import cuda


def make_worker(pin_memory=False):
    def work(inputs):
        streams = [cuda.stream() for _ in inputs]
        for a, s in zip(inputs, streams):
            if pin_memory:
                h = cuda.pinned_array(a.shape, dtype=np.float32)  # expect: PIN002
                h[:] = a
            else:
                h = np.array(a, dtype=np.float32)
            d = cuda.to_device(h, stream=s)  # via: PIN001
            s.synchronize()
    return work
''', main_DOT_py='''
import numpy as np
from recon import make_worker


def run(data):
    pageable_worker = make_worker(pin_memory=False)
    pageable_worker(data)  # expect: PIN001


def run_default(data):
    make_worker()(data)  # expect: PIN001


def run_pinned(data):
    pinned_worker = make_worker(pin_memory=True)
    pinned_worker(data)


def run_unknown(data, flag):
    make_worker(pin_memory=flag)(data)
''', defaults_DOT_py='''
from recon import make_worker


def run_default(data):
    make_worker()(data)  # expect: PIN001
''')

# A project's array-module helpers over CuPy's get_array_module, behind an import shim: a NumPy caller
# never takes the arm that moves the state to the GPU (PtyLab's probe engines).
project("array-module-helpers-decide-per-caller-cupy", pkg____init___DOT_py="", pkg__gpu_DOT_py='''
from typing import Any
import numpy as np


def _import_cupy() -> Any:
    try:
        import cupy
        return cupy
    except ImportError:
        return None


_cupy = _import_cupy()
CP_AVAILABLE = _cupy is not None
cp: Any = _cupy if CP_AVAILABLE else np


def get_array_module(*args, **kwargs):
    if CP_AVAILABLE:
        return cp.get_array_module(*args, **kwargs)
    else:
        return np


def is_gpu_array(ary):
    return get_array_module(ary) is not np
''', pkg__probe_DOT_py='''
from pkg.gpu import is_gpu_array


class Probe:
    def __init__(self):
        self.probe = None

    def push(self, update):
        if self.probe is not None:
            if is_gpu_array(update) and not is_gpu_array(self.probe):
                import cupy
                return cupy.array(self.probe) + update  # via: PIN007
        return self.probe
''', test_probe_DOT_py='''
import numpy as np
import cupy
from pkg.probe import Probe


def test_numpy_updates():
    target = np.random.rand(512, 512)
    engine = Probe()
    engine.probe = np.random.rand(512, 512)
    for _ in range(100):
        engine.push(target)


def test_cupy_updates():
    target = cupy.random.rand(512, 512)
    engine = Probe()
    engine.probe = np.random.rand(512, 512)
    for _ in range(100):
        engine.push(target)  # expect: PIN007
''')

# A package that re-exports its modules' names with `from .module import *` in its __init__: the name
# imported from the package is the module's definition (TensorRT's cookbook wrappers).
project("star-reexport-in-package-init-cuda-python", cookbook____init___DOT_py='''
from .wrappers import *  # noqa: F401,F403
from .helpers import *  # noqa: F401,F403
''', cookbook__wrappers_DOT_py='''
import numpy as np
from cuda.bindings import runtime as cudart


class Wrapper:
    def __init__(self):
        self.buffer = {}

    def setup(self, n):
        host = np.empty(n, dtype=np.float32)
        self.buffer["x"] = [host, cudart.cudaMalloc(host.nbytes)[1], host.nbytes]


class _Private:
    pass
''', cookbook__helpers_DOT_py='''
def mark(f):
    return f
''', samples__multistream__main_DOT_py='''
from cuda.bindings import runtime as cudart
from cookbook import Wrapper, mark


@mark
def case(n):
    w = Wrapper()
    w.setup(n)
    _, stream = cudart.cudaStreamCreate()
    cudart.cudaMemcpyAsync(w.buffer["x"][1], w.buffer["x"][0].ctypes.data, w.buffer["x"][2],  # expect: PIN001
                           cudart.cudaMemcpyKind.cudaMemcpyHostToDevice, stream)
''')


# ------------------------------------------------------------------ globals that functions rebind
# `global _POOL; _POOL = [...]` in an init function: what the module's other functions read is what
# the top level and those functions bind to it (Project.rebound_global).
project("rebound-global-torch", pool_DOT_py='''
import torch

_STAGING = None


def init_staging(shape):
    global _STAGING
    _STAGING = torch.empty(shape)


def upload(device):
    return _STAGING.to(device, non_blocking=True)  # expect: PIN001
''', main_DOT_py='''
from pool import init_staging, upload

init_staging((4096, 4096))
x = upload("cuda")
''')

project("rebound-global-list-cupy", main_DOT_py='''
import numpy as np
import cupy as cp

_BUFS = []


def setup(n):
    global _BUFS
    _BUFS = [np.zeros(n, dtype=np.float32) for _ in range(2)]


def push(d, i, stream):
    d.set(_BUFS[i % 2], stream=stream)  # via: PIN001


def run(n):
    setup(n)
    s = cp.cuda.Stream(non_blocking=True)
    for i in range(10):
        push(cp.empty(n, dtype=cp.float32), i, s)  # expect: PIN001
''')

project("rebound-global-pinned-pycuda", main_DOT_py='''
import numpy as np
import pycuda.driver as cuda

_HOST = None


def setup(n):
    global _HOST
    if _HOST is None:
        _HOST = cuda.pagelocked_empty(n, np.float32)


def push(dev, stream):
    cuda.memcpy_htod_async(dev, _HOST, stream)
''')

# A function that binds the global to something the tree does not explain (or that falls back to a
# pageable buffer only when pinning fails) leaves it unknown: no finding.
project("rebound-global-unknown-or-fallback-torch", main_DOT_py='''
import torch

_BUF = None
_POOL = []


def set_buffer(buf):
    global _BUF
    _BUF = buf


def make_pool(n, shape):
    global _POOL
    try:
        _POOL = [torch.empty(shape, pin_memory=True) for _ in range(n)]
    except RuntimeError:
        _POOL = [torch.empty(shape) for _ in range(n)]


def send(device, i):
    a = _BUF.to(device, non_blocking=True)
    b = _POOL[i].to(device, non_blocking=True)
    return a, b
''')


# A static factory of a class another module of the tree defines, re-exported by a package's star
# import (QMTools' `Grid.emptyAs(...)`, survey 42): the factory's object is known where it is used.
project("imported-static-factory-pycuda", grids____init___DOT_py='''
from .core import *
''', grids__core_DOT_py='''
import numpy as np
import pycuda.driver as drv


class Field:
    def __init__(self, shape):
        self.host = np.zeros(shape).astype(np.float32)
        self.dev = drv.mem_alloc(self.host.nbytes)

    @staticmethod
    def like(other):
        return Field(other.host.shape)

    @classmethod
    def cube(cls, n):
        return cls((n, n, n))
''', grids__evolve_DOT_py='''
import pycuda.driver as drv

from grids import Field


def evolve(kernel, field, steps):
    out = Field.like(field)
    cube = Field.cube(64)
    for step in range(steps):
        kernel(field.dev, out.dev, block=(8, 8, 8))
        drv.memcpy_dtoh(out.host, out.dev)  # expect: PIN007
        drv.memcpy_dtoh(cube.host, cube.dev)  # expect: PIN007
''')


_SAME_NAMED_SUPPRESS = '''
from numba import cuda


def suppress(table, thr):
    s = cuda.stream()
    dev = cuda.to_device(table, s)  # via: PIN001
    s.synchronize()
    return dev
'''

# A package's __init__ importing a function from the submodule of the same name (`from
# geom.kernels.suppress import suppress`, dettrack's nms, survey 47): `from geom.kernels import
# suppress` finds the function, which Python bound over the submodule.
project("reexport-over-same-named-submodule-numba", geom____init___DOT_py='''
''', geom__kernels____init___DOT_py='''
from geom.kernels.suppress import suppress
''', geom__kernels__suppress_DOT_py=_SAME_NAMED_SUPPRESS, geom__ops_DOT_py='''
import torch
from geom.kernels import suppress


def run(boxes):
    host = torch.zeros(4096, 5).numpy()
    return suppress(host, 0.5)  # expect: PIN001
''')

# The same with a relative import in the package's __init__ (`from .suppress import suppress`).
project("reexport-relative-over-same-named-submodule-numba", geom____init___DOT_py='''
''', geom__kernels____init___DOT_py='''
from .suppress import suppress
''', geom__kernels__suppress_DOT_py=_SAME_NAMED_SUPPRESS, geom__ops_DOT_py='''
import numpy as np
from geom.kernels import suppress


def run(boxes):
    host = np.zeros((4096, 5), np.float32)
    return suppress(host, 0.5)  # expect: PIN001
''')

# A script that adds a folder of the tree to sys.path and imports a module from there by its bare name
# (SEA-RAFT's `sys.path.append('core')` then `from datasets import fetch_dataloader`, survey 52).
_FLOW_LOADER = '''
import numpy as np
import torch
from torch.utils import data


class PairSet(data.Dataset):
    def __len__(self):
        return 100

    def __getitem__(self, i):
        a = np.random.rand(480, 640, 3).astype(np.float32)
        return torch.from_numpy(a).permute(2, 0, 1)


def make_loader(bs):
    return data.DataLoader(PairSet(), batch_size=bs, shuffle=True, num_workers=4)  # via: PIN001
'''

project("sys-path-append-literal-torch", core__flowdata_DOT_py=_FLOW_LOADER, train_DOT_py='''
import sys
sys.path.append('core')

from flowdata import make_loader


def train(net):
    for pair in make_loader(8):
        net(pair.cuda(non_blocking=True))  # expect: PIN001
''')

project("sys-path-insert-beside-the-file-torch", lib__flowdata_DOT_py=_FLOW_LOADER, tools__train_DOT_py='''
import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))

from flowdata import make_loader


def train(net):
    for pair in make_loader(8):
        net(pair.cuda(non_blocking=True))  # expect: PIN001
''')

# Without the sys.path line the bare name is a library's module, which nothing here explains.
project("no-sys-path-line-stays-unknown-torch", core__flowdata_DOT_py=_FLOW_LOADER.replace("  # via: PIN001", ""),
        train_DOT_py='''
from flowdata import make_loader


def train(net):
    for pair in make_loader(8):
        net(pair.cuda(non_blocking=True))
''')


# ------------------------------------------------------------------ PIN008 defers to a loop in another file
# A batch helper pinning a copy of what it builds and uploading it once (nanoGPT's `get_batch`), in its
# own module, called from the training loop of another (survey 55 EE): PIN002 at the loop, and no
# PIN008 in the helper (a pinning reached from a loop is PIN002's).
project("pin008-defers-to-a-loop-in-another-file", batches_DOT_py='''
import numpy as np
import torch

def get_batch(data, rows, width, device):
    starts = torch.randint(len(data) - width, (rows,))
    x = torch.stack([torch.from_numpy(data[i:i + width].astype(np.int64)) for i in starts])
    return x.pin_memory().to(device, non_blocking=True)
''', train_DOT_py='''
import numpy as np
import torch
from batches import get_batch

data = np.memmap("train.bin", dtype=np.uint16, mode="r")
for step in range(1000):
    x = get_batch(data, 32, 256, "cuda")  # expect: PIN002
''')

project("pin008-stays-where-no-loop-reaches-it", batches_DOT_py='''
import numpy as np
import torch

def get_batch(data, rows, width, device):
    starts = torch.randint(len(data) - width, (rows,))
    x = torch.stack([torch.from_numpy(data[i:i + width].astype(np.int64)) for i in starts])
    return x.pin_memory().to(device, non_blocking=True)  # expect: PIN008
''', probe_DOT_py='''
import numpy as np
from batches import get_batch

data = np.memmap("train.bin", dtype=np.uint16, mode="r")
x = get_batch(data, 32, 256, "cuda")
''')


# ------------------------------------------------------------------ a method copying each buffer of a list
# A TensorRT-sample-style runner (survey 55 EB, trt2023's efficientdet `infer`): one pageable output per
# binding, made once by the set-up loop, and a method that copies each back; a benchmark loop calls it.
project("runner-copies-each-output-per-call-pycuda", runner_DOT_py='''
import numpy as np
import pycuda.driver as drv

class Runner:
    def __init__(self, n_out):
        self.outs = []
        for _ in range(n_out):
            host = np.zeros((1024, 1024), np.float32)
            self.outs.append({"host": host, "dev": drv.mem_alloc(host.nbytes)})

    def fetch(self):
        for o in self.outs:
            drv.memcpy_dtoh(o["host"], o["dev"])  # via: PIN007
        return [o["host"] for o in self.outs]
''', bench_DOT_py='''
import pycuda.autoinit
from runner import Runner

r = Runner(2)
for step in range(200):
    r.fetch()  # expect: PIN007
''')

project("runner-copies-fresh-outputs-per-call-pycuda", runner_DOT_py='''
import numpy as np
import pycuda.driver as drv

class Runner:
    def __init__(self, n_out):
        self.devs = [drv.mem_alloc(1 << 22) for _ in range(n_out)]

    def fetch(self):
        outs = []
        for dev in self.devs:
            host = np.empty((1024, 1024), np.float32)
            drv.memcpy_dtoh(host, dev)
            outs.append(host)
        return outs
''', bench_DOT_py='''
import pycuda.autoinit
from runner import Runner

r = Runner(2)
for step in range(200):
    r.fetch()
''')


# ------------------------------------------------------------------ a decorator factory of another module
# recon-stream (survey 55 EC): `from pkg.chunking import gpu_batch`, `@gpu_batch(chunk)` on a method's
# helper; the wrapper stages the caller's host array through a pinned buffer and hands the body device
# chunks, so the body's `cp.ascontiguousarray` is a device-side copy: nothing to report.
project("decorator-factory-from-another-module-cupy", chunking_DOT_py='''
import numpy as np
import cupy as cp

def gpu_batch(chunk):
    def deco(func):
        def inner(out, src):
            pinned = cp.cuda.alloc_pinned_memory(src[:chunk].nbytes)
            host = np.frombuffer(pinned, src.dtype, src[:chunk].size).reshape(src[:chunk].shape)
            dev = cp.empty(src[:chunk].shape, src.dtype)
            for s in range(0, src.shape[0], chunk):
                host[:] = src[s:s + chunk]
                dev.set(host)
                out[s:s + chunk] = func(dev).get()
        return inner
    return deco
''', recon_DOT_py='''
import numpy as np
import cupy as cp
from chunking import gpu_batch

class Recon:
    def __init__(self):
        self.data = np.zeros((64, 512, 512), np.float32)

    def run(self, out):
        @gpu_batch(8)
        def _body(d):
            return cp.ascontiguousarray(d.swapaxes(1, 2))
        _body(out, self.data)

r = Recon()
final = np.empty((64, 512, 512), np.float32)
for k in range(4):
    r.run(final)
''')

# ------------------------------------------------------------------ namespace packages
# A folder without `__init__.py` (PEP 420) whose module reaches a sibling folder's module with `..`:
# Python resolves it from the root on sys.path, and so does the analysis (lidar-slam-detection's
# TensorRT wrapper, survey 56 FD).
project("namespace-relative-import-pycuda", app__detector_DOT_py='''
import numpy as np
from app.backends.wrapped import Wrapped

class Detector:
    def __init__(self):
        self.backend = Wrapped()

    def process(self, frame):
        x = np.expand_dims(frame, axis=0).astype(np.float32)
        return self.backend.run([x])  # expect: PIN001
''', app__engine_DOT_py='''
import pycuda.driver as drv
import pycuda.gpuarray as gpuarray

class Engine:
    def __init__(self):
        self.stream = drv.Stream()

    def run(self, arrays):
        outs = [gpuarray.to_gpu_async(a, stream=self.stream) for a in arrays]  # via: PIN001
        self.stream.synchronize()
        return outs
''', app__backends__wrapped_DOT_py='''
from ..engine import Engine

class Wrapped:
    def __init__(self):
        self.engine = Engine()

    def run(self, arrays):
        return self.engine.run(arrays)
''')

# ------------------------------------------------------------------ imports under if / try
# One name imported from two modules in the two arms of an `if` (an open-source build and an internal
# one): the module the checked tree holds is the code it explains (FBGEMM's benchmark helper, survey 56 FF).
project("helper-imported-under-if-torch", run_bench_DOT_py='''
import os
import torch

if getattr(os, "in_repo_build", False):
    from timing_utils import time_fn
else:
    from internal.tools.timing_utils import time_fn

def main(batch=8192, width=1000):
    pieces = [torch.randint(0, 100, (width,)) for _ in range(batch)]

    def upload_all(parts):
        return torch.cat(parts, 0).to("cuda", non_blocking=True).sum()  # via: PIN001

    time_fn(upload_all, (pieces,), iters=50)  # expect: PIN001
''', timing_utils_DOT_py='''
def time_fn(fn, args, iters=100):
    for _ in range(iters):
        result = fn(*args)
    return result
''')

# Both modules in the tree: which one runs is not known, and nothing is said.
project("helper-imported-under-if-both-in-tree-torch", run_bench_DOT_py='''
import os
import torch

if getattr(os, "in_repo_build", False):
    from timing_utils import time_fn
else:
    from other_timing import time_fn

def main(batch=8192, width=1000):
    pieces = [torch.randint(0, 100, (width,)) for _ in range(batch)]

    def upload_all(parts):
        return torch.cat(parts, 0).to("cuda", non_blocking=True).sum()

    time_fn(upload_all, (pieces,), iters=50)
''', timing_utils_DOT_py='''
def time_fn(fn, args, iters=100):
    for _ in range(iters):
        result = fn(*args)
    return result
''', other_timing_DOT_py='''
def time_fn(fn, args, iters=100):
    return None
''')
