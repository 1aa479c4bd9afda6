import torch as T
from torch.utils.data import DataLoader


def train(dataset):
    loader = DataLoader(dataset, batch_size=64, shuffle=True, pin_memory=False)
    for x, y in loader:
        x = x.to("cuda", non_blocking=True)


weights = T.randn(1024, 1024)
w = weights.cuda(non_blocking=True)
