"""JupyterLab from the project's .venv, driven by Debian's chromium through Playwright.

    make setup-browser     # apt-get install chromium; pip install playwright into .venv
    make test-browser      # LABKIT_BROWSER_TESTS=1 pytest tests/browser

Everything here does what a student does: open a notebook, click into each line of the
parameters cell to change, select it and type its new value, pick *Run > Run All Cells*, wait,
save. The assertions then read both what the browser shows (DOM) and what JupyterLab saved (the
.ipynb).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent.parent
VENV_BIN = Path(sys.executable).parent
#: Playwright's own browser build cannot be downloaded here: the system's chromium is used.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
#: Everything a slow, shared 2-core machine needs is scaled by this (LABKIT_BROWSER_SLOWDOWN).
SLOWDOWN = float(os.environ.get("LABKIT_BROWSER_SLOWDOWN", "1") or 1)

#: A code cell's prompt shows [*] (queued or running) or a number (ran).
_A_CELL_STARTED = ("() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell "
                   ".jp-InputPrompt')].some(p => /\\[[*0-9]/.test(p.innerText))")

# JupyterLab settings for a quiet, deterministic page: no news/update pop-ups, every cell kept
# in the DOM (no virtual scrolling) so outputs can be inspected, no autosave racing our save.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                       "checkForUpdates": False},
    # recordTiming: each cell's saved metadata says when the kernel took and answered its request,
    # which tells a cell run out of order from one run twice.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none", "recordTiming": True},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


def chromium() -> Optional[str]:
    chosen = os.environ.get("LABKIT_CHROMIUM")
    for path in ([chosen] if chosen else []) + list(CHROMIUM_CANDIDATES):
        if path and os.access(path, os.X_OK):
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A `jupyter lab` server on a free loopback port, serving ``root``."""

    def __init__(self, root: Path, state: Path, env: Optional[Dict[str, str]] = None):
        self.root, self.state = root, state
        self.token = uuid.uuid4().hex
        self.env = dict(os.environ if env is None else env)
        # The suite's conftest forces text bars for papermill runs; a student's lab has no such setting.
        self.env.pop("LABKIT_PROGRESS", None)
        self.env["PATH"] = str(VENV_BIN) + os.pathsep + self.env.get("PATH", "")
        settings = state / "settings"
        for name, values in LAB_SETTINGS.items():
            path = settings / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        self.env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
        self.env["JUPYTERLAB_WORKSPACES_DIR"] = str(state / "workspaces")
        self.env["JUPYTER_RUNTIME_DIR"] = str(state / "runtime")
        self.process: Optional[subprocess.Popen] = None
        self.port = 0

    @property
    def url(self) -> str:
        return "http://127.0.0.1:{}".format(self.port)

    def start(self, timeout: float = 180) -> "Lab":
        for _attempt in range(3):  # a port taken between free_port() and the bind: try another
            self.port = free_port()
            with open(self.state / "jupyter-lab.log", "ab") as log:
                self.process = self._popen(log)
            deadline = time.monotonic() + timeout * SLOWDOWN
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    self.api("GET", "/api/status")
                    return self
                except OSError:
                    time.sleep(0.5)
            self.stop()
        log_tail = (self.state / "jupyter-lab.log").read_text(errors="replace")[-2000:]
        raise RuntimeError("jupyter lab did not start; its log ends:\n" + log_tail)

    def _popen(self, log) -> subprocess.Popen:
        return subprocess.Popen(
            [str(VENV_BIN / "jupyter-lab"), "--no-browser", "--ServerApp.ip=127.0.0.1",
             "--ServerApp.port={}".format(self.port), "--ServerApp.port_retries=0",
             "--IdentityProvider.token={}".format(self.token), "--ServerApp.root_dir={}".format(self.root),
             "--LabServerApp.open_browser=False"] + (["--allow-root"] if os.geteuid() == 0 else []),
            cwd=str(self.root), env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def api(self, method: str, path: str):
        request = urllib.request.Request(self.url + path, method=method,
                                         headers={"Authorization": "token " + self.token})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        for kernel in self.api("GET", "/api/kernels") or []:
            self.api("DELETE", "/api/kernels/" + kernel["id"])

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None


def copy_notebooks(target: Path, evidence: Sequence[Tuple[str, Tuple[str, str]]] = ()) -> None:
    """The notebooks folder as a student's checkout has it (no executed outputs, no runs), plus
    ``(key, (repository folder, name))`` evidence copied beside notebook ``key`` under ``name``."""
    shutil.copytree(str(ROOT / "notebooks"), str(target),
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    for key, (folder, name) in evidence:
        shutil.copytree(str(ROOT / folder), str(target / key.rsplit("/", 1)[0] / name))


# --- the page -------------------------------------------------------------------------------
class NotebookPage:
    """One open notebook in a Playwright page, operated through the UI."""

    def __init__(self, page, lab: Lab, path: str):
        self.page, self.lab, self.path = page, lab, path

    def open(self, timeout: float = 180) -> "NotebookPage":
        # A workspace of its own, reset: JupyterLab would otherwise reopen every notebook an
        # earlier page had open, each with a kernel of its own.
        self.page.goto("{}/lab/workspaces/{}/tree/{}?reset&token={}".format(
            self.lab.url, uuid.uuid4().hex[:12], self.path, self.lab.token),
                       timeout=timeout * 1000 * SLOWDOWN)
        # The panel shows one empty placeholder cell until the file's cells arrive.
        cells = len(json.loads((self.lab.root / self.path).read_text())["cells"])
        self.page.wait_for_function(
            "n => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell').length === n",
            arg=cells, timeout=timeout * 1000 * SLOWDOWN)
        self.wait_kernel_idle(timeout)
        return self

    def panel(self):
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").first

    def wait_kernel_idle(self, timeout: float) -> None:
        """The server has started this page's kernel and the page shows it idle. The page's
        indicator alone is not enough: it reads 'idle' before the page has any kernel (its initial
        state), and Run All picked then queues nothing."""
        deadline = time.monotonic() + timeout * SLOWDOWN
        while True:
            kernels = [s.get("kernel") or {} for s in self.lab.api("GET", "/api/sessions") or []
                       if s.get("path") == self.path]
            if kernels and kernels[0].get("execution_state") == "idle":
                break
            if time.monotonic() > deadline:
                raise AssertionError("{}: no idle kernel after {:.0f} s; the server's kernel: {}".format(
                    self.path, timeout * SLOWDOWN, kernels))
            time.sleep(0.5)
        self.page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator"
                                    "[data-status='idle']", timeout=timeout * 1000 * SLOWDOWN)

    def cell(self, index: int):
        return self.panel().locator(".jp-Notebook .jp-Cell").nth(index)

    def editor_text(self, index: int) -> str:
        lines = self.cell(index).locator(".cm-content .cm-line").all_inner_texts()
        return "\n".join(line.replace("\u200b", "") for line in lines)

    def type_into_cell(self, index: int, source: str) -> None:
        """Click into the cell, select all its text and type ``source`` over it, key by key."""
        self.cell(index).locator(".cm-content").click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.press("Delete")
        first, *rest = source.split("\n")
        self.page.keyboard.type(first)
        self._type_new_lines(rest)
        self._leave_editor(index, source)

    def edit_lines(self, index: int, source: str) -> None:
        """Make cell ``index`` read ``source`` as a student changes a few values: each line that differs
        is selected (a click into it, End, Shift+Home) and typed over key by key, and lines past the
        cell's end are typed after it. A cell that would get shorter is typed anew."""
        old, new = self.editor_text(index).split("\n"), source.split("\n")
        if len(new) < len(old):
            self.type_into_cell(index, source)
            return
        lines = self.cell(index).locator(".cm-content .cm-line")
        for number, line in enumerate(new[:len(old)]):
            if line == old[number]:
                continue
            lines.nth(number).click()
            self.page.keyboard.press("End")
            if old[number]:  # on an empty line Delete would join the next one to it
                self.page.keyboard.press("Shift+Home")
                self.page.keyboard.press("Delete")
            self.page.keyboard.type(line)
        if len(new) > len(old):
            lines.nth(len(old) - 1).click()
            self.page.keyboard.press("End")
            self._type_new_lines(new[len(old):])
        self._leave_editor(index, source)

    def _type_new_lines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.page.keyboard.press("Enter")
            self.page.keyboard.press("Shift+Home")  # drop any auto-indent the editor added
            self.page.keyboard.press("Delete")
            self.page.keyboard.type(line)

    def _leave_editor(self, index: int, source: str) -> None:
        typed = self.editor_text(index)
        if typed.strip() != source.strip():
            raise AssertionError("the cell reads {!r} where {!r} was typed".format(typed, source))
        self.page.keyboard.press("Escape")  # command mode, as after editing

    def activate(self) -> None:
        """Give the notebook focus, in command mode, as a click on its first cell's margin does."""
        self.cell(0).click(position={"x": 3, "y": 3})
        self.page.keyboard.press("Escape")

    def run_all(self, timeout: float) -> float:
        """*Run > Run All Cells* from the menu bar; waits until no cell is queued or running."""
        start = time.monotonic()
        self.start_run_all()
        return self.run_all_finished(timeout, start)

    def start_run_all(self, tries: int = 3) -> None:
        """*Run > Run All Cells*, picked again only while no cell has started (never queued twice)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeoutError  # only where it is installed
        seen = ""
        for _ in range(tries):
            self.activate()
            self.page.locator(".lm-MenuBar-item", has_text="Run").first.click()
            item = self.page.locator(".lm-Menu-item[data-command='runmenu:run-all']")
            item.wait_for(state="visible", timeout=60000 * SLOWDOWN)
            # Run All acts on the notebook with focus; with none, the item is disabled and a
            # click on it does nothing.
            if "lm-mod-disabled" in (item.get_attribute("class") or ""):
                seen = "Run All Cells disabled; " + self.page_state()
                self.page.keyboard.press("Escape")
                continue
            item.click()
            try:
                self.page.wait_for_function(_A_CELL_STARTED, timeout=30000 * SLOWDOWN)
                return
            except PlaywrightTimeoutError:
                if self.page.evaluate(_A_CELL_STARTED):  # started just now: do not queue it twice
                    return
                # Run All while the page is still connecting its kernel clears each cell and
                # queues nothing (JupyterLab 4); once the kernel is up, it runs.
                seen = "no cell started {:.0f} s after the click; {}".format(30 * SLOWDOWN, self.page_state())
                self.wait_kernel_idle(120)
        raise AssertionError("{}: Run > Run All Cells, picked {} times, ran nothing. Last: {}".format(
            self.path, tries, seen))

    def page_state(self) -> str:
        """What a person would look at when a click did nothing: focus, dialogs, menus, kernel."""
        return json.dumps(self.page.evaluate("""() => {
            const active = document.activeElement;
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
            const tab = document.querySelector('.lm-TabBar-tab.jp-mod-current');
            return {
                focus: active ? (active.tagName + '.' + String(active.className).slice(0, 80)) : null,
                notebook_has_focus: !!(panel && active && panel.contains(active)),
                dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.slice(0, 200)),
                menus_open: document.querySelectorAll('.lm-Menu').length,
                kernel: indicator ? indicator.dataset.status : null,
                tab: tab ? tab.innerText : null,
                status_bar: [...document.querySelectorAll('.jp-StatusBar-TextItem')].map(e => e.innerText),
                prompts: panel ? [...panel.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                    .slice(0, 4).map(p => p.innerText) : [],
            };
        }"""))

    def run_all_finished(self, timeout: float, start: Optional[float] = None) -> float:
        """Wait until no cell is queued or running; seconds since ``start`` (default: now)."""
        start = time.monotonic() if start is None else start
        deadline = start + timeout * SLOWDOWN
        quiet_since: Optional[float] = None
        while time.monotonic() < deadline:
            prompts = self.panel().locator(".jp-CodeCell .jp-InputPrompt").all_inner_texts()
            busy = any("*" in p for p in prompts)
            ran = any(any(ch.isdigit() for ch in p) for p in prompts)
            now = time.monotonic()
            if not ran or busy:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= 1.0:  # Run All marks every cell [*] at once: a second with none is the end
                return quiet_since - start
            time.sleep(0.25)
        raise AssertionError("{}: still running after {:.0f} s".format(self.path, timeout * SLOWDOWN))

    def run_cell(self, index: int, timeout: float = 300) -> None:
        """Select cell ``index`` (a click in its margin) and press Shift+Enter; wait until it ran."""
        self.cell(index).click(position={"x": 3, "y": 3})
        self.page.keyboard.press("Escape")
        before = self.cell(index).locator(".jp-InputPrompt").inner_text()
        self.page.keyboard.press("Shift+Enter")
        # The prompt goes [*] and then takes a new number.
        self.page.wait_for_function(
            """([i, old]) => {
                const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell');
                const text = cells[i].querySelector('.jp-InputPrompt').innerText;
                return /[0-9]/.test(text) && !text.includes('*') && text !== old;
            }""", arg=[index, before], timeout=timeout * 1000 * SLOWDOWN)

    def interrupt(self) -> None:
        """*Kernel > Interrupt Kernel* from the menu bar, as a student stops a long run."""
        self.page.locator(".lm-MenuBar-item", has_text="Kernel").first.click()
        self.page.locator(".lm-Menu-item[data-command='kernelmenu:interrupt']").click()

    def output_text(self, index: int) -> str:
        return "\n".join(self.cell(index).locator(".jp-OutputArea-output").all_inner_texts())

    def save(self, timeout: float = 60) -> None:
        self.activate()
        self.page.keyboard.press("Control+s")
        # The tab loses its dirty mark when the file is written.
        self.page.wait_for_function(
            "() => !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty')",
            timeout=timeout * 1000 * SLOWDOWN)

    # What the browser shows --------------------------------------------------------------
    def progress_bars(self) -> List[Dict[str, str]]:
        return self.panel().locator(".jupyter-widgets .progress .progress-bar").evaluate_all(
            "els => els.map(e => ({cls: e.className, width: e.style.width}))")

    def images(self) -> List[Dict[str, float]]:
        return self.panel().locator(".jp-OutputArea-output img").evaluate_all(
            "els => els.map(e => ({w: e.naturalWidth, h: e.naturalHeight, shown: e.getBoundingClientRect().width}))")

    def html_tables(self) -> int:
        return self.panel().locator(".jp-OutputArea-output.jp-RenderedHTMLCommon table").count()

    def error_texts(self) -> List[str]:
        return self.panel().locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                                    ).all_inner_texts()
