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
