import pytest


def _devices():
    devices = ["cpu"]
    try:
        from nnkit.backends.device import cuda_is_available
    except ImportError:
        return devices
    if cuda_is_available():
        devices.append("cuda")
    return devices


@pytest.fixture(params=_devices())
def device(request):
    return request.param
