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


# A CTR fit in one process from the installed package: the workers' kernels (the batch index, the fused FM ops) and
# the servers' (the row index's probes) all compile, whatever can be written.
READ_ONLY_FIT = textwrap.dedent("""
    import json, os, sys, tempfile
    if len(sys.argv) > 2:
        tempfile.tempdir = sys.argv[2]      # the temporary folder, whatever else tempfile would fall back to
    import numpy as np
    import sparkps, sparkps.nets as nets
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.nets.ctr_fit import fit_ctr, predict_ctr
    from sparkps.rows.index import HashRowIndex
    from sparkps.rows.kernel_cache import cache_dir
    assert sparkps.__file__.startswith(sys.argv[1]), sparkps.__file__
    data = planted_ctr(600, num_fields=3, num_numeric=0, vocab=8, seed=1, fm_scale=1.0, deep_scale=0.0)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(len(data.fields))])
    spec = nets.FeatureSpec(categorical=data.fields, embedding_dim=4, hidden_units=(8,))
    inputs = spec.inputs(ids, None)
    model = fit_ctr(nets.build("fm", spec), inputs, data.labels, num_epoch=1, batch_size=128)
    assert np.isfinite(predict_ctr(model, inputs)).all()
    index = HashRowIndex()
    index.insert(np.arange(5, dtype=np.uint64), np.arange(5, dtype=np.int32))
    assert index.lookup(np.arange(5, dtype=np.uint64)).tolist() == list(range(5))
    print(json.dumps({"cache": cache_dir()}))
""")


READ_ONLY_MOUNTS = ('for folder in "$1" "$2"; do mount --bind "$folder" "$folder" && '
                    'mount -o remount,bind,ro "$folder" || exit 97; done; shift 2; exec "$@"')


@pytest.fixture
def read_only_install(tmp_path):
    """(a function that runs a command with the install folder and a HOME that cannot be written, the install
    folder, a writable temporary folder, the read-only HOME): sparkps copied to a folder made read-only. A root
    process writes whatever the modes say: as root, the command runs in a mount namespace of its own where both
    folders are read-only mounts (the test is skipped where that is not allowed)."""
    import shutil
    install, home, temp = tmp_path / "install", tmp_path / "home", tmp_path / "tmp"
    shutil.copytree(os.path.join(ROOT, "sparkps"), install / "sparkps", ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    temp.mkdir(mode=0o700)
    for folder, _, files in os.walk(install):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)
    home.chmod(0o555)
    wrap = []
    if os.geteuid() == 0:
        wrap = [shutil.which("unshare") or "unshare", "--mount", "sh", "-c", READ_ONLY_MOUNTS, "sh", str(install),
                str(home)]
        probe = subprocess.run(wrap + ["sh", "-c", "touch %s/x" % home], capture_output=True, timeout=60) \
            if shutil.which("unshare") else None
        if probe is None or probe.returncode != 1:
            pytest.skip("no read-only mount for root here: %s" % (probe.stderr.decode()[-300:] if probe else
                                                                   "no unshare"))

    def run(command, env):
        return subprocess.run(wrap + command, env=env, capture_output=True, text=True, timeout=400, cwd=str(tmp_path))
    try:
        yield run, str(install), str(temp), str(home)
    finally:
        for folder, _, _ in os.walk(tmp_path):
            os.chmod(folder, 0o755)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_ctr_fit_from_a_read_only_install_with_a_read_only_home_caches_in_the_private_temporary_folder(
        read_only_install):
    """A read-only install and HOME (no cache setting): numba could cache neither beside the sources nor in the
    user's cache folder, and refused to load the workers' kernels ("cannot cache function '_slot': no locator
    available"). Every kernel is cached in the private temporary folder; with that closed too, they compile
    uncached and the fit still runs."""
    run_read_only, install, temp, read_only = read_only_install
    listing = sorted(os.path.join(d, n) for d, _, names in os.walk(install) for n in names)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": read_only, "TMPDIR": temp, "PYTHONPATH": install,
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}
    run = run_read_only([sys.executable, "-c", READ_ONLY_FIT, install], env)
    assert run.returncode == 0, run.stderr[-3000:]
    cache = json.loads(run.stdout.strip().splitlines()[-1])["cache"]
    assert cache == os.path.join(temp, "sparkps-cache-%d" % os.getuid(), "numba")
    cached = {name.split(".")[0] for _, _, files in os.walk(cache) for name in files if name.endswith(".nbi")}
    assert {"batch_index", "fused_kernels", "kernels"} <= cached, cached

    run = run_read_only([sys.executable, "-c", READ_ONLY_FIT, install, read_only], env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1])["cache"] is None
    assert sorted(os.path.join(d, n) for d, _, names in os.walk(install) for n in names) == listing
