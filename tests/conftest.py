"""Shared fixtures."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Run the test with one torch thread (MKL's threaded eigvalsh / svdvals stall for seconds
    per call when the 2 cores are oversubscribed; one thread takes ~20 ms)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
