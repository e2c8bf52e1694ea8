"""deploy/nginx/supportcrew.conf run as it is, on this machine: Debian's nginx in front of
service workers already listening on loopback ports. The site file is used unchanged but for
its ``listen`` line and its upstream's servers, in a main config of its own (temporary
prefix, no root needed), so the recipe the tests and the bench exercise is the one a team
deploys.

Usage::

    with nginx_in_front([8001], listen_port=8080) as base:     # "http://127.0.0.1:8080"
        httpx.get(base + "/healthz")

    python deploy/nginx_local.py --upstream 8001 --listen 8080   # until Ctrl-C or SIGTERM

Stopped by Ctrl-C or SIGTERM (a service manager's stop, ``kill``), it stops its nginx too:
the port is free again.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

SITE = Path(__file__).resolve().parent / "nginx" / "supportcrew.conf"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
_UPSTREAM = re.compile(r"(upstream supportcrew \{\n)(?:\s*server [^\n]*\n)+")
_LISTEN = re.compile(r"^(\s*)listen 80;", re.MULTILINE)


class NginxError(RuntimeError):
    """nginx is missing, refused the config, or did not start listening."""


def site_for(upstream_ports: Sequence[int], listen_port: int) -> str:
    """The site file with its upstream servers on ``upstream_ports`` and its listen line on
    127.0.0.1:``listen_port``; everything else as shipped."""
    text = SITE.read_text(encoding="utf-8")
    servers = "".join(f"    server 127.0.0.1:{port};\n" for port in upstream_ports)
    text, upstreams = _UPSTREAM.subn(lambda m: m.group(1) + servers, text)
    text, listens = _LISTEN.subn(rf"\g<1>listen 127.0.0.1:{listen_port};", text)
    if upstreams != 1 or listens != 1:
        raise NginxError(f"{SITE}: expected one upstream block and one 'listen 80;' line")
    return text


def main_config(prefix: Path, site: Path) -> str:
    temp = prefix / "temp"
    return (
        "worker_processes 1;\n"
        f"pid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'} warn;\n"
        "events { worker_connections 2048; }\n"
        "http {\n"
        "    access_log off;\n"
        f"    client_body_temp_path {temp / 'body'};\n"
        f"    proxy_temp_path {temp / 'proxy'};\n"
        f"    fastcgi_temp_path {temp / 'fastcgi'};\n"
        f"    uwsgi_temp_path {temp / 'uwsgi'};\n"
        f"    scgi_temp_path {temp / 'scgi'};\n"
        f"    include {site};\n"
        "}\n"
    )


def _listening(port: int) -> bool:
    with contextlib.closing(socket.socket()) as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def nginx_in_front(upstream_ports: Sequence[int], listen_port: int) -> Iterator[str]:
    """nginx with the shipped site in front of ``upstream_ports``; yields its base URL."""
    if not Path(NGINX).exists():
        raise NginxError("nginx is not installed (Debian: apt-get install nginx)")
    with tempfile.TemporaryDirectory(prefix="supportcrew-nginx-") as folder:
        prefix = Path(folder)
        # started as root, nginx's workers run as nobody: they must reach the prefix and
        # write their temporary files (a large body or response) under it
        prefix.chmod(0o755)
        (prefix / "temp").mkdir(mode=0o777)
        (prefix / "temp").chmod(0o777)
        site = prefix / "supportcrew.conf"
        site.write_text(site_for(upstream_ports, listen_port), encoding="utf-8")
        config = prefix / "nginx.conf"
        config.write_text(main_config(prefix, site), encoding="utf-8")
        tested = subprocess.run(
            [NGINX, "-t", "-p", str(prefix), "-c", str(config)], capture_output=True, text=True
        )
        if tested.returncode != 0:
            raise NginxError(f"nginx refused the config: {tested.stderr.strip()}")
        server = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(config), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.time() + 10
            while not _listening(listen_port):
                if server.poll() is not None or time.time() > deadline:
                    said = server.stderr.read().decode() if server.stderr else ""
                    raise NginxError(f"nginx did not start: {said[-500:]}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{listen_port}"
        finally:
            server.terminate()
            server.wait(timeout=10)


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--upstream", type=int, action="append", required=True, help="a worker's port")
    parser.add_argument("--listen", type=int, default=8080)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _interrupt)  # stopped like Ctrl-C: nginx goes with us
    with nginx_in_front(args.upstream, args.listen) as base:
        print(f"nginx on {base} in front of {args.upstream}; Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
