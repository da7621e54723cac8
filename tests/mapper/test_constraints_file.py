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
}


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


def test_a_conflict_names_the_files_it_comes_from(tmp_path: Path) -> None:
    """Keep from the config and bypass from a --constraints file, or both from the file: the message
    names where the rules were written (it named the level only)."""
    from costmodel.arch import load_architecture
    from costmodel.problem import matmul
    from dse.mapspace import Mapspace

    hw = tmp_path / "hw.yaml"
    hw.write_text((REPO / "hwconfigs/tiny.yaml").read_text() + "constraints:\n  - {level: rf, keep: [W]}\n")
    user = tmp_path / "c.yaml"
    user.write_text("- {level: rf, bypass: [W]}\n")
    with pytest.raises(UserError, match=rf"^{hw} and {user}: constraints for level rf: tensor\(s\) \['W'\] are both"):
        Mapspace(matmul(8, 8, 8), load_architecture(hw), user)
    user.write_text("- {level: buffer, keep: [W], bypass: [W]}\n")
    with pytest.raises(UserError, match=rf"^{user}: constraints for level buffer: tensor\(s\) \['W'\] are both"):
        Mapspace(matmul(8, 8, 8), load_architecture("tiny"), user)
