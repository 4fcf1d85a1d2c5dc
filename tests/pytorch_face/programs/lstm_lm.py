"""An LSTM language model with truncated BPTT and gradient clipping (PyTorch spelling; the tests apply the rule)."""

import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken=17, ninp=8, nhid=12, nlayers=2):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, batch_first=True)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid, self.ntoken = nlayers, nhid, ntoken

    def forward(self, input, hidden):
        emb = self.encoder(input)
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(output)
        return decoded.view(-1, self.ntoken), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def build():
    return RNNModel()


def run(model, data):
    """Three BPTT chunks with clip_grad_norm_ and SGD; losses, first gradients, the total norms."""
    tokens = torch.tensor(data["tokens"])
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    hidden = model.init_hidden(tokens.size(0))
    out, losses, norms = {}, [], []
    model.train()
    for i, start in enumerate(range(0, tokens.size(1) - 1, 5)):
        seq_len = min(5, tokens.size(1) - 1 - start)
        x = tokens[:, start : start + seq_len]
        y = tokens[:, start + 1 : start + 1 + seq_len].contiguous()
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(x, hidden)
        loss = criterion(output, y.view(-1))
        loss.backward()
        if i == 0:
            for name, p in model.named_parameters():
                out["grad:" + name] = p.grad.clone().numpy()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)))
        optimizer.step()
        losses.append(loss.item())
    out["losses"] = torch.tensor(losses, dtype=torch.float64).numpy()
    out["norms"] = torch.tensor(norms, dtype=torch.float64).numpy()
    out["hidden"] = hidden[0].detach().numpy()
    return out
