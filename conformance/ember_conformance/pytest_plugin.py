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
    if not {"op_case", "op_entry", "func_entry", "contract_case"} & set(metafunc.fixturenames):
        return
    from . import contracts
    from .opdb import all_opinfos
    from .selection import match_entries
    patterns = metafunc.config.getoption("--conformance-ops")
    infos = all_opinfos()
    if patterns:
        infos = match_entries([p.strip() for p in patterns.split(",") if p.strip()], infos)
    cases = [(suite, case) for suite, fns in contracts.SUITES.items() for case in fns]
    if "op_case" in metafunc.fixturenames:
        params = [(info, dt) for info in infos for dt in info.dtypes]
        metafunc.parametrize("op_case", params,
                             ids=[f"{i.name.replace(' ', '_')}-{dt}" for i, dt in params])
    if "op_entry" in metafunc.fixturenames:
        # finite-difference checks prove the CPU reference: other backends get no such tests
        entries = infos if metafunc.config.getoption("--backend").split(":")[0] == "cpu" else []
        metafunc.parametrize("op_entry", entries, ids=[i.name.replace(" ", "_") for i in entries])
    if "func_entry" in metafunc.fixturenames:   # ember.func's vmap and jvp rows, every backend
        metafunc.parametrize("func_entry", infos, ids=[i.name.replace(" ", "_") for i in infos])
    if "contract_case" in metafunc.fixturenames:
        metafunc.parametrize("contract_case", cases, ids=[f"{s}-{c.__name__}" for s, c in cases])
