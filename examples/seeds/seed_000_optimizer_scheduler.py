"""Seed 000's optimizer and scheduler usage, runnable: a custom optimizer and scheduler on Lucid's bases,
param groups with their own hyperparameters, and state_dict save/load in the seed's order.

In the seed, ``nn`` is ``lucid_nn`` and ``lucid/optim`` is ``lucid_optim``. The seed's ``MyOptimizer`` and
``MyScheduler`` are written here: an optimizer only says how one parameter is updated (``apply_single``),
a scheduler only says what the learning rates are (``get_lr``); the bases do the bookkeeping.
"""

import copy

import lucid_core as lucid
import lucid_nn as nn
import lucid_nn.functional as F
from lucid_optim import Optimizer
from lucid_optim.lr_scheduler import LRScheduler


class MyOptimizer(Optimizer):
    """SGD with momentum and weight decay: ``buf = m * buf + g``; ``p -= lr * buf``."""

    def __init__(self, params, defaults):
        super().__init__(params, {"momentum": 0.9, "weight_decay": 0.0, **defaults})

    def init_single(self, param, state, group):
        state["momentum_buffer"] = lucid.zeros_like(param)

    def apply_single(self, param, grad, state, group):
        if group["weight_decay"]:
            grad = grad + group["weight_decay"] * param
        buf = state["momentum_buffer"]
        buf.mul_(group["momentum"]).add_(grad)
        param.sub_(buf, alpha=group["lr"])


class MyScheduler(LRScheduler):
    """Halve every group's learning rate every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size=2, last_epoch=-1, verbose=False):
        self.step_size = step_size
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        return [base * 0.5 ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(4, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


lucid.manual_seed(0)
X = lucid.randn(64, 4)
Y = (X[:, 0] > 0).astype(lucid.int64) + (X[:, 1] > 0).astype(lucid.int64)  # 3 classes
loader = [(X[i : i + 16], Y[i : i + 16]) for i in range(0, 64, 16)]
criterion = F.cross_entropy

# a single group: Optimizer + scheduler, the usual loop (zero_grad -> backward -> step, then sched.step())
model = MyModel()
opt = MyOptimizer(model.parameters(), defaults={"lr": 1e-1})
sched = MyScheduler(opt, last_epoch=-1)
for epoch in range(4):
    for x, y in loader:
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    sched.step()  # epoch-wise
    print(f"epoch {epoch}: loss {loss.item():.4f}, lr {sched.last_lr}")

# only Parameters are optimized: a plain tensor is refused
try:
    MyOptimizer([lucid.zeros(3)], defaults={"lr": 1e-3})
except TypeError as e:
    print("TypeError:", e)

# several groups with their own lr / weight_decay; defaults fill in the rest
backbone = {"params": model.backbone.parameters(), "lr": 1e-4}
head = {"params": model.head.parameters(), "lr": 1e-3, "weight_decay": 1e-4}
opt = MyOptimizer([backbone, head], defaults={"lr": 1e-3, "weight_decay": 0.0})
sched = MyScheduler(opt, step_size=1, verbose=True)
for group in opt.param_groups:
    print(f"group: {len(group['params'])} params, lr={group['lr']}, weight_decay={group['weight_decay']}")

# the same parameter in two groups is an error
try:
    opt.add_param_group({"params": model.head.parameters()})
except ValueError as e:
    print("ValueError:", e)

for x, y in loader:
    loss = criterion(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
sched.step()

# state_dict: parameters become indices; the scheduler's state is saved separately
opt_state = opt.state_dict()
sched_state = sched.state_dict()
print("optimizer state indices:", sorted(opt_state["state"]), "groups:", [g["params"] for g in opt_state["param_groups"]])
# ... save to disk (examples/train_digits.py writes these with safetensors) ...
opt_state, sched_state = copy.deepcopy(opt_state), copy.deepcopy(sched_state)

# load in the seed's order: the optimizer first, then a scheduler built on that same optimizer
new_opt = MyOptimizer(
    [{"params": model.backbone.parameters()}, {"params": model.head.parameters()}], defaults={"lr": 1.0}
)
new_opt.load_state_dict(opt_state)
new_sched = MyScheduler(new_opt, step_size=1)
new_sched.load_state_dict(sched_state)
print("restored last_lr:", new_sched.last_lr, "last_epoch:", new_sched.last_epoch)
# as in PyTorch, the scheduler's constructor set the groups' lr back to the schedule's start, and its
# load_state_dict does not touch the groups: they keep the start lr until the next sched.step(). Build the
# scheduler *before* loading the optimizer (as examples/train_digits.py does) to keep the saved lr at once.
print("group lrs now:", [g["lr"] for g in new_opt.param_groups])
new_sched.step()
print("after the next sched.step():", [g["lr"] for g in new_opt.param_groups])
same = all(
    lucid.all(new_opt.state[p]["momentum_buffer"] == opt.state[p]["momentum_buffer"]).item()
    for p in model.parameters()
)
print("momentum buffers restored:", same)
