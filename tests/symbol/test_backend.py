"""sparkps.backend: contexts, the numpy/CuPy switch, and the error when CuPy is missing."""
import subprocess
import sys

import numpy as np
import pytest

from sparkps import backend
from sparkps.errors import BackendUnavailable, ConfigError

HAVE_GPU = backend.gpu_available()


@pytest.mark.parametrize("text,expected", [
    ("cpu", ("cpu", 0)), ("gpu", ("gpu", 0)), ("gpu(2)", ("gpu", 2)), (" gpu( 1 ) ", ("gpu", 1)),
    (None, ("cpu", 0)), (["gpu(3)"], ("gpu", 3))])
def test_context_parse(text, expected):
    ctx = backend.Context.parse(text)
    assert (ctx.device_type, ctx.device_id) == expected
    assert backend.Context.parse(ctx) is ctx


def test_context_constructors_and_equality():
    assert backend.cpu() == backend.Context.parse("cpu")
    assert backend.gpu(1) == backend.Context("gpu", 1)
    assert repr(backend.gpu(1)) == "gpu(1)"
    assert len({backend.cpu(), backend.cpu(0)}) == 1


@pytest.mark.parametrize("bad", ["tpu", "gpu(x)", 3, "cpu(-1)"])
def test_bad_context_is_named(bad):
    with pytest.raises(ConfigError, match="context|device"):
        backend.Context.parse(bad)


def test_cpu_is_numpy():
    assert backend.get_array_module("cpu") is np
    assert backend.get_array_module(np.ones(2)) is np
    array = np.arange(3)
    assert backend.asnumpy(array) is array


def test_copy_into_casts_and_keeps_the_target():
    target = np.zeros((2, 2), np.float32)
    backend.copy_into(target, np.arange(4).reshape(2, 2))
    np.testing.assert_array_equal(target, [[0, 1], [2, 3]])
    assert target.dtype == np.float32


def test_uniform_into_fills_in_place():
    out = np.zeros(1000, np.float32)
    backend.uniform_into(backend.make_rng("cpu", 0), out)
    assert 0 <= out.min() and out.max() < 1 and 0.4 < out.mean() < 0.6


@pytest.mark.skipif(HAVE_GPU, reason="CuPy with CUDA is present here")
def test_gpu_without_cupy_says_how_to_install():
    with pytest.raises(BackendUnavailable, match=r"pip install 'sparkps\[gpu\]'"):
        backend.get_array_module("gpu(0)")
    import sparkps.symbol as sym
    with pytest.raises(BackendUnavailable, match="sparkps\\[gpu\\]"):
        sym.Variable("x").simple_bind("gpu", x=(2,))


# A meta path finder, installed before sparkps is imported, records every attempt to import cupy (and
# refuses it, as on a machine without CuPy): a failed import leaves nothing in sys.modules, so only the
# record shows an eager or accidental ``import cupy``.
CUPY_IMPORT_RECORDER = """
import sys
attempts = []
class RecordCupy:
    def find_spec(self, name, path=None, target=None):
        if name == 'cupy' or name.startswith('cupy.') or name.startswith('cupyx'):
            attempts.append(name)
            raise ImportError('cupy refused by the test')
        return None
sys.meta_path.insert(0, RecordCupy())
"""


def run_recording_cupy_imports(code):
    """Run ``code`` in a fresh interpreter under the recorder; returns the cupy modules it tried to import."""
    script = CUPY_IMPORT_RECORDER + code + "\nprint('cupy imports:', attempts)\n"
    out = subprocess.run([sys.executable, "-c", script], check=True, timeout=120, capture_output=True, text=True)
    line = [x for x in out.stdout.splitlines() if x.startswith("cupy imports:")][-1]
    return eval(line.split(":", 1)[1])  # a list literal printed by the script above


def test_cpu_work_never_tries_to_import_cupy():
    code = ("import numpy as np, sparkps, sparkps.symbol as sym\n"
            "net = sym.SoftmaxOutput(sym.FullyConnected(sym.Variable('data'), num_hidden=3), name='softmax')\n"
            "exe = net.simple_bind('cpu', data=(2, 4), softmax_label=(2,))\n"
            "exe.forward(is_train=True, data=np.ones((2, 4)), softmax_label=np.zeros(2)); exe.backward()\n")
    assert run_recording_cupy_imports(code) == []


def test_the_import_recorder_sees_a_gpu_context_ask_for_cupy():
    """The recorder itself can fail: asking for a GPU array module does try to import cupy."""
    code = ("from sparkps import backend\n"
            "try:\n    backend.get_array_module('gpu(0)')\nexcept Exception:\n    pass\n")
    assert "cupy" in run_recording_cupy_imports(code)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and a CUDA device")
def test_gpu_arrays_round_trip():
    xp = backend.get_array_module("gpu(0)")
    backend.Context.parse("gpu(0)").enter()
    target = xp.zeros(3, dtype=xp.float32)
    backend.copy_into(target, np.array([1, 2, 3]))
    np.testing.assert_array_equal(backend.asnumpy(target), [1, 2, 3])
    assert backend.get_array_module(target) is xp
