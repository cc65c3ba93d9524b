"""A Redis server of a test's own, on a free port: to stop it, or make it refuse writes, without touching
the Redis other tests (and other people) share."""

import shutil
import socket
import subprocess
import time

import pytest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PrivateRedis:
    def __init__(self, directory):
        self.port = _free_port()
        self.directory = directory
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2)

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            command, cwd=self.directory, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.time() + 15
        while time.time() < deadline:
            try:
                if self.client().ping():
                    return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("the private Redis did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def refuse_writes(self, refuse: bool = True) -> None:
        """As a Redis at its maxmemory with the noeviction policy: reads and deletes work, writes fail."""
        self.client().config_set("maxmemory-policy", "noeviction")
        self.client().config_set("maxmemory", "1" if refuse else "0")


def start_private_redis(directory) -> PrivateRedis:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = PrivateRedis(directory)
    server.start()
    return server
