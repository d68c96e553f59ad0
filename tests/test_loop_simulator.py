"""The loop simulator: every scenario file in tests/loop_sim/scenarios/ is played end to end, with
real files, a real git project, a real validator script and real subprocesses, and the closed
loop's invariants are checked after every run (docs/simulator.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_sim.invariants import Checker, Observation
from loop_sim.scenario import Simulation, load, scenario_files


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_scenario_keeps_the_loop_invariants(path: Path, tmp_path: Path) -> None:
    sim = Simulation(path.stem, load(path), tmp_path)
    violations = sim.play()
    assert not violations, "\n".join([*violations, "", "what happened:", *sim.log])


def test_every_scenario_file_is_collected() -> None:
    """Adding a scenario is adding a file: the parametrization sees each one."""
    names = [p.stem for p in scenario_files()]
    assert len(names) >= 9 and len(set(names)) == len(names)


def _blocked_run(prompt: str) -> Observation:
    data = {
        "result": "BLOCKED",
        "cycles": 0,
        "issues": [],
        "subjects": [
            {
                "subject": "WI-1",
                "failure_type": "runtime_error",
                "attempts": 10,
                "status": "blocked",
                "ladder_step": None,
                "signals": [],
            }
        ],
    }
    return Observation(
        1,
        "run",
        1,
        "",
        "",
        data,
        "Subjects:\n  WI-1  runtime_error  blocked  10/3\n",
        [{"task_id": "WI-1", "final_status": "blocked"}],
        [{"id": "ESC-1", "subject": "WI-1", "status": "open"}],
        {"WI-1.md": prompt},
        None,
    )


def _checker(tmp_path: Path) -> Checker:
    (tmp_path / "log").write_text("")
    return Checker("probe", tmp_path, ["WI-1"], {}, "sim-validator", tmp_path / "log")


def test_the_checker_catches_a_disagreeing_rendering(tmp_path: Path) -> None:
    """The invariants can fail: a prompt whose first line contradicts the JSON is reported,
    naming the scenario, the run, the work item and both renderings."""
    checker = _checker(tmp_path)
    checker.check(_blocked_run("STATUS: recovering - try again\nTRY: step 2\n"))
    messages = [m for m in checker.messages() if m.startswith("[3]")]
    assert messages and "scenario probe, run 1, work item WI-1" in messages[0]
    assert "json=blocked" in messages[0] and "STATUS: recovering" in messages[0]


def test_the_checker_accepts_renderings_that_agree(tmp_path: Path) -> None:
    """...and passes a run whose five renderings say the same thing."""
    checker = _checker(tmp_path)
    checker.check(_blocked_run("STATUS: blocked - stop; a person decides (ESC-1)\n"))
    assert checker.messages() == []
