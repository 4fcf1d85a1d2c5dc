"""A small CNN trained with DataLoader, Adadelta and StepLR (PyTorch spelling; the tests apply the rule)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 2 * 2, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.log_softmax(self.fc2(x), dim=1)


def build():
    return Net()


def run(model, data):
    """Two epochs of Adadelta with StepLR over a DataLoader; per-step losses, the test metric, the lrs."""
    x, y = torch.tensor(data["x"]), torch.tensor(data["y"])
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=False, pin_memory=False)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses, lrs = [], []
    for epoch in range(2):
        model.train()
        for batch_idx, (xb, yb) in enumerate(loader):
            optimizer.zero_grad()
            loss = F.nll_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        output = model(x)
        test_loss += F.nll_loss(output, y, reduction="sum").item()
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(y.view_as(pred)).sum().item()
    return {
        "losses": torch.tensor(losses, dtype=torch.float64).numpy(),
        "lrs": torch.tensor(lrs, dtype=torch.float64).numpy(),
        "test_loss": torch.tensor(test_loss, dtype=torch.float64).numpy(),
        "correct": torch.tensor(correct, dtype=torch.float64).numpy(),
        "bn1.running_mean": model.bn1.running_mean.numpy(),
        "fc2.weight": model.fc2.weight.detach().numpy(),
    }
