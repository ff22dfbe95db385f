import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """The tests' tensors are tiny: one thread avoids oversubscribing a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
