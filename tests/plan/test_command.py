"""``sparkps plan`` through click's CliRunner (the command object, as the sparkps group registers it)."""
import json

import pytest
from click.testing import CliRunner

from sparkps.plan.command import plan

ARGS = ['--workers', '100', '--servers', '10', '--rows', '1e9', '--dim', '16', '--batch', '4096', '--fields', '26',
        '--zipf', '1.1', '--optimizer', 'adagrad', '--bandwidth', '10Gbit']


def test_plan_prints_the_table():
    result = CliRunner().invoke(plan, ARGS)
    assert result.exit_code == 0, result.output
    assert 'rows / server         100,000,000' in result.output
    assert 'bottleneck' in result.output and 'what to change' in result.output


def test_plan_json_takes_units():
    result = CliRunner().invoke(plan, ARGS + ['--json', '--bandwidth', '25Gbit', '--server-memory', '8GiB',
                                              '--compute-per-sample', '5us'])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.output)
    assert figures['workload']['bandwidth'] == 25e9
    assert figures['workload']['server_memory'] == 8 * 2**30
    assert figures['workload']['compute_per_sample'] == pytest.approx(5e-6)
    assert figures['bottleneck'] == 'server memory'


def test_a_bad_unit_names_the_option_once():
    result = CliRunner().invoke(plan, ['--workers', '2', '--servers', '1', '--rows', '1e6', '--bandwidth', '10GB'])
    assert result.exit_code == 2
    assert result.output.count("Invalid value for '--bandwidth'") == 1
    assert 'Traceback' not in result.output


def test_a_missing_option_is_named():
    result = CliRunner().invoke(plan, ['--workers', '2', '--rows', '1e6'])
    assert result.exit_code == 2 and "'--servers'" in result.output


def test_plan_counts_a_ctr_models_linear_table_and_the_shard_write_when_asked():
    base = ['--workers', '2', '--servers', '2', '--rows', '1M', '--optimizer', 'adam', '--json']
    plain = json.loads(CliRunner().invoke(plan, base).output)
    ctr = json.loads(CliRunner().invoke(plan, base + ['--linear', '--write-tables']).output)
    assert ctr['workload']['linear'] and ctr['workload']['write_tables']
    assert ctr['server_memory'] > plain['server_memory'] + 120 * 2**20
