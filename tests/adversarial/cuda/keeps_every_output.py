"""A memory leak (seen on the H100, where the verdict blamed the reference): every output is kept, so GPU memory
grows with each call until someone runs out. Whoever does, the verdict is the candidate's runtime_error."""
import torch
import torch.nn as nn

kept = []


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.relu(x)
        kept.append(out)
        return out
