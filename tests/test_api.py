"""The curated facade: what `exactspec` exports, and that every export exists."""

import exactspec


def test_all_names_exist_and_are_sorted():
    assert exactspec.__all__ == sorted(exactspec.__all__)
    for name in exactspec.__all__:
        assert hasattr(exactspec, name), name


def test_facade_is_small_and_covers_the_core():
    core = {"Dist", "verify", "simulate", "METHODS", "get_method", "overlap", "residual",
            "total_variation", "ExactspecError", "InvalidInput", "TooLarge", "Undecided"}
    assert core <= set(exactspec.__all__)
    assert len(exactspec.__all__) <= 40


def test_registered_methods_follow_the_contract():
    from exactspec.methods import Method

    for name, method in exactspec.METHODS.items():
        assert isinstance(method, Method) and method.name == name
        assert method.draft_law in {"iid", "wor", "hub"}
        assert callable(method.run)


def test_verify_counts_merged_states_where_the_paths_are_too_many_to_list():
    """In process as on the command line: a stepped method whose paths are over the budget
    runs with merged states (same law, acceptance and number of paths as the listed walk);
    asked to keep its paths it is refused instead."""
    from fractions import Fraction as F

    import pytest

    from exactspec import Dist, TooLarge, verify

    p = Dist([F(w, 10) for w in (4, 3, 2, 1)])
    q = Dist([F(w, 10) for w in (1, 2, 3, 4)])
    for name in ("rrs", "rrs-wor", "kseq"):
        listed = verify(name, p, q, 3, keep_paths=True)
        merged = verify(name, p, q, 3, max_paths=10)
        assert listed.route == "paths" and merged.route.startswith("merged-states"), name
        assert merged.law == listed.law and merged.acceptance == listed.acceptance, name
        assert merged.lossless and "merged-states" in merged.declined, name
        with pytest.raises(TooLarge):
            verify(name, p, q, 3, max_paths=10, keep_paths=True)


def test_the_package_imports_its_methods_when_first_named():
    """``import exactspec`` (and ``exactspec optimal``) leaves the methods and the engine
    unimported until a name that needs them is read; the submodule ``exactspec.verify``, once
    imported, never hides the function of that name."""
    import subprocess
    import sys

    code = ("import sys, exactspec\n"
            "from exactspec.cli import main\n"
            "assert main(['optimal', '--p', '1/2,1/2', '--q', '1/3,2/3', '--json']) == 0\n"
            "print('exactspec.methods' in sys.modules, 'exactspec.engine' in sys.modules)\n"
            "import exactspec.verify\n"
            "from exactspec import verify, Dist\n"
            "print(callable(exactspec.verify), exactspec.verify is verify,\n"
            "      verify('sps', Dist('1/2,1/2'), Dist('1/3,2/3')).lossless,\n"
            "      'METHODS' in dir(exactspec), exactspec.split_bias.__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2:] == ["False False", "True True True True split_bias"], out.stdout
