"""The CuPy backend on a CUDA device against PyTorch CUDA doing the same math, in the same process.

Three parts, each timed as interleaved blocks (repeat r: PyTorch block, sparkps block), every block ended by a
device synchronisation, medians over repeats; ratio = PyTorch time / sparkps time (1.0 = as fast as PyTorch):

1. **MLP step** (forward + backward + plain SGD update): the executor bound on ``gpu(0)`` against
   ``torch.nn.Linear`` layers with autograd and an in-place SGD step. Both read batches already on the device (a
   ring of distinct batches), so the figure is the step itself; then both copy host (numpy) batches in first, as
   training does. Sizes: 784-128-64-10 at batch 128 (launch-bound) and 784-2048-2048-10 at batch 1024
   (math-bound). The sparkps executor on the host is a third contender, for scale.
   Before timing, both compute the same probabilities and gradients from the same weights (checked).
2. **Sparse ops**: an ``Embedding(sparse_grad=True)`` lookup of 26 fields x batch 4096 ids (Zipf over the table)
   and its row gradient (rows scattered with repeated ids summed), against ``torch.nn.functional.embedding`` with
   its dense weight gradient (index_add); tables of 100,000 and 1,000,000 rows, dim 16. Same ids, the same output
   and the same gradient (checked).
3. **Fused CTR ops**: an FM second-order term on a table read, forward + backward, by the fused ops
   (``contrib.FusedEmbedding`` + ``contrib.FMInteraction``), the plain ops, and PyTorch; same gradient (checked).

    python -m benchmarks.bench_gpu [--repeats 11] [--steps 50] [--write-docs] [--json PATH]

Needs CuPy with a CUDA device and PyTorch with CUDA; exits with a message naming the one missing.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from benchmarks import report

LR = 0.01
RING = 8          # distinct batches cycled through


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--steps", type=int, default=50)
    return report.add_output_args(parser).parse_args()


def need_devices():
    from sparkps import backend
    if not backend.gpu_available():
        sys.exit("bench_gpu: needs CuPy and a CUDA device (pip install 'sparkps[gpu]')")
    try:
        import torch
    except ImportError:
        sys.exit("bench_gpu: needs PyTorch for the baseline (pip install torch)")
    if not torch.cuda.is_available():
        sys.exit("bench_gpu: PyTorch here has no CUDA device")
    import cupy
    return cupy, torch


def timed_blocks(contenders, sync, repeats, steps):
    """{name: [seconds per step, one per repeat]}: the contenders' blocks interleaved, each ended by ``sync``."""
    times = {name: [] for name in contenders}
    for step in contenders.values():          # warm-up: kernels compiled, caches and allocators filled
        for i in range(RING):
            step(i)
    sync()
    for _ in range(repeats):
        for name, step in contenders.items():
            sync()
            start = time.perf_counter()
            for i in range(steps):
                step(i % RING)
            sync()
            times[name].append((time.perf_counter() - start) / steps)
    return times


def ms(times):
    return statistics.median(times) * 1e3


def ratio(base, other):
    """Median over repeats of base block / other block (the two ran back to back in each repeat)."""
    return statistics.median(b / o for b, o in zip(base, other))


# --- 1. MLP step -----------------------------------------------------------------------------------------------

def mlp_params(layers, rng):
    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(layers[:-1], layers[1:]), start=1):
        params["fc%d_weight" % i] = rng.normal(0, fan_in ** -0.5, (fan_out, fan_in)).astype(np.float32)
        params["fc%d_bias" % i] = np.zeros(fan_out, dtype=np.float32)
    return params


def sparkps_mlp(layers, batch, params, ctx):
    from benchmarks.bench_executor import build_executor
    return build_executor(params, batch, layers, ctx)


def sparkps_step(exe, x, label):
    exe.forward(is_train=True, data=x, softmax_label=label)
    exe.backward()
    for name, grad in exe.grad_dict.items():
        weight = exe.arg_dict[name]
        weight -= LR * grad


def torch_mlp(torch, layers, params):
    modules = []
    for i, (fan_in, fan_out) in enumerate(zip(layers[:-1], layers[1:]), start=1):
        linear = torch.nn.Linear(fan_in, fan_out)
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(params["fc%d_weight" % i]))
            linear.bias.copy_(torch.from_numpy(params["fc%d_bias" % i]))
        modules += [linear, torch.nn.ReLU()] if i < len(layers) - 1 else [linear]
    return torch.nn.Sequential(*modules).cuda()


def torch_step(torch, model, x, label):
    # SoftmaxOutput's gradient is softmax - onehot summed over the batch (MXNet's normalization 'null'):
    # cross entropy with reduction 'sum' has exactly that gradient.
    loss = torch.nn.functional.cross_entropy(model(x), label, reduction="sum")
    model.zero_grad(set_to_none=False)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p.sub_(LR * p.grad)


def check_mlp(cupy, torch, exe, model, x, label, tlabel):
    exe.forward(is_train=True, data=x, softmax_label=label)
    exe.backward()
    logits = model(x_t := torch.as_tensor(x, device="cuda"))
    np.testing.assert_allclose(cupy.asnumpy(exe.outputs[0]),
                               torch.softmax(logits, dim=1).detach().cpu().numpy(), rtol=1e-3, atol=1e-5)
    torch.nn.functional.cross_entropy(model(x_t), tlabel, reduction="sum").backward()
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    for i, linear in enumerate(linears, start=1):
        np.testing.assert_allclose(cupy.asnumpy(exe.grad_dict["fc%d_weight" % i]), linear.weight.grad.cpu().numpy(),
                                   rtol=1e-2, atol=1e-3, err_msg="fc%d_weight" % i)
    model.zero_grad(set_to_none=False)


def bench_mlp(cupy, torch, layers, batch, args, with_host):
    rng = np.random.default_rng(0)
    params = mlp_params(layers, rng)
    host = [(rng.random((batch, layers[0]), dtype=np.float32),
             rng.integers(0, layers[-1], batch).astype(np.float32)) for _ in range(RING)]
    dev = [(cupy.asarray(x), cupy.asarray(y)) for x, y in host]
    tdev = [(torch.as_tensor(x, device="cuda"), torch.as_tensor(y.astype(np.int64), device="cuda")) for x, y in host]
    exe, model = sparkps_mlp(layers, batch, params, "gpu(0)"), torch_mlp(torch, layers, params)
    check_mlp(cupy, torch, exe, model, dev[0][0], dev[0][1], tdev[0][1])
    thost = [(torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))) for x, y in host]
    contenders = {"torch": lambda i: torch_step(torch, model, *tdev[i]),
                  "sparkps gpu": lambda i: sparkps_step(exe, *dev[i]),
                  "torch host": lambda i: torch_step(torch, model, thost[i][0].cuda(), thost[i][1].cuda()),
                  "sparkps gpu host": lambda i: sparkps_step(exe, *host[i])}
    if with_host:
        host_exe = sparkps_mlp(layers, batch, params, "cpu")
        contenders["sparkps cpu"] = lambda i: sparkps_step(host_exe, *host[i])

    def sync():
        torch.cuda.synchronize()
        cupy.cuda.Device().synchronize()
    return timed_blocks(contenders, sync, args.repeats, args.steps)


# --- 2. sparse ops ---------------------------------------------------------------------------------------------

def zipf_ids(rng, rows, shape):
    return (rng.zipf(1.2, size=shape) - 1) % rows


def bench_embedding(cupy, torch, rows, args, batch=4096, fields=26, dim=16):
    import sparkps.symbol as sym
    rng = np.random.default_rng(1)
    table = rng.normal(0, 0.01, (rows, dim)).astype(np.float32)
    ids = [zipf_ids(rng, rows, (batch, fields)).astype(np.int64) for _ in range(RING)]
    dys = [rng.normal(size=(batch, fields, dim)).astype(np.float32) for _ in range(RING)]
    net = sym.Embedding(sym.Variable("ids"), input_dim=rows, output_dim=dim, sparse_grad=True, name="emb")
    exe = net.simple_bind("gpu(0)", grad_req={"ids": "null", "emb_weight": "write"}, ids=(batch, fields),
                         type_dict={"ids": np.int64})
    exe.copy_params_from({"emb_weight": table})
    dev = [(cupy.asarray(i), cupy.asarray(d)) for i, d in zip(ids, dys)]
    weight = torch.nn.Parameter(torch.as_tensor(table, device="cuda"))
    tdev = [(torch.as_tensor(i, device="cuda"), torch.as_tensor(d, device="cuda")) for i, d in zip(ids, dys)]

    def sparkps_op(i):
        exe.forward(is_train=True, ids=dev[i][0])
        exe.backward(out_grads=dev[i][1])

    def torch_op(i):
        weight.grad = None
        torch.nn.functional.embedding(tdev[i][0], weight).backward(tdev[i][1])

    thost = [torch.from_numpy(i) for i in ids]

    def sparkps_host_op(i):
        exe.forward(is_train=True, ids=ids[i])
        exe.backward(out_grads=dev[i][1])

    def torch_host_op(i):
        weight.grad = None
        torch.nn.functional.embedding(thost[i].cuda(), weight).backward(tdev[i][1])

    sparkps_op(0), torch_op(0)
    np.testing.assert_allclose(cupy.asnumpy(exe.outputs[0]), table[ids[0]], rtol=0, atol=0)
    # a frequent id's row sums thousands of float32 terms, in another order than PyTorch's: tolerance by scale
    expected = weight.grad.cpu().numpy()
    np.testing.assert_allclose(cupy.asnumpy(exe.grad_dict["emb_weight"]), expected, rtol=1e-4,
                               atol=1e-5 * float(np.abs(expected).max()))

    def sync():
        torch.cuda.synchronize()
        cupy.cuda.Device().synchronize()
    distinct = statistics.mean(np.unique(i).size for i in ids)
    contenders = {"torch": torch_op, "sparkps gpu": sparkps_op, "torch host": torch_host_op,
                  "sparkps gpu host": sparkps_host_op}
    return timed_blocks(contenders, sync, args.repeats, args.steps), distinct


# --- 3. fused CTR ops -----------------------------------------------------------------------------------------

def bench_fm(cupy, torch, args, batch=4096, fields=26, dim=16):
    """An FM second-order term on a table read, forward + backward: the fused ops (FusedEmbedding + FMInteraction),
    the plain ones (HashEmbedding + BiInnerSumCross) and PyTorch (embedding + the pair-sum formula), device ids.
    The table is a step's block of rows (one row per id of the batch at most), read at Zipf positions."""
    import sparkps.symbol as sym
    rows = batch * fields
    rng = np.random.default_rng(2)
    table = rng.normal(0, 0.01, (rows, dim)).astype(np.float32)
    pos = [zipf_ids(rng, rows, (batch, fields)).astype(np.float32) for _ in range(RING)]
    dys = [rng.normal(size=(batch, 1)).astype(np.float32) for _ in range(RING)]
    ids = sym.Variable("ids")
    nets = {"fused": sym.contrib.FMInteraction(sym.contrib.FusedEmbedding(ids, output_dim=dim, table="t")),
            "plain": sym.BiInnerSumCross(sym.contrib.HashEmbedding(ids, output_dim=dim, table="t"))}
    exes = {}
    for name, net in nets.items():
        exe = net.simple_bind("gpu(0)", grad_req={"ids": "null", "t": "write"}, ids=(batch, fields))
        exe.copy_params_from({"t": table})
        exes[name] = exe
    dev = [(cupy.asarray(p), cupy.asarray(d)) for p, d in zip(pos, dys)]
    weight = torch.nn.Parameter(torch.as_tensor(table, device="cuda"))
    tdev = [(torch.as_tensor(p.astype(np.int64), device="cuda"), torch.as_tensor(d, device="cuda"))
            for p, d in zip(pos, dys)]

    def op(name):
        def run(i):
            exes[name].forward(is_train=True, ids=dev[i][0])
            exes[name].backward(out_grads=dev[i][1])
        return run

    def torch_op(i):
        weight.grad = None
        e = torch.nn.functional.embedding(tdev[i][0], weight)
        ((e.sum(1) ** 2 - (e * e).sum(1)).sum(1, keepdim=True) / 2).backward(tdev[i][1])

    for run in (op("fused"), op("plain"), torch_op):
        run(0)
    expected = weight.grad.cpu().numpy()
    for name in exes:
        np.testing.assert_allclose(cupy.asnumpy(exes[name].grad_dict["t"]), expected, rtol=1e-3,
                                   atol=1e-4 * float(np.abs(expected).max()))

    def sync():
        torch.cuda.synchronize()
        cupy.cuda.Device().synchronize()
    return timed_blocks({"torch": torch_op, "sparkps fused": op("fused"), "sparkps plain": op("plain")}, sync,
                        args.repeats, args.steps)


SECTIONS = ("gpu",)
MLPS = (((784, 128, 64, 10), 128), ((784, 2048, 2048, 10), 1024))
WHERE = (("device", "torch", "sparkps gpu"), ("host", "torch host", "sparkps gpu host"))


def render(run):
    """The section of a run record (pure function of it): every repeat's block time of every contender is in it."""
    data, options = run["data"], run["data"]["options"]
    lines = ["Device: %s; CuPy %s, PyTorch %s (CUDA %s). Each row: median of %d interleaved repeats of %d steps, "
             "every block ended by a device synchronisation; ratio = median over repeats of (PyTorch block / "
             "sparkps block), so 1.0 is as fast as PyTorch."
             % (data["device"], data["cupy"], data["torch"], data["cuda"], options["repeats"], options["steps"]), "",
             "MLP step: forward + backward + SGD update, float32. *Device batches*: both read batches already on "
             "the device. *Host batches*: both copy each numpy batch to the device first, as training does "
             "(sparkps checks the batch for NaN/inf and the labels' range on the host copy).", "",
             "| network | batch | batches | PyTorch CUDA (ms) | sparkps gpu, CuPy (ms) | ratio |",
             "|---|---|---|---|---|---|"]
    cpu_rows = []
    for mlp in data["mlp"]:
        t, net, batch = mlp["times"], "-".join(map(str, mlp["layers"])), mlp["batch"]
        for where, torch_name, ours in WHERE:
            lines.append("| %s | %d | %s | %.3f | %.3f | **%.2f** |" % (
                net, batch, where, ms(t[torch_name]), ms(t[ours]), ratio(t[torch_name], t[ours])))
        cpu_rows.append("| %s | %d | %.2f | %.3f |" % (net, batch, ms(t["sparkps cpu"]), ms(t["sparkps gpu host"])))
    lines += ["", "The same step of the sparkps executor on this machine's CPU (numpy, host batches), for scale:", "",
              "| network | batch | sparkps cpu (ms) | sparkps gpu, host batches (ms) |", "|---|---|---|---|",
              *cpu_rows]
    lines += ["", "Sparse ops: `Embedding(sparse_grad=True)` lookup + row gradient (repeated ids summed) vs "
              "`torch.nn.functional.embedding` + backward; batch 4096 x 26 fields, Zipf(1.2) ids, dim 16; the ids "
              "on the device already, or copied from a numpy batch first (sparkps checks them on the host copy).",
              "", "| table rows | distinct ids a batch | ids | PyTorch CUDA (ms) | sparkps gpu, CuPy (ms) | ratio |",
              "|---|---|---|---|---|---|"]
    for emb in data["embedding"]:
        t = emb["times"]
        for where, torch_name, ours in WHERE:
            lines.append("| %s | %d | %s | %.3f | %.3f | **%.2f** |" % (
                f"{emb['rows']:,}", emb["distinct"], where, ms(t[torch_name]), ms(t[ours]),
                ratio(t[torch_name], t[ours])))
    t = data["fm"]
    lines += ["", "Fused CTR ops: an FM second-order term on a table read (a step's block of 106,496 rows x dim 16, "
              "batch 4096 x 26 fields, Zipf(1.2) positions on the device), forward + backward: "
              "`contrib.FusedEmbedding` + `contrib.FMInteraction` (one CuPy kernel each way), the plain "
              "`contrib.HashEmbedding` + `BiInnerSumCross`, and PyTorch (`embedding` + `((sum e)^2 - sum e^2) / 2`).",
              "",
              "| PyTorch CUDA (ms) | sparkps fused (ms) | sparkps plain (ms) | ratio fused | ratio plain |",
              "|---|---|---|---|---|",
              "| %.3f | %.3f | %.3f | **%.2f** | %.2f |" % (
                  ms(t["torch"]), ms(t["sparkps fused"]), ms(t["sparkps plain"]),
                  ratio(t["torch"], t["sparkps fused"]), ratio(t["torch"], t["sparkps plain"]))]
    lines += ["", "Command: `%s`" % run["command"]]
    return "## GPU: the CuPy backend vs PyTorch CUDA\n\n" + "\n".join(lines)


def main(args):
    run = report.Run("bench_gpu")
    cupy, torch = need_devices()
    data = {"options": report.options(args), "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "cupy": cupy.__version__, "torch": torch.__version__, "cuda": torch.version.cuda,
            "mlp": [], "embedding": []}
    figures = {}
    for layers, batch in MLPS:
        t = bench_mlp(cupy, torch, layers, batch, args, with_host=True)
        data["mlp"].append({"layers": list(layers), "batch": batch, "times": t})
        net = "-".join(map(str, layers))
        for where, torch_name, ours in WHERE:
            figures.update(step_figures("mlp %s b%d %s" % (net, batch, where), t, torch_name, ours))
        figures["mlp %s b%d sparkps cpu" % (net, batch)] = report.lower(ms(t["sparkps cpu"]), "ms")
        print("mlp", net, batch, {k: "%.3f ms" % ms(v) for k, v in t.items()}, flush=True)
    for rows in (100_000, 1_000_000):
        t, distinct = bench_embedding(cupy, torch, rows, args)
        data["embedding"].append({"rows": rows, "distinct": int(distinct), "times": t})
        for where, torch_name, ours in WHERE:
            figures.update(step_figures("embedding %d rows %s" % (rows, where), t, torch_name, ours))
        print("embedding", rows, {k: "%.3f ms" % ms(v) for k, v in t.items()}, flush=True)
    data["fm"] = t = bench_fm(cupy, torch, args)
    figures.update(step_figures("fm fused", t, "torch", "sparkps fused"))
    figures.update(step_figures("fm plain", t, "torch", "sparkps plain"))
    print(run.publish(args, "gpu", data, render))
    report.save_json(args, "bench_gpu", figures)


def step_figures(key, t, torch_name, ours):
    """Figures for ``--json`` of one table row: both contenders' ms and the ratio PyTorch / sparkps."""
    return {key + " torch": report.lower(ms(t[torch_name]), "ms"), key + " sparkps": report.lower(ms(t[ours]), "ms"),
            key + " torch/sparkps": report.higher(ratio(t[torch_name], t[ours]), "x")}


if __name__ == "__main__":
    main(parse_args())
