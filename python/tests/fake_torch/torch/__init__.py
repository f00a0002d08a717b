"""A stand-in for torch with only what roctx_utils.torch wraps (the test has no real torch):
torch/__init__ imports torch.autograd.profiler, as the real one does."""
from . import autograd  # noqa: F401
