"""A variational autoencoder (PyTorch spelling; the tests apply the rule).

The noise of the reparameterisation comes from ``data`` so both frameworks see the same draws; the
sampling path (``torch.randn_like``) is exercised by ``sample``.
"""

import torch
import torch.nn.functional as F
from torch import nn, optim


class VAE(nn.Module):
    def __init__(self, d=12, h=10, z=3):
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(d, h)
        self.fc21 = nn.Linear(h, z)
        self.fc22 = nn.Linear(h, z)
        self.fc3 = nn.Linear(z, h)
        self.fc4 = nn.Linear(h, d)
        self.z = z

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps=None):
        std = torch.exp(0.5 * logvar)
        if eps is None:
            eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps=None):
        mu, logvar = self.encode(x.view(-1, 12))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar

    def sample(self, n):
        with torch.no_grad():
            return self.decode(torch.randn(n, self.z, dtype=self.fc3.weight.dtype))


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 12), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def build():
    return VAE()


def run(model, data):
    """Four Adam steps with given noise; losses, first gradients, reconstructions; a sample's shape and range."""
    x = torch.tensor(data["x"])
    noise = torch.tensor(data["eps"])
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    out, losses = {}, []
    model.train()
    for step in range(4):
        optimizer.zero_grad()
        recon, mu, logvar = model(x, noise[step])
        loss = loss_function(recon, x, mu, logvar)
        loss.backward()
        if step == 0:
            out["recon"] = recon.detach().numpy()
            for name, p in model.named_parameters():
                out["grad:" + name] = p.grad.clone().numpy()
        optimizer.step()
        losses.append(loss.item())
    out["losses"] = torch.tensor(losses, dtype=torch.float64).numpy()
    s = model.sample(5)
    out["sample_shape"] = torch.tensor(list(s.size())).numpy()
    out["sample_in_unit_interval"] = torch.tensor(bool(((s >= 0) & (s <= 1)).all())).numpy()
    return out
