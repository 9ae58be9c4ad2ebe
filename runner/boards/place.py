"""A board shared through labgrid: a *place* on a labgrid coordinator, held for one run.

etu sits on labgrid rather than next to it: the coordinator's lock says who holds a board
(a second user is told who, not handed a garbled flash), the exporter's ser2net serves its
serial port over RFC 2217 (a pyserial URL the flash and monitor code already open), and
labgrid's own power drivers switch it off and on. labgrid is an optional extra
(``etu[lab]``), imported only here and only when a place is used.

labgrid's client is asyncio + gRPC; :class:`_Coordinator` runs its ``ClientSession`` on a
loop of its own on a private thread, so every call here is blocking and may come from any
thread (the CLI's main thread, a console worker). The session stays connected while a
place is held: the coordinator going away sets :attr:`Place.lost`, which ends a monitored
session as ``incomplete`` (:class:`PlaceSource`) with every byte read so far recorded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import getpass
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from etu.runner.boards.source import PortLost, SerialSource

LAB_EXTRA = "pip install 'etu[lab]'"
DEFAULT_COORDINATOR = "127.0.0.1:20408"  # labgrid's own default
POWER_CLASSES = (
    "NetworkPowerPort", "PDUDaemonPort", "NetworkUSBPowerPort", "NetworkSiSPMPowerPort",
    "TasmotaPowerPort", "NetworkYKUSHPowerPort", "NetworkSysfsGPIO",
)  # fmt: skip  # the resources `labgrid-client power` drives
SERIAL_CLASS = "NetworkSerialPort"
POWER_TIMEOUT = 60.0  # seconds `labgrid-client power cycle` may take
CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 7500),  # labgrid's own client's keepalive settings
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.ping_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.use_local_subchannel_pool", 1),  # a connection per session: see _own_connection
]


class PlaceError(RuntimeError):
    """A place that cannot be used; one line naming the place (or coordinator) and why."""


class LabgridMissing(PlaceError):
    """labgrid is not installed: the extra that brings it."""

    def __init__(self) -> None:
        super().__init__(f"--place needs labgrid: {LAB_EXTRA}")


class CoordinatorUnreachable(PlaceError):
    """No labgrid coordinator answered at the address."""


class PlaceHeld(PlaceError):
    """Somebody (possibly you, in another etu or with labgrid-client) holds the place."""

    def __init__(self, place: str, holder: str, since: float | None) -> None:
        self.place, self.holder, self.since = place, holder, since
        when = f" since {format_time(since)}" if since else ""
        super().__init__(f"place {place} is held by {holder}{when}")


def format_time(stamp: float) -> str:
    return datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S")


def labgrid_available() -> bool:
    try:
        import labgrid.remote.client  # noqa: F401
    except ImportError:
        return False
    return True


def coordinator_address(given: str | None = None) -> str:
    """``--coordinator HOST[:PORT]``, else labgrid's ``LG_COORDINATOR``, else its default."""
    address = (given or os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR).strip()
    if not address:
        raise PlaceError("--coordinator: empty address (expected HOST:PORT)")
    host, colon, port = address.rpartition(":")
    if colon and host and not port.isdigit():
        raise PlaceError(f"coordinator {address}: expected HOST:PORT")
    return address if colon and host else f"{address}:20408"


def whoami() -> str:
    """``USER@HOST`` as labgrid names this client (``LG_USERNAME``, ``LG_HOSTNAME``)."""
    return _holder_name(_labgrid_identity())


def _labgrid_identity() -> str:
    """labgrid's own ``HOST/USER`` for this client (ClientSession.gethostname/getuser)."""
    host = os.environ.get("LG_HOSTNAME", socket.gethostname())
    user = os.environ.get("LG_USERNAME", getpass.getuser())
    return f"{host}/{user}"


def _holder_name(acquired: str) -> str:
    """labgrid's ``HOST/USER`` as ``USER@HOST``."""
    host, slash, user = acquired.partition("/")
    return f"{user}@{host}" if slash else acquired


@dataclass(frozen=True)
class PlaceInfo:
    """What the coordinator says about one place."""

    name: str
    coordinator: str
    comment: str = ""
    matches: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    holder: str | None = None  # USER@HOST
    since: float | None = None  # when it was acquired (labgrid's `changed`)
    exporter: str | None = None  # the exporter serving its serial port
    serial_url: str | None = None  # rfc2217://HOST:PORT
    power: str | None = None  # the class of its power resource
    acquired_by: str | None = None  # labgrid's own HOST/USER of the holder

    def held_by_me(self) -> bool:
        return self.acquired_by is not None and self.acquired_by == _labgrid_identity()

    def to_json(self) -> dict:
        fields = asdict(self)
        del fields["acquired_by"]
        return fields


# ----------------------------------------------------------------------- the coordinator
_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _labgrid_loop() -> asyncio.AbstractEventLoop:
    """The one event loop (on its own thread) every labgrid session of this process runs
    on. gRPC's asyncio layer serves one loop per process: sessions on loops of their own
    threads (a console listing places while another worker acquires one) fail each other's
    connects ("Could not connect to coordinator", "Peer … does not have a valid session")."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="etu-labgrid", daemon=True).start()
            _LOOP = loop
        return _LOOP


async def _own_connection(session) -> None:
    """Give the session a TCP connection of its own. gRPC shares one connection among the
    channels of a process with the same target and options, and the coordinator keys a
    client's session by its connection's address: two sessions sharing one (the console
    lists places while a worker acquires one, or one session's end is still being handled
    when the next starts) fail each other's startup or lose their session ("Peer … does not
    have a valid session")."""
    import grpc
    from labgrid.remote.generated import labgrid_coordinator_pb2_grpc

    await session.channel.close()  # never connected: channels connect on their first call
    session.channel = grpc.aio.insecure_channel(target=session.address, options=CHANNEL_OPTIONS)
    session.stub = labgrid_coordinator_pb2_grpc.CoordinatorStub(session.channel)


class _Coordinator:
    """labgrid's ClientSession on the process's labgrid event loop."""

    def __init__(self, address: str, timeout: float) -> None:
        try:
            from labgrid.remote.client import ClientSession  # noqa: F401
        except ImportError:
            raise LabgridMissing() from None
        self.address = address
        self.timeout = timeout
        self.loop = _labgrid_loop()
        self.session = None
        self.took: str | None = None  # the place this client's acquire took
        try:
            self.session = self.call(self._start())
        except BaseException:
            self.close()
            raise

    async def _start(self):
        from labgrid.remote.client import ClientSession
        from labgrid.util.proxy import proxymanager

        target = proxymanager.get_grpc_address(self.address, default_port=20408)
        session = ClientSession(target, asyncio.get_running_loop())
        await _own_connection(session)
        try:
            await session.start()
        except Exception as error:
            with contextlib.suppress(Exception):
                await session.close()
            raise CoordinatorUnreachable(
                f"coordinator {self.address}: unreachable "
                f"({_first_line(error).removeprefix('Error: ')})"
            ) from None
        return session

    def call(self, coroutine, timeout: float | None = None):
        """Run ``coroutine`` on the session's loop and wait for its result."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout or self.timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise CoordinatorUnreachable(
                f"coordinator {self.address}: no answer in {timeout or self.timeout:g} s"
            ) from None
        except (KeyboardInterrupt, SystemExit):
            # a stop signal while the coordinator works: let the call finish (a lock half
            # taken would be left behind), then go on stopping
            with contextlib.suppress(BaseException):
                future.result(5.0)
            raise

    @property
    def gone(self) -> bool:
        """The connection to the coordinator ended (it stopped, or the network went)."""
        return self.session is None or self.session.stopping.is_set()

    def close(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None

            async def _stop() -> None:
                with contextlib.suppress(Exception):
                    await session.stop()
                with contextlib.suppress(Exception):
                    await session.close()

            with contextlib.suppress(Exception):
                self.call(_stop(), timeout=5.0)

    # -------------------------------------------------------------- reading the state
    async def _sync(self) -> None:
        if not await self.session.sync_with_coordinator():
            raise CoordinatorUnreachable(f"coordinator {self.address}: went away")

    def place_names(self) -> list[str]:
        async def names() -> list[str]:
            await self._sync()
            return sorted(self.session.places)

        return self.call(names())

    def info(self, name: str) -> PlaceInfo:
        async def read() -> PlaceInfo:
            await self._sync()
            return self._info(self._place(name))

        return self.call(read())

    def _place(self, name: str):
        """The place called ``name`` (or with that alias): exact names only, never
        labgrid's substring match, which would pick ``desk-10`` for ``desk-1``."""
        places = self.session.places
        if name in places:
            return places[name]
        for place in places.values():
            if name in {alias.rpartition(":")[2] for alias in place.aliases}:
                return place
        known = ", ".join(sorted(places)) or "none"
        raise PlaceError(f"place {name}: unknown to coordinator {self.address} (known: {known})")

    def _resources(self, place) -> list[tuple[tuple[str, str, str, str], object]]:
        """(path, ResourceEntry) of the place's resources: those it holds while acquired,
        else those its matches would take."""
        found = []
        if place.acquired:
            for path in place.acquired_resources:
                exporter, group, _cls, name = path
                entry = self.session.resources.get(exporter, {}).get(group, {}).get(name)
                if entry is not None:
                    found.append((tuple(path), entry))
            return found
        for exporter, groups in sorted(self.session.resources.items()):
            for group, members in sorted(groups.items()):
                for name, entry in sorted(members.items()):
                    if "cls" not in entry.data:
                        continue
                    path = (exporter, group, entry.cls, name)
                    if place.getmatch(path) is not None:
                        found.append((path, entry))
        return found

    def _info(self, place) -> PlaceInfo:
        resources = self._resources(place)
        serial = next(((path, e) for path, e in resources if e.cls == SERIAL_CLASS), None)
        power = next((e.cls for _, e in resources if e.cls in POWER_CLASSES), None)
        url = exporter = None
        if serial is not None:
            (exporter, *_), entry = serial
            url = serial_url(entry.params)
        return PlaceInfo(
            name=place.name, coordinator=self.address, comment=place.comment or "",
            matches=sorted(str(match) for match in place.matches),
            resources=["/".join(path) for path, _ in resources],
            holder=_holder_name(place.acquired) if place.acquired else None,
            since=float(place.changed) if place.acquired and place.changed else None,
            exporter=exporter, serial_url=url, power=power, acquired_by=place.acquired or None,
        )  # fmt: skip

    # -------------------------------------------------------------- the lock
    def acquire(self, name: str) -> PlaceInfo:
        async def acquire() -> PlaceInfo:
            import grpc
            from labgrid.remote.generated import labgrid_coordinator_pb2

            await self._sync()
            place = self._place(name)
            if place.acquired:
                raise PlaceHeld(place.name, _holder_name(place.acquired), place.changed)
            unmatched = place.unmatched(
                [(exp, group, entry.cls, res)
                 for exp, groups in self.session.resources.items()
                 for group, members in groups.items()
                 for res, entry in members.items() if "cls" in entry.data]
            )  # fmt: skip
            if unmatched:
                raise PlaceError(f"place {place.name}: its match {unmatched} has no resource "
                                 "(is its exporter running?)")  # fmt: skip
            request = labgrid_coordinator_pb2.AcquirePlaceRequest(placename=place.name)
            try:
                await self.session.stub.AcquirePlace(request)
                self.took = name
            except grpc.aio.AioRpcError as error:
                await self._sync()  # a race lost: the winner is in the update
                place = self._place(name)
                if place.acquired:
                    raise PlaceHeld(place.name, _holder_name(place.acquired),
                                    place.changed) from None  # fmt: skip
                raise PlaceError(f"place {place.name}: not acquired: {error.details()}") from None
            await self._sync()
            return self._info(self._place(name))

        return self.call(acquire())

    def release(self, name: str) -> None:
        async def release() -> None:
            import grpc
            from labgrid.remote.generated import labgrid_coordinator_pb2

            await self._sync()
            place = self._place(name)
            if not place.acquired:
                return
            if place.acquired != _labgrid_identity():
                raise PlaceError(f"place {place.name}: held by {_holder_name(place.acquired)}, "
                                 "not by you: not released")  # fmt: skip
            # fromuser: released only if still ours (never someone's who took it since)
            request = labgrid_coordinator_pb2.ReleasePlaceRequest(
                placename=place.name, fromuser=place.acquired
            )
            try:
                await self.session.stub.ReleasePlace(request)
            except grpc.aio.AioRpcError as error:
                raise PlaceError(f"place {place.name}: not released: {error.details()}") from None
            await self._sync()

        self.call(release())


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def serial_url(params: dict) -> str | None:
    """The pyserial URL of a NetworkSerialPort's parameters (rfc2217, or raw TCP)."""
    host, port = params.get("host"), params.get("port")
    if not host or not isinstance(port, int) or not 0 < port < 65536:
        return None
    scheme = "socket" if params.get("protocol") == "raw" else "rfc2217"
    host = f"[{host}]" if ":" in str(host) else host
    return f"{scheme}://{host}:{port}"


def _quiet_labgrid_logs() -> None:
    """labgrid reports a coordinator going away with ``logging.error`` on the root logger;
    without a handler Python prints it raw. etu says it in its own words instead."""
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


# ----------------------------------------------------------------------- public calls
def _connect(coordinator: str | None, timeout: float) -> _Coordinator:
    if not labgrid_available():
        raise LabgridMissing()
    _quiet_labgrid_logs()
    return _Coordinator(coordinator_address(coordinator), timeout)


def list_places(coordinator: str | None = None, *, timeout: float = 10.0) -> list[PlaceInfo]:
    """Every place the coordinator knows, by name (the Boards tab's list)."""
    client = _connect(coordinator, timeout)
    try:
        return [client.info(name) for name in client.place_names()]
    finally:
        client.close()


def place_info(name: str, coordinator: str | None = None, *, timeout: float = 10.0) -> PlaceInfo:
    client = _connect(coordinator, timeout)
    try:
        return client.info(name)
    finally:
        client.close()


def acquire_place(name: str, coordinator: str | None = None, *,
                  timeout: float = 10.0) -> PlaceInfo:  # fmt: skip
    """Take the place and keep it (until :func:`release_place`): the Boards tab's key."""
    client = _connect(coordinator, timeout)
    try:
        return client.acquire(name)
    finally:
        client.close()


def release_place(name: str, coordinator: str | None = None, *, timeout: float = 10.0) -> None:
    """Give back a place this user holds (nothing when it is free)."""
    client = _connect(coordinator, timeout)
    try:
        client.release(name)
    finally:
        client.close()


def power_cycle_wanted(profile) -> bool:
    """The profile asks for a power cycle before flashing (``[transfer] power_cycle``)."""
    return bool(profile.transfer.get("power_cycle", False))


def power_off_seconds(profile) -> float:
    value = profile.transfer.get("power_off", 1.0)
    return float(value) if isinstance(value, int | float) and 0 <= value <= 600 else 1.0


class Place:
    """One place held for one run: :meth:`acquire`, use its port, :meth:`release` (also on
    the way out of a ``with`` block). The connection to the coordinator stays open while
    it is held, so a coordinator that goes away is noticed (:attr:`lost`)."""

    def __init__(self, name: str, coordinator: str | None = None, *,
                 timeout: float = 10.0) -> None:  # fmt: skip
        self.name = name
        self.coordinator = coordinator_address(coordinator)
        self.timeout = timeout
        self.info: PlaceInfo | None = None
        self.lost = threading.Event()
        self._client: _Coordinator | None = None
        self._watch: threading.Thread | None = None

    def acquire(self) -> PlaceInfo:
        """labgrid's lock on the place; PlaceHeld naming the holder when somebody has it
        (you too: etu cannot tell another etu of yours from a labgrid-client session)."""
        self._client = client = _connect(self.coordinator, self.timeout)
        try:
            info = client.acquire(self.name)
        except PlaceError:
            self._client = None
            client.close()
            raise
        except BaseException:  # stopped while acquiring: the lock may be ours by now
            if client.took == self.name:
                self.release()
            else:
                self._client = None
                client.close()
            raise
        self.info = info
        if info.serial_url is None:
            self.release()
            raise PlaceError(f"place {self.name}: no {SERIAL_CLASS} among its resources "
                             f"({', '.join(info.resources) or 'none'})")  # fmt: skip
        self._watch = threading.Thread(target=self._watch_coordinator, daemon=True,
                                       name="etu-place-watch")  # fmt: skip
        self._watch.start()
        return info

    def _watch_coordinator(self) -> None:
        client = self._client
        while client is not None and self._client is client:
            if client.gone:
                self.lost.set()
                return
            time.sleep(0.1)

    def serial_url(self) -> str:
        if self.info is None or self.info.serial_url is None:
            raise PlaceError(f"place {self.name}: not acquired")
        return self.info.serial_url

    def power_cycle(self, off_seconds: float = 1.0) -> None:
        """Off, wait, on with labgrid's own power driver for the place's power resource
        (``labgrid-client power cycle``, which knows every kind labgrid drives)."""
        if self.info is None:
            raise PlaceError(f"place {self.name}: not acquired")
        if self.info.power is None:
            raise PlaceError(f"place {self.name}: no power resource to cycle")
        argv = [labgrid_client(), "-x", self.coordinator, "-p", self.info.name, "power",
                "cycle", "-t", f"{off_seconds:g}"]  # fmt: skip
        try:
            done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, errors="replace", timeout=POWER_TIMEOUT,
                                  check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise PlaceError(f"place {self.name}: power cycle: no answer in "
                             f"{POWER_TIMEOUT:g} s") from None  # fmt: skip
        except OSError as error:
            raise PlaceError(f"place {self.name}: power cycle: {error.strerror}") from None
        if done.returncode != 0:
            said = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
            last = "".join(ch for ch in (said[-1] if said else "") if ch.isprintable())[:200]
            raise PlaceError(f"place {self.name}: power cycle failed: {last or 'no output'}")

    def release(self) -> str | None:
        """Give the place back; never raises. Returns why it could not be (None: done)."""
        client, self._client = self._client, None
        if client is None:
            return None
        try:
            if client.gone:
                return (f"place {self.name}: coordinator {self.coordinator} went away; "
                        "the place may still be held")  # fmt: skip
            client.release(self.name)
            return None
        except PlaceError as error:
            return str(error)
        finally:
            client.close()

    def session_meta(self) -> dict:
        """The ``meta.json`` (and ``--json``) fields of a session on this place."""
        info = self.info
        return {
            "place": self.name,
            "exporter": info.exporter if info else None,
            "holder": info.holder if info else whoami(),
            "coordinator": self.coordinator,
        }

    def __enter__(self) -> Place:
        self.acquire()
        return self

    def __exit__(self, *_exc) -> None:
        self.release()


def labgrid_client() -> str:
    """The ``labgrid-client`` beside this Python (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "labgrid-client"
    if beside.is_file():
        return str(beside)
    return shutil.which("labgrid-client") or "labgrid-client"


class PlaceSource(SerialSource):
    """A board's port served by a place: when the coordinator goes away the session ends
    (``incomplete``: etu no longer knows it holds the board), once the bytes already on
    their way have been read, the loss recorded as an event."""

    def __init__(self, place: Place, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.place = place
        self._said_lost = False

    def _over_time(self) -> bool:
        if self.place.lost.is_set() and not self._said_lost and self._drained():
            self._said_lost = True
            reason = (f"coordinator {self.place.coordinator} went away: place "
                      f"{self.place.name} no longer known to be held")  # fmt: skip
            self._on_notice([PortLost(self.port, time.time(), self.received, reason)])
            return True
        return super()._over_time()

    def _drained(self) -> bool:
        handle = self._handle
        try:
            return handle is None or not handle.in_waiting
        except Exception:  # the port went too: nothing more to read
            return True
