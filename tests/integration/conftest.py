"""Fixtures for the integration tests: a real Dovecot (once per session) and,
per test, fresh users plus an aiosmtpd SMTP server relaying into Dovecot.

A server that cannot start skips the test, or fails it when the environment
variable CI is set (anything but empty, 0, false or no): in CI these tests must
run. Only tests under tests/integration see these fixtures, so
``pytest tests/unit`` never starts Dovecot.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:  # pytest's default import mode has put it there already
    sys.path.insert(0, str(HERE))

import required  # noqa: E402 - after sys.path
from mailstack import PACKAGES, Dovecot, MailStack, ServerUnavailable  # noqa: E402 - after sys.path

TOP_CONFTEST = HERE.parent / "conftest.py"


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """Give ``import conftest`` back to tests/conftest.py.

    Without __init__.py files pytest imports every conftest.py as the module
    ``conftest`` and the last one loaded (this one) stays in sys.modules, so
    tests doing ``from conftest import make_mail`` would get this file. Right
    after this conftest is registered, put the top one back."""
    if getattr(plugin, "__file__", None) != __file__:
        return
    for other in manager.get_plugins():
        if getattr(other, "__file__", None) and Path(other.__file__) == TOP_CONFTEST:
            sys.modules["conftest"] = other  # type: ignore[assignment]
            return


def unavailable(reason: str) -> None:
    """Skip, or fail in CI, because a mail server cannot run."""
    required.unavailable(reason, PACKAGES)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: runs against real mail servers on loopback")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def _dovecot_or_error() -> Iterator[Dovecot | str]:
    # Start failures are remembered, so every test reports them (skip or fail)
    # without retrying the start once per test.
    try:
        server = Dovecot()
    except (ServerUnavailable, OSError) as exc:
        yield f"Dovecot cannot run: {exc}"
        return
    try:
        MailStack.provision(server)  # before start: the first stacks' users cost no wait
        server.start()
    except (ServerUnavailable, OSError) as exc:
        server.close()
        yield f"Dovecot cannot start: {exc}"
        return
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def dovecot(_dovecot_or_error: Dovecot | str) -> Dovecot:
    """The session's Dovecot (IMAP and LMTP on 127.0.0.1, free high ports)."""
    if isinstance(_dovecot_or_error, str):
        unavailable(_dovecot_or_error)
    return _dovecot_or_error  # type: ignore[return-value]


@pytest.fixture
def mailstack(dovecot: Dovecot) -> Iterator[MailStack]:
    """Fresh users (``referee``, three ``players``) and an own SMTP server."""
    if not dovecot.running:  # an earlier test stopped it and failed before start()
        try:
            dovecot.start()
        except ServerUnavailable as exc:
            unavailable(f"Dovecot cannot start again: {exc}")
    stack = MailStack(dovecot)
    try:
        stack.start()
    except ServerUnavailable as exc:
        unavailable(str(exc))
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def dovecot_tls() -> Iterator[Dovecot]:
    """A second Dovecot with TLS: STARTTLS on imap_port, implicit TLS on
    imaps_port, a self-signed certificate in ca_file.  One user,
    referee@example.org / secret."""
    try:
        server = Dovecot(tls=True)
        server.add_user("referee@example.org", "secret", wait=False)
        server.start()
    except (ServerUnavailable, OSError, subprocess.CalledProcessError) as exc:
        unavailable(f"Dovecot with TLS cannot start: {exc}")
    try:
        yield server
    finally:
        server.close()
