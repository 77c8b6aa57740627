"""The small training loops the unit tests drive, written as a tutorial writes them: a model,
an optimizer, a DataLoader, zero_grad / forward / backward / step."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def dataset(samples=12, features=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(samples, features, generator=g),
                         torch.randn(samples, 2, generator=g))


TRAIN = dataset()  # a job's training set: one object, a loader rebuilt over it per epoch


def loader(batch_size=4, **kwargs):
    return DataLoader(TRAIN, batch_size=batch_size, **kwargs)


def train(model, optimizer, batches, before_step=None):
    """One epoch; returns each step's loss as the job saw it."""
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        if before_step is not None:
            before_step(model)
        optimizer.step()
        losses.append(loss.item())
    return losses
