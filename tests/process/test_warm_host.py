"""The warm compile host (runner.warm_host): a forked job is what a cold one is (its own
group, the caller's folder, environment and descriptors, its exit status), minus the
imports the host did once; stopping, a host that dies, and etu's own death still end it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import psutil
import pytest

from etu.runner import warm_host
from etu.runner.process import StreamingProcess
from tests.board_peers import wait_for

JOB = "tests.process.warm_job"


@pytest.fixture
def host():
    started = warm_host.WarmHost(JOB)
    yield started
    started.close()
    assert started.process.wait(10) == 0  # it ends when its socket closes


def run_job(host, tmp_path: Path, *args: str, env: dict | None = None):
    read_end, write_end = os.pipe()
    child = host.launch(JOB, [*args[:1], str(write_end), *args[1:]], pass_fds=(write_end,),
                        env=env or {"WARM_JOB_VALUE": "from the caller"}, cwd=tmp_path)  # fmt: skip
    os.close(write_end)
    return child, read_end


def test_a_forked_job_is_what_a_cold_one_is_minus_the_preload(host, tmp_path: Path) -> None:
    child, channel = run_job(host, tmp_path, "3")
    assert child.wait(30) == 3
    said = json.loads(child.stdout.read())
    assert said["ppid"] == host.pid and said["pid"] == child.pid
    assert said["preloaded"]  # imported once, in the host
    assert said["pgid"] == child.pid  # its own group: a stop reaches what it started
    assert said["cwd"] == str(tmp_path) and said["env"] == "from the caller"
    assert said["stdin"] == ""  # /dev/null, as a cold worker's
    assert said["channel_inheritable"]  # as Popen's pass_fds leave it
    assert child.stderr.read() == b"to stderr\n"
    with open(channel, "rb") as private:
        assert private.read() == b"on the channel\n"
    second, channel = run_job(host, tmp_path, "0")
    assert second.wait(30) == 0 and second.pid != child.pid
    os.close(channel)
    assert json.loads(second.stdout.read())["ppid"] == host.pid  # the same host again


def test_stopping_a_forked_job_ends_its_group(host, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    output: list[bytes] = []
    process = StreamingProcess(
        ["warm job"], on_output=lambda chunk, _: output.append(chunk), pass_fds=(write_end,),
        launcher=lambda: host.launch(JOB, ["0", str(write_end), "60"], env={}, cwd=tmp_path,
                                     pass_fds=(write_end,)),
    ).start()  # fmt: skip
    os.close(write_end)
    assert os.read(read_end, 100) == b"on the channel\n"
    process.stop(grace=5)
    assert process.wait(10) == -signal.SIGTERM
    assert b"to stderr\n" in b"".join(output)  # every byte before the exit
    os.close(read_end)


def test_a_host_that_dies_takes_its_jobs_and_is_replaced(tmp_path: Path) -> None:
    first = warm_host.host_for(JOB, os.environ)
    child, channel = run_job(first, tmp_path, "0", "60")
    assert os.read(channel, 100) == b"on the channel\n"
    os.kill(first.pid, signal.SIGKILL)
    assert child.wait(10) == -signal.SIGKILL
    assert wait_for(lambda: not _alive(child.pid))  # PR_SET_PDEATHSIG: no orphan
    with pytest.raises(warm_host.HostGone):
        first.launch(JOB, ["0", "1"], env={}, cwd=tmp_path)
    first.process.wait(10)
    replaced = warm_host.host_for(JOB, os.environ)
    assert replaced.pid != first.pid and replaced.alive()
    replaced.close()


def test_the_environment_read_at_import_keys_the_host(tmp_path: Path, monkeypatch) -> None:
    """A variable torch reads while it imports (OMP_NUM_THREADS) cannot change inside a
    warm host, so another value gets another host; any other variable is the job's own."""
    monkeypatch.setenv("WARM_JOB_VALUE", "one")
    one = warm_host.host_for(JOB, os.environ)
    monkeypatch.setenv("WARM_JOB_VALUE", "two")
    assert warm_host.host_for(JOB, os.environ) is one
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    other = warm_host.host_for(JOB, os.environ)
    assert other is not one
    for host in (one, other):
        host.close()


def test_etu_opting_out_starts_every_worker_cold(monkeypatch) -> None:
    monkeypatch.setenv(warm_host.OPT_OUT, "0")
    assert warm_host.launch(JOB, JOB, ["0", "1"]) is None


def test_a_job_outlives_nothing_when_etu_is_killed(tmp_path: Path) -> None:
    """etu SIGKILLed mid-job: the host goes (its death signal), and the job with it."""
    import subprocess
    import sys

    script = (
        "import os, time; from etu.runner import warm_host\n"
        "read_end, write_end = os.pipe()\n"
        f"child = warm_host.launch({JOB!r}, {JOB!r}, ['0', str(write_end), '60'],"
        " pass_fds=(write_end,))\n"
        f"print(child.pid, warm_host.host_for({JOB!r}, os.environ).pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    etu = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                           cwd=tmp_path, env=environment)  # fmt: skip
    job_pid, host_pid = map(int, etu.stdout.readline().split())
    etu.kill()
    etu.wait()
    assert wait_for(lambda: not _alive(job_pid) and not _alive(host_pid))


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_json_child_from_the_host_is_read_whole_and_stopped_at_its_timeout(tmp_path) -> None:
    from etu.runner.isolated import ChildError, json_child

    record = json_child(JOB, "0", "-1", what="the job", preload=JOB)
    assert record["preloaded"] and record["argv"] == ["0", "-1"]
    host = warm_host.host_for(JOB, os.environ)
    assert record["ppid"] == host.pid
    with pytest.raises(ChildError, match="the job took longer than 1 s"):
        json_child(JOB, "0", "-1", "60", what="the job", timeout=1, preload=JOB)
    host.close()


def test_a_host_stuck_in_its_preload_is_killed_and_the_job_started_cold(monkeypatch) -> None:
    monkeypatch.setenv("PYTHON_WARM_JOB_STUCK", "1")  # read at import: a host of its own
    monkeypatch.setattr(warm_host, "LAUNCH_TIMEOUT", 1)
    started = []

    class Counted(warm_host.WarmHost):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(warm_host, "WarmHost", Counted)
    assert warm_host.launch(JOB, JOB, ["0", "-1"]) is None  # the caller starts it cold
    (stuck,) = started  # not a second host to wait for as long again
    assert stuck.process.wait(10) == -signal.SIGKILL  # not left importing forever
