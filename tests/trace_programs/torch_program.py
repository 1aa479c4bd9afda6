"""PyTorch: one of each thing the recorder must attribute. torch has no write-combined
allocation; its pinned allocator caches blocks, so a loop allocates for real at least once."""
import torch

N = 1 << 22
h = torch.ones(N)
d = h.to("cuda", non_blocking=True)  # @pageable
p = torch.ones(N).pin_memory()
d2 = p.to("cuda", non_blocking=True)  # @pinned
torch.cuda.synchronize()
for i in range(3):
    q = torch.empty(1 << 20, pin_memory=True)  # @loop-alloc
    del q
