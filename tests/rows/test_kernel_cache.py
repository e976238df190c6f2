"""The server's compiled kernels are cached outside the package (a read-only site-packages still gets a cache), in
the folder the settings name, and a second process loads them instead of compiling."""
import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from sparkps.rows.kernel_cache import cache_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unwritable(tmp_path):
    """A folder path no process can create, root included: it lies under a regular file."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    return str(blocker / "cache")


def test_the_cache_folder_is_the_first_of_the_settings_that_can_be_written(tmp_path):
    temp = str(tmp_path / "tmp")
    os.makedirs(temp)
    assert cache_dir({"NUMBA_CACHE_DIR": "/numba/own", "SPARKPS_CACHE_DIR": str(tmp_path)}, temp) == "/numba/own"
    assert cache_dir({"SPARKPS_CACHE_DIR": str(tmp_path / "c")}, temp) == str(tmp_path / "c" / "numba")
    assert cache_dir({"XDG_CACHE_HOME": str(tmp_path / "x")}, temp) == str(tmp_path / "x" / "sparkps" / "numba")
    fallback = cache_dir({"SPARKPS_CACHE_DIR": unwritable(tmp_path)}, temp)
    assert fallback == os.path.join(temp, "sparkps-cache-%d" % os.getuid(), "numba")
    assert stat.S_IMODE(os.stat(os.path.dirname(fallback)).st_mode) == 0o700
    assert cache_dir({"SPARKPS_CACHE_DIR": unwritable(tmp_path)}, unwritable(tmp_path)) is None


def test_a_temporary_folder_others_can_write_is_never_used(tmp_path):
    temp = tmp_path / "tmp"
    shared = temp / ("sparkps-cache-%d" % os.getuid())
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    assert cache_dir({"SPARKPS_CACHE_DIR": unwritable(tmp_path)}, str(temp)) is None


PROBE = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import kernels
    assert kernels.double(21) == 42
    stats = kernels.double.stats
    print(json.dumps({"hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
""")

KERNELS = textwrap.dedent("""
    from sparkps.rows.kernel_cache import kernel

    @kernel()
    def double(x):
        return 2 * x
""")


def load_kernels(package, monkeypatch):
    """Import ``package/kernels.py`` in this process as ``kernels`` (the name the next process imports it by: a
    cache entry names its module), for this test only."""
    spec = importlib.util.spec_from_file_location("kernels", package / "kernels.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "kernels", module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_read_only_package_compiles_once_into_the_cache_folder_and_the_next_process_loads_it(tmp_path,
                                                                                                monkeypatch):
    package = tmp_path / "site-packages"
    package.mkdir()
    (package / "kernels.py").write_text(KERNELS)
    package.chmod(0o555)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPARKPS_CACHE_DIR", str(cache))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    double = load_kernels(package, monkeypatch).double
    assert double(21) == 42
    assert (sum(double.stats.cache_hits.values()), sum(double.stats.cache_misses.values())) == (0, 1)
    cached = [name for _, _, files in os.walk(cache / "numba") for name in files]
    assert any(name.endswith(".nbi") for name in cached) and any(name.endswith(".nbc") for name in cached)

    env = dict(os.environ, PYTHONPATH=ROOT, SPARKPS_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", PROBE, str(package)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"hits": 1, "misses": 0}
    assert sorted(os.listdir(package)) == ["kernels.py"]      # nothing written beside the source
