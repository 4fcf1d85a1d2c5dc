"""The corpus harness's own test program (tests/pytorch_face/test_corpus_manifest.py): a script as the corpus
programs are, run as __main__ under scripts/corpus/shim/_corpus_runner.py, PyTorch spelling."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()

torch.manual_seed(0)
x = torch.linspace(-1, 1, 24).view(8, 3)
y = (x.sum(dim=1, keepdim=True) > 0).float()
model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Dropout(0.5), nn.Linear(5, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
for step in range(args.steps):
    optimizer.zero_grad()
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}")
