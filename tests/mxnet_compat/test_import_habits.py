"""MXNet's import habits, each in a fresh interpreter as a script would run them: ``import sparkps.optimizer as opt``,
``from sparkps.model import FeedForward``, ``sparkps.nd.load`` ... (``sparkps`` standing where ``mxnet`` stood).
None of them starts Spark or the parameter server's transport, and ``import sparkps`` alone imports nothing heavy.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAVY = ('pyspark', 'zmq', 'numba')

HABITS = {
    'import sparkps.optimizer as opt': "assert opt.SGD(learning_rate=0.1).lr == 0.1 and opt.create('adam')",
    'import sparkps.initializer': "sparkps.initializer.Xavier(); sparkps.initializer.Uniform(0.1)",
    'import sparkps.metric': "m = sparkps.metric.create('acc'); assert isinstance(m, sparkps.metric.Accuracy)",
    'import sparkps.io': "assert sparkps.io.NDArrayIter and sparkps.io.DataBatch and sparkps.io.CSVIter",
    'import sparkps.kvstore': "kv = sparkps.kvstore.create('local'); assert kv.type == 'local'",
    'import sparkps.lr_scheduler': "s = sparkps.lr_scheduler.FactorScheduler(step=10, factor=0.5)",
    'import sparkps.callback': "sparkps.callback.Speedometer(32); sparkps.callback.do_checkpoint('p')",
    'import sparkps.model': "assert sparkps.model.FeedForward.__name__ == 'FeedForward' and sparkps.model.params_path",
    'import sparkps.symbol': "assert sparkps.symbol.Variable('x').list_arguments() == ['x']",
    'import sparkps.nd': "assert sparkps.nd.load and sparkps.nd.save",
    'import sparkps.symbol as sym': "sym.SoftmaxOutput(sym.FullyConnected(sym.Variable('data'), num_hidden=2))",
    'from sparkps.optimizer import SGD, Adam, Optimizer, create': "assert isinstance(SGD(), Optimizer)",
    'from sparkps.initializer import Xavier, Uniform, Normal, Zero': "Xavier(magnitude=2)",
    'from sparkps.metric import Accuracy, CrossEntropy, EvalMetric, CompositeEvalMetric, create':
        "assert isinstance(create(['acc', 'ce']), CompositeEvalMetric)",
    'from sparkps.io import NDArrayIter, DataIter, DataBatch, DataDesc, CSVIter, LibSVMIter':
        "assert issubclass(NDArrayIter, DataIter)",
    'from sparkps.kvstore import create, KVStoreBase': "assert isinstance(create('local'), KVStoreBase)",
    'from sparkps.lr_scheduler import FactorScheduler, MultiFactorScheduler': "MultiFactorScheduler([5, 10])",
    'from sparkps.callback import Speedometer, do_checkpoint, log_train_metric': "do_checkpoint('p', period=2)",
    'from sparkps.model import FeedForward, save_checkpoint, load_checkpoint':
        "import sparkps; assert FeedForward is sparkps.FeedForward",
    'from sparkps.symbol import Variable, FullyConnected, SoftmaxOutput, Group, load, load_json':
        "assert load_json(Variable('x').tojson()).list_arguments() == ['x']",
    'from sparkps.nd import load, save': "assert callable(load) and callable(save)",
    'import sparkps as mx': "mx.nd.load; mx.init.Xavier; mx.opt.SGD; mx.kv.create; mx.sym.Variable; mx.cpu()",
    'from sparkps import AttrScope':   # MXNet test_attr.py writes mx.AttrScope
        "import sparkps as mx\nwith AttrScope(group='4'):\n    v = mx.sym.Variable('w')\n"
        "assert v.attr('group') == '4' and AttrScope is mx.sym.AttrScope",
}


def run_fresh(code, tmp_path):
    """Run ``code`` in a new interpreter with this tree first on the path; returns the heavy modules it imported."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in %r if m in sys.modules)))\n" % (HEAVY,)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('statement', sorted(HABITS))
def test_an_mxnet_import_habit_works_in_a_fresh_interpreter(statement, tmp_path):
    assert run_fresh(statement + '\n' + HABITS[statement], tmp_path) == []


def test_import_sparkps_alone_stays_cheap(tmp_path):
    code = textwrap.dedent("""
        import sys
        import sparkps
        loaded = sorted(m for m in sys.modules if m.startswith('sparkps.'))
        assert loaded == ['sparkps.errors'] or loaded == [], loaded
        assert 'numpy' not in sys.modules
        assert sparkps.__version__
    """)
    assert run_fresh(code, tmp_path) == []


def test_an_mxnet_style_script_trains_checkpoints_and_saves_arrays(tmp_path):
    """A script in MXNet 1.x's words: NDArrayIter, FeedForward, an optimizer object, a metric object,
    do_checkpoint, load_checkpoint, then nd.save / nd.load of the trained weights."""
    code = textwrap.dedent("""
        import numpy as np
        import sparkps as mx
        import sparkps.optimizer as opt
        from sparkps.io import NDArrayIter
        from sparkps.metric import Accuracy
        from sparkps.model import FeedForward, load_checkpoint

        np.random.seed(0)                                # NDArrayIter's shuffle
        rng = np.random.default_rng(0)
        X = rng.normal(size=(128, 4)).astype(np.float32)
        y = (X[:, 0] + X[:, 1] > 0).astype(np.float32)
        net = mx.sym.Variable('data')
        net = mx.sym.FullyConnected(net, num_hidden=8, name='fc1')
        net = mx.sym.Activation(net, act_type='relu', name='relu1')
        net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(net, num_hidden=2, name='fc2'), name='softmax')
        model = FeedForward(net, num_epoch=4, optimizer=opt.SGD(learning_rate=0.5, momentum=0.9),
                            initializer=mx.init.Xavier(), seed=1)
        model.fit(NDArrayIter(X, y, batch_size=16, shuffle=True), eval_metric=Accuracy(),
                  epoch_end_callback=mx.callback.do_checkpoint('mlp'))
        symbol, arg_params, aux_params = load_checkpoint('mlp', 4)
        assert symbol.list_arguments() == net.list_arguments()
        mx.nd.save('weights.nd', arg_params)
        back = mx.nd.load('weights.nd')
        assert sorted(back) == sorted(arg_params)
        for name in back:
            np.testing.assert_array_equal(back[name], arg_params[name])
        accuracy = (model.predict(X).argmax(axis=1) == y).mean()
        assert accuracy > 0.75, accuracy                 # it learned (the point is the script's words)
    """)
    assert run_fresh(code, tmp_path) == []
