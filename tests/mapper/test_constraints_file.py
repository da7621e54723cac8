"""A user's --constraints file that cannot be read as YAML: one line naming the file and line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from costmodel.errors import UserError
from dse.mapspace.constraints import load_constraints_file

REPO = Path(__file__).resolve().parents[2]
BAD = {
    "latin1.yaml": (b"- level: rf\n  order: [C]  # r\xe9glage\n", ":2: expected UTF-8 text, got byte 0xe9"),
    "syntax.yaml": (b"- level: rf\n  order: [C\n - x: : y\n", ":3: YAML syntax error"),
    "scalar.yaml": (b"just words\n", ": expected a list of per-level constraint entries"),
    # a misspelt key: its entries had been dropped without a word
    "misspelt.yaml": (b"constraints:\n  - {level: buffer, bypass: [W]}\nconstriants:\n  - {level: rf, keep: [I]}\n",
                      ":3: constriants: unknown field 'constriants'; did you mean 'constraints'?"),
    "other.yaml": (b"constraints: []\nlimits: 3\n", ":2: limits: unknown field 'limits'; expected 'constraints: [...]'"),
}


def test_a_hwconfig_is_read_for_its_constraints() -> None:
    from costmodel.arch import HWCONFIGS, load_architecture

    entries = load_constraints_file(HWCONFIGS / "eyeriss_like.yaml")
    assert [e["level"] for e in entries] == [c.level for c in load_architecture("eyeriss_like").constraints]


@pytest.mark.parametrize("name", BAD)
def test_bad_file_is_one_line_with_its_place(tmp_path: Path, name: str) -> None:
    data, where = BAD[name]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(UserError) as err:
        load_constraints_file(path)
    assert str(err.value).startswith(f"{path}{where}") and "\n" not in str(err.value)


def test_cli_exits_2_without_traceback(tmp_path: Path) -> None:
    data, where = BAD["latin1.yaml"]
    path = tmp_path / "c.yaml"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", "from dse.cli import main; main()", "best-mapping", "--hw", "tiny",
                           "--layer", "examples/layers/small_matmul.yaml", "--no-db", "--constraints", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and f"{path}{where}" in proc.stderr


def test_a_field_set_by_two_entries_is_refused(tmp_path: Path) -> None:
    """Two entries for one level that set the same field: the later one had won silently (K4 over
    K2); in a user's file and in a config's constraints alike, the second is the error. Entries
    that set different fields of one level still combine."""
    from costmodel.arch import load_architecture
    from costmodel.problem import matmul
    from dse.mappers import map_layer

    entries = [{"level": "rf", "temporal": {"K": 2}}, {"level": "buffer", "keep": ["W"]},
               {"level": "rf", "temporal": {"K": 4}}]
    with pytest.raises(UserError, match=r"constraints\[2\]\.temporal: level rf's temporal is set already, "
                                        r"by constraints\[0\]$"):
        map_layer(matmul(8, 8, 8), "tiny", constraints=entries, max_evaluations=50)
    both = map_layer(matmul(8, 8, 8), "tiny", constraints=[{"level": "rf", "temporal": {"K": 2}},
                                                           {"level": "rf", "bypass": ["I"]}], max_evaluations=50)
    rf = both.mapping.levels[2]
    assert rf.temporal.get("K") == 2 and "I" in rf.bypass
    text = (REPO / "hwconfigs/tiny.yaml").read_text()
    hw = tmp_path / "hw.yaml"
    hw.write_text(text + "constraints:\n  - {level: rf, temporal: {K: 2}}\n  - {level: buffer, keep: [W]}\n"
                  "  - {level: rf, temporal: {K: 4}}\n")
    with pytest.raises(UserError) as err:
        load_architecture(hw)
    line = len(text.splitlines()) + 4
    assert str(err.value) == f"{hw}:{line}: constraints[2].temporal: level rf's temporal is set already, by constraints[0]"
    hw.write_text(text + "constraints:\n  - {level: rf, temporal: {K: 2}}\n  - {level: rf, bypass: [I]}\n")
    assert len(load_architecture(hw).constraints) == 2


def _tiny_and_file(tmp_path: Path, config_entry: str, user_text: str) -> tuple[Path, Path]:
    """hwconfigs/tiny.yaml with one constraint entry added, and a --constraints file."""
    hw, user = tmp_path / "hw.yaml", tmp_path / "c.yaml"
    hw.write_text((REPO / "hwconfigs/tiny.yaml").read_text() + f"constraints:\n  - {config_entry}\n")
    user.write_text(user_text)
    return hw, user


def test_a_conflict_names_the_files_it_comes_from(tmp_path: Path) -> None:
    """Keep from the config and bypass from a --constraints file, or both from the file: the message
    names where the rules were written (it named the level only)."""
    from costmodel.arch import load_architecture
    from costmodel.problem import matmul
    from dse.mapspace import Mapspace

    hw, user = _tiny_and_file(tmp_path, "{level: rf, keep: [W]}", "- {level: rf, bypass: [W]}\n")
    with pytest.raises(UserError, match=rf"^{hw} and {user}: constraints for level rf: tensor\(s\) \['W'\] are both"):
        Mapspace(matmul(8, 8, 8), load_architecture(hw), user)
    user.write_text("- {level: buffer, keep: [W], bypass: [W]}\n")
    with pytest.raises(UserError, match=rf"^{user}: constraints for level buffer: tensor\(s\) \['W'\] are both"):
        Mapspace(matmul(8, 8, 8), load_architecture("tiny"), user)


@pytest.mark.parametrize("entries,match", [
    # a level without an X fan-out took a fixed X factor and dropped it: the mapping ignored the rule
    ("- {level: rf, spatial_x: {K: 4}}\n", r"level rf fixes spatial_x factors K=4 \(product 4\), but its X fan-out is 1"),
    # each fits the fan-out of 2 alone, not together
    ("- {level: buffer, spatial_y: {K: 2, N: 2}}\n", r"fixes spatial_y factors K=2, N=2 \(product 4\), but its Y fan-out is 2"),
    # 2 x 2 x 2 divides 32, but every loop of K is fixed: nothing can take the remaining 4
    (("- {level: DRAM, temporal: {K: 2}}\n- {level: buffer, temporal: {K: 2}, spatial_x: {K: 2}, spatial_y: {K: 1}}\n"
      "- {level: rf, temporal: {K: 1}}\n"), r"multiply to 8, and no loop of it is left free"),
    ("- {level: rf, temporal: {K: 3}}\n", (r"dimension K has size 32, but the fixed factors \(rf.temporal=3\) "
                                           r"multiply to 3, which does not divide it")),
])
def test_fixed_factors_that_cannot_hold_name_the_file(tmp_path: Path, entries: str, match: str) -> None:
    from costmodel.arch import load_architecture
    from costmodel.problem import matmul
    from dse.mapspace import Mapspace

    user = tmp_path / "c.yaml"
    user.write_text(entries)
    with pytest.raises(UserError, match=rf"^{user}: contradictory constraints: .*{match}"):
        Mapspace(matmul(8, 32, 8), load_architecture("tiny"), user)


def test_fixed_factors_from_config_and_file_name_both(tmp_path: Path) -> None:
    from costmodel.arch import load_architecture
    from costmodel.problem import matmul
    from dse.mapspace import Mapspace

    hw, user = _tiny_and_file(tmp_path, "{level: rf, temporal: {K: 4}}", "- {level: buffer, temporal: {K: 3}}\n")
    # (the files in the order of the levels whose factors they fix: buffer, then rf)
    with pytest.raises(UserError, match=rf"^{user} and {hw}: contradictory constraints: dimension K .* multiply to 12"):
        Mapspace(matmul(8, 32, 8), load_architecture(hw), user)
    user.write_text("- {level: buffer, temporal: {K: 2}, spatial_x: {K: 2}}\n")  # 4 x 2 x 2 divides 32: fine
    ms = Mapspace(matmul(8, 32, 8), load_architecture(hw), user)
    _, sx, _ = ms.spatial_factors()
    k = matmul(8, 32, 8).dim_names.index("K")
    assert (sx[:, 1, k] == 2).all()
