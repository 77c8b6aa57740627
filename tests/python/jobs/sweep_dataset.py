"""A user's own dataset for the loader sweep: each sample costs SAMPLE_MS of "decoding" (a
sleep), as image decoding does, so that workers pay off and the sweep has something to find."""
import os
import time

import torch
from torch.utils.data import Dataset

SAMPLE_MS = float(os.environ.get("SAMPLE_MS", "2"))


class SlowDecode(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(SAMPLE_MS / 1e3)
        return torch.full((8,), float(i)), i


def make_dataset():
    return SlowDecode()
