"""The conformance suite as pytest tests (see pytest_plugin.py for the options)."""
import pytest

import ember

from .checks import check_forward, check_gradient
from .finite_differences import check_gradcheck, check_gradgradcheck
from .func_checks import check_jvp, check_vmap
from .opdb import uncovered_ops


@pytest.fixture(scope="session")
def conformance_device(request):
    name = request.config.getoption("--backend")
    return ember.device(name) if ":" in name else ember._device.as_device(name)


def test_op_database_covers_the_registry():
    missing = uncovered_ops()
    assert not missing, f"ops with no conformance entry: {missing}"


def _assert_ok(result):
    if result.status == "skip":
        pytest.skip(result.message)
    assert result.ok, result.message


def test_forward(conformance_device, op_case):
    info, dtype = op_case
    _assert_ok(check_forward(info, dtype, conformance_device))


def test_gradient(conformance_device, op_case):
    info, dtype = op_case
    _assert_ok(check_gradient(info, dtype, conformance_device))


def test_gradcheck(conformance_device, op_entry):
    """First derivatives against finite differences (parametrized on the cpu backend only)."""
    _assert_ok(check_gradcheck(op_entry, conformance_device))


def test_gradgradcheck(conformance_device, op_entry):
    """Second derivatives against finite differences (cpu backend only)."""
    _assert_ok(check_gradgradcheck(op_entry, conformance_device))


def test_vmap(conformance_device, func_entry):
    """ember.func.vmap of the entry against a loop over the batch (every backend)."""
    _assert_ok(check_vmap(func_entry, func_entry.dtypes[0], conformance_device))


def test_jvp(conformance_device, func_entry):
    """Forward-mode AD: finite differences on the cpu, the cpu's jvp elsewhere."""
    _assert_ok(check_jvp(func_entry, conformance_device))


def test_contract(conformance_device, contract_case):
    _suite, case = contract_case
    outcome = case(conformance_device)
    if isinstance(outcome, str):
        pytest.skip(outcome)
