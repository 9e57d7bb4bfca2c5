"""Fault: an infinite loop inside compiled C++ (no Python frame to interrupt, the GIL held, as in a pybind11 call).
Built with the C++ compiler directly (a second, where a load_inline build parses torch's headers for half a
minute): what is tested is the loop, not the build."""
import ctypes
import os
import subprocess

import torch.nn as nn

source = 'extern "C" void spin() { volatile long i = 0; while (true) { i = i + 1; } }\n'
folder = os.getcwd()  # the worker's own folder, removed with it
with open(os.path.join(folder, "spin.cpp"), "w") as f:
    f.write(source)
subprocess.run(["c++", "-shared", "-fPIC", "-O1", "spin.cpp", "-o", "spin.so"], cwd=folder, check=True)
spin = ctypes.PyDLL(os.path.join(folder, "spin.so")).spin  # PyDLL: the call keeps the GIL


class ModelNew(nn.Module):
    def forward(self, x):
        spin()
        return x
