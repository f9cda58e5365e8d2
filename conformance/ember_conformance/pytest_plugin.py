"""pytest plugin: ``pytest --pyargs ember_conformance --backend B`` runs the suite as tests.

Registered through the ``pytest11`` entry point, so the option exists wherever ember is
installed; the tests live in ``ember_conformance/test_suite.py``.
"""
from __future__ import annotations


def pytest_addoption(parser):
    group = parser.getgroup("ember-conformance")
    group.addoption("--backend", default="cpu",
                    help="ember device type (or type:index) the conformance suite checks")
    group.addoption("--conformance-ops", default=None,
                    help="comma-separated glob patterns of op entries to check")


def pytest_generate_tests(metafunc):
    if "op_case" not in metafunc.fixturenames and "contract_case" not in metafunc.fixturenames:
        return
    from .runner import plan
    infos, cases = plan(metafunc.config.getoption("--conformance-ops"))
    if "op_case" in metafunc.fixturenames:
        params = [(info, dt) for info in infos for dt in info.dtypes]
        metafunc.parametrize("op_case", params,
                             ids=[f"{i.name.replace(' ', '_')}-{dt}" for i, dt in params])
    if "contract_case" in metafunc.fixturenames:
        metafunc.parametrize("contract_case", cases, ids=[f"{s}-{c.__name__}" for s, c in cases])
