"""The hsapy command given output paths it cannot write, programs it cannot find, targets that
do not fit the file, and Ctrl-C: one line naming the problem and a non-zero status, checked
before the command does its work (never a traceback after it)."""
from __future__ import annotations

import argparse

import pytest

from hsapy import selftest
from hsapy.asm import kernels
from hsapy.cli import main


@pytest.fixture
def program(tmp_path):
    """A program that leaves a mark when it runs."""
    mark = tmp_path / "ran"
    script = tmp_path / "program.py"
    script.write_text(f"open({str(mark)!r}, 'w').close()\n")
    return script, mark


def _bad_outputs(tmp_path):
    directory = tmp_path / "out.png"
    directory.mkdir()
    return {"a directory": (str(directory), "is a directory"),
            "a missing directory": (str(tmp_path / "no" / "out.png"), "there is no directory")}


@pytest.mark.parametrize("case", ["a directory", "a missing directory"])
@pytest.mark.parametrize("command", ["trace -o", "profile --plot", "build -o"])
def test_an_output_path_that_cannot_be_written_is_refused_before_the_work(
        tmp_path, program, capsys, command, case):
    path, problem = _bad_outputs(tmp_path)[case]
    script, mark = program
    argv = {"trace -o": ["trace", "-o", path, "--", str(script)],
            "profile --plot": ["profile", "--plot", path, "--", str(script)],
            "build -o": ["build", "asm:empty", "--target", "gfx942", "-o", path]}[command]
    status = main(argv)
    err = capsys.readouterr().err
    assert status != 0 and problem in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not mark.exists()          # the program never ran


def test_bench_refuses_a_plot_in_a_missing_directory_before_benchmarking(tmp_path, capsys):
    status = main(["bench", "launch", "--backend", "sim", "--quick",
                   "--plot", str(tmp_path / "no" / "launch.png")])
    out, err = capsys.readouterr()
    assert status == 2 and "there is no directory" in err and out == ""
    assert err.startswith("hsapy bench: --plot: cannot write "), err     # one prefix, the option


@pytest.mark.parametrize("module, problem", [("no_such_module_zz", "no module named"),
                                             ("os.no_such", "cannot run python -m os.no_such"),
                                             (".relative", "cannot run python -m .relative")])
@pytest.mark.parametrize("command", ["trace", "profile"])
def test_a_module_that_python_cannot_find_is_one_line(tmp_path, capsys, command, module,
                                                        problem):
    argv = [command, "--", "python", "-m", module]
    if command == "trace":
        argv[1:1] = ["-o", str(tmp_path / "trace.json")]
    status = main(argv)
    err = capsys.readouterr().err
    assert status == 2 and problem in err and "Traceback" not in err
    assert not (tmp_path / "trace.json").exists()


def test_disasm_refuses_a_target_the_code_object_is_not_for(tmp_path, capsys):
    path = tmp_path / "vector_add.hsaco"
    path.write_bytes(kernels.build("vector_add", "gfx942"))
    assert main(["disasm", str(path), "--target", "gfx1201"]) == 1
    out, err = capsys.readouterr()
    assert "for gfx942" in err and "gfx1201" in err and out == ""
    assert main(["disasm", str(path), "--target", "gfx942"]) == 0
    assert "gfx942 code object" in capsys.readouterr().out


def test_build_names_a_directory_given_as_the_source(tmp_path, capsys):
    assert main(["build", str(tmp_path), "--target", "gfx942"]) == 1
    assert "is a directory" in capsys.readouterr().err


def _selftest_args(keyword):
    return argparse.Namespace(backend="sim", keyword=keyword, verbose=False)


def test_selftest_interrupted_says_so_and_exits_130(monkeypatch, capsys):
    # Ctrl-C inside pytest.main: pytest stops and returns INTERRUPTED instead of raising
    import pytest as pytest_module

    def interrupted(argv, plugins):
        collector = plugins[0]
        report = argparse.Namespace(nodeid="tests/sim/test_objects.py::test_x", when="call",
                                    passed=True, skipped=False, failed=False, longrepr=None)
        collector.pytest_runtest_logreport(report)
        return pytest_module.ExitCode.INTERRUPTED

    monkeypatch.setattr(pytest_module, "main", interrupted)
    assert selftest.run(_selftest_args(None)) == 130
    out, err = capsys.readouterr()
    assert "interrupted" in err and "passed" not in out


def test_selftest_refuses_a_k_expression_pytest_cannot_parse(capsys):
    assert selftest.run(_selftest_args("(((")) == 2
    assert "refused the -k expression" in capsys.readouterr().err
