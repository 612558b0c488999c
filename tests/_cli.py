"""The command line's refusals as the tests read them: one line ``dkernel: error: ...`` and its exit status."""

from dkernel.cli import main


def error_of(argv, capsys, code=2, prefix="dkernel: error: "):
    """``main(argv)``: status ``code`` and its one error line (no traceback), returned."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == code, (status, out, err)
    assert err.startswith(prefix) and err.count("\n") == 1 and "Traceback" not in err, err
    return err
