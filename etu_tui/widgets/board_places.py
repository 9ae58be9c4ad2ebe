"""The Boards tab's places: the labgrid coordinator's places (name, matched resources, who
holds each), listed by a worker, with keys to acquire or release the selected place and to
flash or monitor the board behind it.

The coordinator is labgrid's ``LG_COORDINATOR`` or the workspace's ``coordinator`` setting;
without one (or without labgrid) the list says so in one line. Every call to the coordinator
(runner/boards/place.py, blocking) runs in a thread worker that posts a message; the widget
owns its list and selection, the Boards panel owns the keys and the flash.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import DataTable, Static

from etu.parsers.errors import describe_error, first_line
from etu.tui.safe_text import printable

if TYPE_CHECKING:  # the place module is imported when a place is used
    from etu.runner.boards.place import PlaceInfo

PLACES_POLL_SECONDS = 5.0  # how often the places are listed again (holders change)
PLACE_KEYS = "a acquire · x release · p flash · w monitor"
NO_COORDINATOR = "Places: no labgrid coordinator (set LG_COORDINATOR or coordinator in etu.toml)"


@dataclass
class PlacesListed(Message):
    """The coordinator's places, or why not."""

    places: list[PlaceInfo]
    coordinator: str | None
    error: str | None
    request: int


@dataclass
class PlaceChanged(Message):
    """An acquire or a release ended: what happened, in one line."""

    text: str
    error: bool = False


@cache
def held_source_type() -> type:
    """:class:`PlaceSource` (runner.boards.place) that gives the place back when the session
    ends (the run's last callback, on the reader thread), or when it is let go without ever
    starting. Made on first use: the console starts without pyserial or the place module."""
    from etu.runner.boards.place import PlaceSource

    class HeldPlaceSource(PlaceSource):
        def bind(self, on_output, on_exit, on_stats, on_notice) -> None:
            def exited(code) -> None:
                try:
                    on_exit(code)
                finally:
                    self.place.release()

            super().bind(on_output, exited, on_stats, on_notice)

        def stop(self) -> None:
            super().stop()
            if self._thread is None:  # never started: nothing else would release it
                self.close()

        def close(self) -> None:
            started = self._thread is not None
            super().close()
            if not started:  # off the caller's thread: the console's UI never waits on it
                threading.Thread(target=self.place.release, name="etu-place-release",
                                 daemon=True).start()  # fmt: skip

    return HeldPlaceSource


def coordinator_setting(workspace: Path | None) -> str | None:
    """``LG_COORDINATOR`` or the workspace's ``coordinator`` setting; None for neither."""
    from etu.runner.config import ConfigError, load_settings

    try:
        return load_settings(workspace).coordinator or None
    except ConfigError:
        import os

        return os.environ.get("LG_COORDINATOR") or None


def resources_text(place) -> str:
    """``NetworkSerialPort, NetworkPowerPort on lab-host``: the classes a place matched."""
    classes = []
    for path in place.resources:
        parts = str(path).split("/")
        name = parts[2] if len(parts) >= 3 else str(path)
        if name not in classes:
            classes.append(name)
    text = ", ".join(classes) or "no resource matched"
    return f"{text} on {place.exporter}" if place.exporter else text


def holder_text(place) -> str:
    from etu.runner.boards.place import format_time

    if not place.holder:
        return "free"
    mine = " (you)" if place.held_by_me() else ""
    since = f" since {format_time(place.since)[11:]}" if place.since else ""
    return f"{place.holder}{mine}{since}"


class BoardPlaces(Vertical):
    """The Places list: one row per place, the status line saying what the last call did."""

    DEFAULT_CSS = """
    BoardPlaces {
        height: auto;
        max-height: 9;
        border: round $secondary;
        border-subtitle-color: $text-muted;
        padding: 0 1;
        & #places-status {
            height: 1; color: $text-muted; text-wrap: nowrap; text-overflow: ellipsis;
        }
        & #places-table { height: auto; max-height: 6; overflow-x: hidden; }
    }
    BoardPlaces.-idle { border: none; padding: 0 1; height: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workspace: Path | None = None
        self.coordinator: str | None = None  # as configured when last listed
        self.places: list[PlaceInfo] = []
        self.busy = False  # an acquire or release is on its way
        self.said: str | None = None  # the last call's line, kept until the cursor moves
        self._highlighted: str | None = None  # the place the cursor was last on
        self._request = 0

    def compose(self) -> ComposeResult:
        self.add_class("-idle")  # one line until a coordinator answers with its places
        yield Static(NO_COORDINATOR, id="places-status")
        table = DataTable(id="places-table", cursor_type="row", show_cursor=True)
        table.display = False
        yield table

    def on_mount(self) -> None:
        self.border_title = "Places (labgrid)"
        table = self.query_one("#places-table", DataTable)
        table.add_column("place", key="place")
        table.add_column("held by", key="holder")
        table.add_column("resources", key="resources")
        self.set_interval(PLACES_POLL_SECONDS, self.refresh_places)
        self.refresh_places()

    def set_workspace(self, workspace: Path | None) -> None:
        self.workspace = workspace
        self.refresh_places()

    # -- listing ---------------------------------------------------------------------------

    def refresh_places(self) -> None:
        self._request += 1
        self.run_worker(partial(self._list, self.workspace, self._request), thread=True,
                        group="board-places", exclusive=True, exit_on_error=False)  # fmt: skip

    def _list(self, workspace: Path | None, request: int) -> None:
        from etu.runner.boards.place import PlaceError, labgrid_available, list_places

        coordinator = coordinator_setting(workspace)
        if coordinator is None:
            self.post_message(PlacesListed([], None, None, request))
            return
        if not labgrid_available():
            error = "labgrid is not installed: pip install 'etu[lab]' to list its places"
            self.post_message(PlacesListed([], coordinator, error, request))
            return
        try:
            places, error = list_places(coordinator), None
        except PlaceError as failure:
            places, error = [], str(failure)
        except Exception as failure:  # gRPC or anything unforeseen: one line, never a crash
            places, error = [], describe_error(failure)
        self.post_message(PlacesListed(places, coordinator, error, request))

    def on_places_listed(self, message: PlacesListed) -> None:
        message.stop()
        if message.request != self._request:
            return
        self.coordinator = message.coordinator
        table = self.query_one("#places-table", DataTable)
        status = self.query_one("#places-status", Static)
        self.set_class(message.coordinator is None or message.error is not None, "-idle")
        if message.coordinator is None:
            self.places = []
            table.display = False
            self.border_subtitle = ""
            status.update(Content.styled(NO_COORDINATOR, "dim"))
            return
        where = printable(message.coordinator)
        if message.error is not None:
            self.places = []
            table.display = False
            self.border_subtitle = ""
            status.update(Content.styled(f"Places: {printable(first_line(message.error))}",
                                         "$text-error"))  # fmt: skip
            return
        chosen = self.selected()
        self.places = message.places
        table.clear()
        for place in self.places:
            table.add_row(printable(place.name), printable(holder_text(place)),
                          printable(resources_text(place)), key=place.name)  # fmt: skip
        table.display = bool(self.places)
        if chosen is not None and any(p.name == chosen.name for p in self.places):
            table.move_cursor(row=table.get_row_index(chosen.name))
        self.border_title = f"Places on {where} ({len(self.places)})"
        self.border_subtitle = PLACE_KEYS if self.places else ""
        if not self.places:
            status.update(Content.styled(f"no place on {where} (labgrid-client create)", "dim"))
        elif not self.busy and self.said is None:
            self._show_selected()

    @on(DataTable.RowHighlighted, "#places-table")
    def _row_moved(self) -> None:
        """Another place highlighted (not the same one again after a re-listing): its port."""
        place = self.selected()
        name = place.name if place is not None else None
        if name == self._highlighted:
            return
        self._highlighted = name
        if not self.busy:
            self.said = None
            self._show_selected()

    def _show_selected(self) -> None:
        place = self.selected()
        if place is None:
            return
        port = place.serial_url or "no serial port"
        power = f" · power {place.power}" if place.power else ""
        self.query_one("#places-status", Static).update(
            Content.styled(printable(f"{place.name}: {port}{power}"), "dim")
        )

    def selected(self):
        """The highlighted place (runner.boards.place.PlaceInfo), None when there is none."""
        table = self.query_one("#places-table", DataTable)
        if not self.places or table.row_count == 0:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except Exception:
            return None
        return next((p for p in self.places if p.name == key), None)

    # -- acquire and release ---------------------------------------------------------------

    def say(self, text: str, *, error: bool = False) -> None:
        self.said = text
        style = "$text-error" if error else ""
        self.query_one("#places-status", Static).update(Content.styled(printable(text), style))

    def acquire(self) -> bool:
        """Take the selected place for you (labgrid's lock, kept until released)."""
        return self._change("acquire")

    def release(self) -> bool:
        """Give back the selected place (one you hold)."""
        return self._change("release")

    def _change(self, how: str) -> bool:
        place = self.selected()
        if place is None or self.coordinator is None:
            self.say("no place selected (a coordinator with places lists them here)", error=True)
            return False
        if self.busy:
            return False
        self.busy = True
        self.say(f"{how[:-1]}ing place {place.name}…")
        self.run_worker(partial(self._change_in_thread, how, place.name, self.coordinator),
                        thread=True, group="board-places-lock", exit_on_error=False)  # fmt: skip
        return True

    def _change_in_thread(self, how: str, name: str, coordinator: str) -> None:
        from etu.runner.boards.place import PlaceError, acquire_place, release_place

        try:
            if how == "acquire":
                info = acquire_place(name, coordinator)
                text = f"place {info.name} acquired: held by {info.holder} until released (x)"
            else:
                release_place(name, coordinator)
                text = f"place {name} released"
        except PlaceError as error:
            self.post_message(PlaceChanged(str(error), error=True))
            return
        except Exception as error:  # anything unforeseen: one line
            self.post_message(PlaceChanged(describe_error(error), error=True))
            return
        self.post_message(PlaceChanged(text))

    def on_place_changed(self, message: PlaceChanged) -> None:
        message.stop()
        self.busy = False
        self.say(message.text, error=message.error)
        self.refresh_places()


def hold_for_run(name: str, coordinator: str):
    """The place acquired for one run (flash or monitor from the Boards tab): released when
    that run's session ends. Raises PlaceError (held, unreachable, no serial port)."""
    from etu.runner.boards.place import Place

    place = Place(name, coordinator)
    place.acquire()
    return place


def flash_place_in_thread(
    panel, profile, firmware: Path, baud: int | None, name: str, coordinator: str
) -> None:
    """The Boards tab's ``p``: hold the place, flash ``firmware`` through its serial port
    (power-cycled first when the profile asks), hand the boot to the Run tab; the place is
    released when that session ends, or now when anything fails. Posts the Boards panel's
    flash messages (status, progress, failed, flashed)."""
    from etu.runner.boards.flash import (
        FlashFile,
        flash_board,
        flashed_session_meta,
        monitor_source,
    )
    from etu.runner.boards.place import PlaceError, power_cycle_wanted, power_off_seconds
    from etu.runner.boards.ports import pick_ports
    from etu.tui.widgets.boards import (
        Flashed,
        FlashFailed,
        FlashProgressed,
        FlashStatus,
        tab_advice,
    )

    try:
        place = hold_for_run(name, coordinator)
    except PlaceError as error:
        panel.post_message(FlashFailed(str(error)))
        return
    files = [FlashFile(Path(firmware))]
    try:
        if power_cycle_wanted(profile):
            panel.post_message(FlashStatus(f"power-cycling place {name}"))
            place.power_cycle(power_off_seconds(profile))
        link = pick_ports(profile, [], port=place.serial_url(), monitor=True)
        result = flash_board(
            profile, files, link,
            status=lambda text: panel.post_message(FlashStatus(text)),
            progress=lambda p: panel.post_message(FlashProgressed(p)),
        )  # fmt: skip
        source = monitor_source(profile, result, baud=baud,
                                source_type=partial(held_source_type(), place))  # fmt: skip
        meta = {**flashed_session_meta(profile, files, result, baud=baud),
                **place.session_meta()}  # fmt: skip
    except Exception as error:  # every failure is one line, and the place goes back
        place.release()
        panel.post_message(FlashFailed(tab_advice(error)))
        return
    if not isinstance(source, held_source_type()):  # no port to follow (or QEMU's own)
        place.release()
    panel.post_message(Flashed(source, meta, f"{profile.label or profile.name} on {name}"))


def monitor_place_in_thread(
    places: BoardPlaces, profile, baud: int | None, name: str, coordinator: str
) -> None:
    """The Boards tab's ``w``: hold the place and monitor its serial port in the Run tab
    (the profile's baud and framing, if one is picked), released when the session ends."""
    from etu.runner.boards.place import PlaceError
    from etu.runner.boards.source import PortError
    from etu.runner.session import board_session_meta
    from etu.tui.widgets.boards import BoardMonitorRequested

    try:
        place = hold_for_run(name, coordinator)
    except PlaceError as error:
        places.post_message(PlaceChanged(str(error), error=True))
        return
    settings = dict(profile.serial_settings) if profile is not None else {"baudrate": 115200}
    if baud:
        settings["baudrate"] = baud
    url = place.serial_url()
    kinds = {"eol": profile.eol, "reset": profile.reset} if profile is not None else {}
    source = held_source_type()(place, url, settings, **kinds)
    try:
        source.open()
    except PortError as error:
        source.close()
        places.post_message(PlaceChanged(str(error), error=True))
        return
    meta = board_session_meta(
        board=profile.name if profile else None, label=profile.label if profile else None,
        port=url, baud=settings["baudrate"], target=profile.target if profile else None,
    )  # fmt: skip
    meta.update(place.session_meta())
    places.post_message(PlaceChanged(f"monitoring place {name} in the Run tab"))
    label = f"{profile.label or profile.name} on {name}" if profile else f"place {name}"
    places.post_message(BoardMonitorRequested(source, meta, label))


__all__ = [
    "BoardPlaces",
    "PlaceChanged",
    "PlacesListed",
    "coordinator_setting",
    "flash_place_in_thread",
    "held_source_type",
    "hold_for_run",
    "holder_text",
    "monitor_place_in_thread",
    "resources_text",
]
