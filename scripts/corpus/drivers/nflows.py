"""Harness driver for karpathy/pytorch-normalizing-flows (nflib is a library; its notebook, nflib1.ipynb, is the
program): the notebook's training cell on two half-moons, a few steps, with the flow named on the command line.

Written in PyTorch spelling; the harness renames it like the library for the lucid run.
"""

import sys

import numpy as np
import torch
import torch.optim as optim
from nflib.flows import MAF, AffineHalfFlow, NormalizingFlowModel
from nflib.spline_flows import NSF_CL
from torch.distributions import SigmoidTransform, TransformedDistribution, Uniform


def moons(n, rng):
    """Two interleaved half circles with noise (what sklearn's make_moons draws), as float32."""
    t = rng.uniform(0, np.pi, size=n)
    upper = rng.rand(n) < 0.5
    x = np.where(upper, np.cos(t), 1 - np.cos(t))
    y = np.where(upper, np.sin(t), 0.5 - np.sin(t))
    return (np.stack([x, y], 1) + 0.05 * rng.randn(n, 2)).astype(np.float32)


kind = sys.argv[1] if len(sys.argv) > 1 else "realnvp"
torch.manual_seed(0)
prior = TransformedDistribution(Uniform(torch.zeros(2), torch.ones(2)), SigmoidTransform().inv)
if kind == "realnvp":
    flows = [AffineHalfFlow(dim=2, parity=i % 2) for i in range(4)]
elif kind == "maf":
    flows = [MAF(dim=2, parity=i % 2) for i in range(4)]
else:
    flows = [NSF_CL(dim=2, K=8, B=3, hidden_dim=16) for _ in range(2)]
model = NormalizingFlowModel(prior, flows)
optimizer = optim.Adam(model.parameters(), lr=1e-4, weight_decay=1e-5)
print("number of params: ", sum(p.numel() for p in model.parameters()))
rng = np.random.RandomState(0)
model.train()
for k in range(5):
    x = torch.from_numpy(moons(128, rng))
    zs, prior_logprob, log_det = model(x)
    logprob = prior_logprob + log_det
    loss = -torch.sum(logprob)
    model.zero_grad()
    loss.backward()
    optimizer.step()
    print(k, loss.item())
model.eval()
zs, log_det = model.backward(torch.from_numpy(moons(64, rng)))
print("backward log det mean", log_det.mean().item())
